"""The quick sweep stopped by the fixed rule against stopped by convergence: how long each takes, and how
many of its passes end noisy (the median's 95% interval wider than +-1%) or spread out (IQR over 10% of
the median, the flag of earlier versions).

    .venv/bin/python benchmarks/convergence_bench.py [--impls all] [--devices cpu] [--op NAME ...]

The two sweeps run one after the other on the same machine, the fixed one first; compare them as a pair.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from benchctl.results import storage

# "fixed" is the rule and the times of earlier versions: stop at 0.2 s of samples, at most 5 s.
MODES = {"fixed (earlier default)": ["--ci-target", "0", "--remeasure", "0", "--min-time", "0.2", "--max-time", "5"],
         "converged (defaults)": []}


def sweep(impls: str, devices: str, ops: list[str], extra: list[str], out: Path) -> tuple[float, pd.DataFrame]:
    command = [sys.executable, "-m", "benchctl", "run", impls, devices, "--quick", "--out", str(out), *extra]
    for op in ops:
        command += ["--op", op]
    began = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - began, storage.load(root=out)


def summary(name: str, seconds: float, rows: pd.DataFrame) -> dict:
    ok = rows[rows["status"] == "ok"]
    half = ((ok["ci_hi_s"] - ok["ci_lo_s"]) / 2 / ok["median_s"]).fillna(float("inf"))
    return {"mode": name, "wall s": round(seconds), "passes ok": len(ok),
            "noisy (CI > +-1%)": int((half > 0.01).sum()),
            "spread (IQR > 10%)": int((ok["iqr_s"] > 0.1 * ok["median_s"]).sum()),
            "median samples": int(ok["n"].median()),
            "stopped at max_time": int((ok["stop"] == "max_time").sum()) if "stop" in ok else 0,
            "remeasured": int((ok["remeasured"].fillna(0) > 0).sum()) if "remeasured" in ok else 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impls", default="all")
    parser.add_argument("--devices", default="cpu")
    parser.add_argument("--op", action="append", default=[])
    parser.add_argument("--only", choices=list(MODES), help="run one of the two modes")
    parser.add_argument("--flags", default="", help="more run flags for every mode, e.g. '--max-time 2'")
    args = parser.parse_args()
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, extra) in enumerate(MODES.items()):
            if args.only and name != args.only:
                continue
            extra = [*extra, *args.flags.split()]
            seconds, rows = sweep(args.impls, args.devices, args.op, extra, Path(tmp) / str(i))
            table.append(summary(name, seconds, rows))
    print(markdown(table))


def markdown(table: list[dict]) -> str:
    lines = ["| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
    return "\n".join(lines + ["| " + " | ".join(str(v) for v in row.values()) + " |" for row in table])


if __name__ == "__main__":
    main()

"""The quick sweep stopped by the fixed rule against stopped by convergence: how long each takes, and how
many of its passes end noisy (the median's 95% interval wider than +-1%) or spread out (IQR over 10% of
the median, the flag of earlier versions).

    .venv/bin/python benchmarks/convergence_bench.py [--impls all] [--devices cpu] [--op NAME ...]
    git worktree add /tmp/before 19c04d9    # the last version before sampling stopped by convergence
    .venv/bin/python benchmarks/convergence_bench.py --against /tmp/before --only "converged (defaults)"

The sweeps run one after the other on the same machine; compare them as a set. `--against DIR` first runs
the quick sweep of an earlier checkout (its own code and defaults, the same extensions cache), so "no
longer than before" is judged against the version it replaces, not against its rule in today's code.
Noisy is judged from the samples, the same way for every sweep.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import os

import pandas as pd

from benchctl.measure.stats import median_ci
from benchctl.results import storage

# "fixed" is the rule and the times of earlier versions: stop at 0.2 s of samples, at most 5 s.
MODES = {"fixed (earlier default)": ["--ci-target", "0", "--remeasure", "0", "--min-time", "0.2", "--max-time", "5"],
         "converged (defaults)": []}


def sweep(impls: str, devices: str, ops: list[str], extra: list[str], out: Path,
          code: str | None = None) -> tuple[float, pd.DataFrame]:
    """One quick sweep's wall time and rows; `code`: the checkout whose benchctl runs it."""
    command = [sys.executable, "-m", "benchctl", "run", impls, devices, "--quick", "--out", str(out), *extra]
    for op in ops:
        command += ["--op", op]
    env = {**os.environ, "PYTHONPATH": code} if code else None
    began = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env, cwd=code)
    return time.monotonic() - began, storage.load(root=out)


def summary(name: str, seconds: float, rows: pd.DataFrame) -> dict:
    ok = rows[rows["status"] == "ok"]
    intervals = ok["samples_s"].map(lambda s: median_ci(list(s)))  # older versions recorded no interval
    half = ((intervals.str[1] - intervals.str[0]) / 2 / ok["median_s"]).fillna(float("inf"))
    return {"mode": name, "wall s": round(seconds), "passes ok": len(ok),
            "noisy (CI > +-1%)": int((half > 0.01).sum()),
            "spread (IQR > 10%)": int((ok["iqr_s"] > 0.1 * ok["median_s"]).sum()),
            "median samples": int(ok["n"].median()),
            "stopped at max_time": int((ok["stop"] == "max_time").sum()) if "stop" in ok else "-",
            "remeasured": int((ok["remeasured"].fillna(0) > 0).sum()) if "remeasured" in ok else 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impls", default="all")
    parser.add_argument("--devices", default="cpu")
    parser.add_argument("--op", action="append", default=[])
    parser.add_argument("--only", choices=list(MODES), help="run one of the two modes")
    parser.add_argument("--flags", default="", help="more run flags for every mode, e.g. '--max-time 2'")
    parser.add_argument("--against", help="a checkout of an earlier version: its quick sweep runs first")
    args = parser.parse_args()
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.against:
            seconds, rows = sweep(args.impls, args.devices, args.op, [], Path(tmp) / "before", args.against)
            table.append(summary(f"earlier version ({Path(args.against).name})", seconds, rows))
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

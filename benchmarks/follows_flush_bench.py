"""Does a cell whose time follows the machine's memory probe (analysis/follows.py) hold still on cold caches?

    .venv/bin/python benchmarks/follows_flush_bench.py [--runs 10] [--out /tmp/follows-flush]

Runs `benchctl run py,cpp cpu --op grid_sample --param image_size=1024 --quick` RUNS times as it is and RUNS times
with --flush-caches, the two alternating (about 30 s a pair), then prints for each implementation, pass and way:
the runs' fastest and slowest median, their spread, the memory probe's range, and the rank correlation of the
time with the probe (Spearman). Nothing else may run beside it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pandas as pd
from scipy.stats import spearmanr

from benchctl.results import storage

WAYS = {"warm": [], "cold": ["--flush-caches"]}
RUN = ["run", "py,cpp", "cpu", "--op", "grid_sample", "--param", "image_size=1024", "--passes", "forward,backward",
       "--pair-with", "none", "--quick"]


def sweep(out: Path, runs: int) -> None:
    for i in range(runs):
        for way, extra in WAYS.items():
            subprocess.run([sys.executable, "-m", "benchctl", *RUN, *extra, "--out", str(out / way)], check=True,
                           capture_output=True)
        print(f"pair {i + 1} of {runs} done", file=sys.stderr)


def table(out: Path) -> pd.DataFrame:
    found = []
    for way in WAYS:
        rows = storage.load([out / way])
        for (impl, pass_name), g in rows[rows["status"] == "ok"].groupby(["impl", "pass"]):
            t, m = g["median_s"] * 1e3, g["mem_gbps"]
            r = spearmanr(t, m)
            found.append({"impl": impl, "pass": pass_name, "caches": way, "runs": len(g),
                          "fastest ms": round(t.min(), 4), "slowest ms": round(t.max(), 4),
                          "spread": round(t.max() / t.min(), 2), "probe GB/s": f"{m.min():.0f}-{m.max():.0f}",
                          "rho": round(float(r.statistic), 2), "p": round(float(r.pvalue), 3)})
    return pd.DataFrame(found).sort_values(["impl", "pass", "caches"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("/tmp/follows-flush"))
    parser.add_argument("--read-only", action="store_true", help="print the table of runs already under --out")
    args = parser.parse_args()
    if not args.read_only:
        sweep(args.out, args.runs)
    print(table(args.out).to_string(index=False))


if __name__ == "__main__":
    main()

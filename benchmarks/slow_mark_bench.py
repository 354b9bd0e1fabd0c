"""Does a pass marked `slow` read slower? Across runs of the same sweep on one machine, each CPU pass's median
against the median of its cell's medians over those runs, by the canary ratio the pass was timed at.

    .venv/bin/python benchmarks/slow_mark_bench.py results [--threads 2] [--min-runs 5]

The argument is a results folder (or run folders). Cells measured ok in fewer than --min-runs runs are left
out. Prints, for passes marked slow (canary over 1 + SLOW_PHASE) and not: how many, their median time against
their cell's median, and the share over 1.15x and under 0.87x of it; the same by band of the canary ratio; the
median within-cell rank correlation of canary ratio and time; and the cells whose time moved most with the
canary (the median of their slow runs over the median of their runs at speed). Run it on folders measured with
nothing else on the machine: a neighbour slows both the canary and the pass.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from benchctl.results import storage
from benchctl.results.schema import SLOW_PHASE

KEY = ["op", "target", "impl", "pass", "params", "dtype"]
BANDS = (0.0, 1.05, 1.15, 1.3, 1.5, np.inf)


def passes(folders: list[Path], threads: int, min_runs: int) -> pd.DataFrame:
    rows = storage.load(folders)
    rows = rows[(rows["device"] == "cpu") & (rows["status"] == "ok") & (rows["threads"] == threads)]
    rows = rows.dropna(subset=["canary_ratio", "median_s"]).assign(params=lambda d: d["params"].astype(str))
    by_cell = rows.groupby(KEY)["median_s"]
    rows = rows.assign(runs=by_cell.transform("count"), rel=rows["median_s"] / by_cell.transform("median"))
    return rows[rows["runs"] >= min_runs]


def line(name: str, part: pd.DataFrame) -> str:
    return (f"{name:<22} {len(part):5d} passes, median {part['rel'].median():.3f}x their cell's median, "
            f"{(part['rel'] > 1.15).mean():.0%} over 1.15x, {(part['rel'] < 0.87).mean():.0%} under 0.87x")


def most_moved(rows: pd.DataFrame, count: int = 6) -> list[str]:
    out = []
    for key, cell in rows.groupby(KEY):
        slow = cell["canary_ratio"] > 1 + SLOW_PHASE
        if slow.sum() >= 2 and (~slow).sum() >= 2:
            out.append((cell.loc[slow, "median_s"].median() / cell.loc[~slow, "median_s"].median(), key))
    out.sort(reverse=True)
    return [f"  {ratio:.2f}x  {' '.join(map(str, key))}" for ratio, key in out[:count]] + \
           [f"  {ratio:.2f}x  {' '.join(map(str, key))}" for ratio, key in out[-count:]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-runs", type=int, default=5)
    args = parser.parse_args()
    rows = passes(args.folders, args.threads, args.min_runs)
    if rows.empty:
        raise SystemExit("no CPU cell measured ok in enough runs")
    print(f"{rows['run_id'].nunique()} runs, {rows.groupby(KEY).ngroups} cells, {len(rows)} passes")
    slow = rows["canary_ratio"] > 1 + SLOW_PHASE
    print(line("marked slow", rows[slow]))
    print(line("not marked", rows[~slow]))
    for low, high in zip(BANDS, BANDS[1:]):
        band = rows[(rows["canary_ratio"] >= low) & (rows["canary_ratio"] < high)]
        if len(band):
            print(line(f"canary {low:.2f}-{high:.2f}x", band))
    rho = [spearmanr(c["canary_ratio"], c["median_s"]).statistic for _, c in rows.groupby(KEY)
           if c["canary_ratio"].nunique() > 3]
    print(f"within-cell rank correlation of canary and time: median {np.nanmedian(rho):.2f} over {len(rho)} cells")
    print("cells by their slow runs' median over their runs at speed (most, then least):")
    print("\n".join(most_moved(rows)))


if __name__ == "__main__":
    main()

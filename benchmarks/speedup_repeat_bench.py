"""The same sweep's speedups, run after run: how far each cell's speedup over its operator's reference
moves from one run to the next, for runs of one kind (say, plain `run all cpu --quick`) against runs of
another (the same with `--pair-with reference`).

    .venv/bin/python benchmarks/speedup_repeat_bench.py plain=/tmp/a1,/tmp/a2 paired=/tmp/p1,/tmp/p2

Each argument is LABEL=FOLDER,FOLDER,... (run folders, or folders holding one run each). For every two
runs of a label it takes the cells both measured ok, their speedups as the report gives them
(analysis.speedup.speedup: the paired ratio where paired, else the rounds' or the medians' ratio), and
counts the cells whose speedup moved by more than 10% and 25%, and those that crossed from faster to
slower (one over 1.05x, the other under 0.95x), and, of the cells both runs gave a range (the paired
interval, or the rounds' lowest and highest), those whose two ranges do not overlap, and how often one run's
speedup fell outside the other's range (each way: a 95% interval that held would leave about 5% outside).
Prints one line per label, and the wall time of each run.
Run it on folders measured with nothing else on the machine.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from benchctl.analysis.speedup import speedup, speedup_range
from benchctl.ops import registry
from benchctl.results import storage

KEY = ["op", "target", "device", "dtype", "params", "pass"]


def speedups(folder: Path) -> pd.DataFrame:
    """Each implementation's speedup over its operator's reference, by cell, with the range the run gave it
    (lo, hi: the paired interval, or the rounds' lowest and highest; NaN where it gave none)."""
    rows = storage.load([folder])
    rows = rows[rows["status"] == "ok"]
    refs = {name: op.reference for name, op in registry.discover().items()}
    found = {}
    for point, group in rows.groupby(KEY):
        by_impl = {r["impl"]: r for r in group.to_dict("records")}
        base = by_impl.get(refs.get(point[0], "py"))
        for impl, row in by_impl.items():
            if base is not None and impl != base["impl"]:
                lo, hi = speedup_range(base, row) or (np.nan, np.nan)
                found[(*point, impl)] = (speedup(base, row), lo, hi)
    return pd.DataFrame.from_dict(found, orient="index", columns=["speedup", "lo", "hi"])


def moved(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, float]:
    both = a.index.intersection(b.index)
    a, b = a.loc[both], b.loc[both]
    x, y = a["speedup"].to_numpy(), b["speedup"].to_numpy()
    ranged = a["lo"].notna().to_numpy() & b["lo"].notna().to_numpy()
    apart = ranged & ((a["hi"].to_numpy() < b["lo"].to_numpy()) | (b["hi"].to_numpy() < a["lo"].to_numpy()))
    change = np.abs(np.log(y / x))
    crossed = ((x > 1.05) & (y < 0.95)) | ((x < 0.95) & (y > 1.05))
    outside = [_outside(a.loc[both], y), _outside(b.loc[both], x)]  # b's speedup outside a's range, and back
    return {"outside": sum(int(o.sum()) for o in outside),
            "ranged_each": int(a["lo"].notna().sum() + b["lo"].notna().sum()),"cells": len(both), "over_10": int((change > np.log(1.10)).sum()),
            "over_25": int((change > np.log(1.25)).sum()), "crossed": int(crossed.sum()),
            "ranged": int(ranged.sum()), "apart": int(apart.sum()),
            "median_move": float(np.expm1(np.median(change))) if len(both) else float("nan")}


def _outside(ranged: pd.DataFrame, speedup: np.ndarray) -> np.ndarray:
    """Where `speedup` (the other run's) lies outside `ranged`'s range (False where it gave none)."""
    lo, hi = ranged["lo"].to_numpy(), ranged["hi"].to_numpy()
    return ~np.isnan(lo) & ((speedup < lo) | (speedup > hi))


def wall(folder: Path) -> float:
    rows = storage.load([folder])
    stamps = pd.to_datetime(rows["timestamp"])
    return float((stamps.max() - stamps.min()).total_seconds())


def main(args: list[str]) -> None:
    for arg in args:
        label, _, folders = arg.partition("=")
        runs = [Path(f) for f in folders.split(",")]
        found = [speedups(f) for f in runs]
        print(f"{label}: runs took " + ", ".join(f"{wall(f):.0f} s" for f in runs))
        for (i, a), (j, b) in itertools.combinations(enumerate(found), 2):
            m = moved(a, b)
            print(f"  run {i + 1} vs {j + 1}: {m['cells']} cells, moved >10% {m['over_10']}, >25% {m['over_25']},"
                  f" crossed 1x {m['crossed']}, median move {m['median_move']:.1%};"
                  f" ranges that do not overlap {m['apart']} of {m['ranged']};"
                  f" a speedup outside the other run's range {m['outside']} of {m['ranged_each']}")


if __name__ == "__main__":
    main(sys.argv[1:])

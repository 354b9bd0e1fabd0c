"""Each run of a results folder held against the runs before it as `run` holds it (analysis/at_speed.py): of its
ok passes marked `slow`, and of those not marked, how many have a time at speed in the earlier runs, and how many
read over SLOW_PHASE above the slowest of those runs (up) or below the fastest (down), as the tables' `slow↑` and
`slow↓` do, and, for comparison, over SLOW_PHASE off their median either way. The unmarked passes are the control: how often the spread
between runs alone moves a pass that far.

    .venv/bin/python benchmarks/at_speed_bench.py results

Prints a Markdown table, a row per run, and the totals.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from benchctl.analysis.at_speed import at_speed_times
from benchctl.analysis.repeat import runs_with_earlier
from benchctl.analysis.summary import at_speed_arrow
from benchctl.results.schema import SLOW_PHASE, slow_machine
from benchctl.vocab import Status


def counts(rows: pd.DataFrame, earlier: pd.DataFrame) -> dict[bool, tuple[int, int, int, int]]:
    """For marked (True) and unmarked (False) ok passes: (passes, with a time at speed, up, down, over SLOW_PHASE
    off the median either way)."""
    ok = rows[rows["status"] == Status.OK]
    known = ok.assign(**at_speed_times(ok, earlier)).dropna(subset=["at_speed_s"])
    arrows, ratio = known.apply(at_speed_arrow, axis=1), known["median_s"] / known["at_speed_s"]
    off = (ratio > 1 + SLOW_PHASE) | (ratio < 1 / (1 + SLOW_PHASE))
    marked = ok.apply(slow_machine, axis=1)
    out = {}
    for slow in (True, False):
        mine = known.index.isin(ok.index[marked == slow])
        out[slow] = (int((marked == slow).sum()), int(mine.sum()), int((arrows[mine] == "↑").sum()),
                     int((arrows[mine] == "↓").sum()), int(off[mine].sum()))
    return out


def cell(n: tuple[int, ...]) -> str:
    return f"{n[1]} of {n[0]}: {n[2]} up, {n[3]} down ({n[4]} off the median)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    total = {True: [0] * 5, False: [0] * 5}
    print("| run | marked slow: with a time at speed, up, down (off the median) | not marked |\n|---|---|---|")
    for run, rows, earlier in runs_with_earlier(args.folder):
        found = counts(rows, earlier)
        if found[True][1] + found[False][1]:
            print(f"| {run.name} | {cell(found[True])} | {cell(found[False])} |")
        for slow in total:
            total[slow] = [a + b for a, b in zip(total[slow], found[slow])]
    for slow, (_, known, up, down, off) in total.items():
        print(f"{'marked' if slow else 'not marked'}: {known} with a time at speed, {up / known:.1%} up, "
              f"{down / known:.1%} down, {off / known:.1%} off the median" if known else
              f"{'marked' if slow else 'not marked'}: none")


if __name__ == "__main__":
    main()

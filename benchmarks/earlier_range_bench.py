"""Do the earlier runs' range and this run's interval hold the next run? Over a folder's runs of the same code.

    .venv/bin/python benchmarks/earlier_range_bench.py [--root results]

Reads the runs already in ROOT (it times nothing, so it may run beside anything) and holds every run against up
to ten before it, as `run` and the report do. For each pass time left alone: whether it lies within the fastest
and slowest of the earlier runs of the same measurement (at_speed.earlier_times, any state: the report's "earlier
runs ms"). For each paired speedup held against earlier runs in its state (repeat.repeats): whether it lies within
their range, and whether their median lies within its interval (`↻` where not); and within the range of those in
either state (the report's "earlier speedups"). If the runs were alike (drawn from
one distribution, in any order), the next of n would fall within the range of the n before with probability
(n-1)/(n+1); printed beside what was seen, by how many earlier runs there were.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import pandas as pd

from benchctl.analysis.at_speed import EARLIER
from benchctl.analysis.earlier_range import MIN_EARLIER, chance_outside, held
from benchctl.analysis.repeat import earlier_rows, earlier_speedups, either_state, repeats
from benchctl.analysis.speedup import present_value
from benchctl.results import storage
from benchctl.vocab import Status

BANDS = ((2, 3), (4, 6), (7, 10))  # earlier runs, grouped


def expected(n: int) -> float:
    """The chance that the next of n + 1 alike runs lies within the range of the n before it."""
    return 1 - chance_outside(n)


def times_inside(rows: pd.DataFrame, earlier: pd.DataFrame) -> list[tuple[int, bool]]:
    """(earlier runs, inside their range) for each pass time left alone with two earlier runs or more."""
    return [(int(r[EARLIER["count"]]), r[EARLIER["min"]] <= r["median_s"] <= r[EARLIER["max"]])
            for r in held(rows, earlier).to_dict("records")]


def speedups_inside(rows: pd.DataFrame, earlier: pd.DataFrame) -> list[tuple[int, bool, bool]]:
    """(earlier runs in the state, inside their range, their median inside this run's interval) for each paired
    speedup held against two earlier runs or more."""
    out = []
    for found in repeats(rows, earlier):
        before = found.earlier
        if len(before) >= MIN_EARLIER:
            here = float(found.row["paired_speedup"])
            out.append((len(before), min(before) <= here <= max(before), found.moved <= 1))
    return out


def speedups_either_state(rows: pd.DataFrame, earlier: pd.DataFrame) -> list[tuple[int, bool]]:
    """(earlier runs in either state, inside their range) for each ok paired speedup with two earlier runs or more:
    the report's "earlier speedups"."""
    out = []
    for row in rows.assign(**earlier_speedups(rows, earlier)).to_dict("records"):
        before = either_state(row)
        if row["status"] == Status.OK and present_value(row.get("paired_speedup")) and len(before) >= MIN_EARLIER:
            out.append((len(before), min(before) <= float(row["paired_speedup"]) <= max(before)))
    return out


def band(n: int) -> str:
    return next(f"{lo}-{hi}" for lo, hi in BANDS if lo <= n <= hi)


def table(name: str, seen: list[tuple], interval: bool) -> None:
    by_band: dict[str, list[tuple]] = defaultdict(list)
    for item in seen:
        by_band[band(item[0])].append(item)
    for key in (f"{lo}-{hi}" for lo, hi in BANDS):
        items = by_band.get(key, [])
        if not items:
            continue
        inside = sum(i[1] for i in items) / len(items)
        alike = sum(expected(i[0]) for i in items) / len(items)
        held = f" | {sum(i[2] for i in items) / len(items):.0%}" if interval else " | "
        print(f"| {name} | {key} | {len(items)} | {inside:.0%} | {alike:.0%}{held} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("results"))
    args = parser.parse_args()
    times: list[tuple] = []
    speedups: list[tuple] = []
    either: list[tuple] = []
    for run in storage.run_dirs(args.root):
        rows, earlier = storage.load_run(run), earlier_rows(run)
        if rows.empty or earlier.empty:
            continue
        times += times_inside(rows, earlier)
        speedups += speedups_inside(rows, earlier)
        either += speedups_either_state(rows, earlier)
    print("| what | earlier runs | held | within their range | if the runs were alike | their median within "
          "this run's interval |\n|---|---|---|---|---|---|")
    table("pass time (any state)", times, False)
    table("paired speedup (its state)", speedups, True)
    table("paired speedup (either state)", either, False)


if __name__ == "__main__":
    main()

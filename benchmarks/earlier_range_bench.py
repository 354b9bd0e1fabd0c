"""Do the earlier runs' range and this run's interval hold the next run? Over a folder's runs of the same code.

    .venv/bin/python benchmarks/earlier_range_bench.py [--root results] [--plant 0.85]

Reads the runs already in ROOT (it times nothing, so it may run beside anything) and holds every run against up
to ten before it, as `run` and the report do. For each pass time left alone: whether it lies within the fastest
and slowest of the earlier runs of the same measurement (at_speed.earlier_times, any state: the report's "earlier
runs ms"). For each paired speedup held against earlier runs in its state (repeat.repeats): whether it lies within
their range, and whether their median lies within its interval (`↻` where not); and within the range of those in
either state (the report's "earlier speedups"). If the runs were alike (drawn from
one distribution, in any order), the next of n would fall within the range of the n before with probability
(n-1)/(n+1); printed beside what was seen, by how many earlier runs there were.

Then each run as a whole (earlier_range.standing, the line under `run`'s tables): its passes outside against the
count runs alike would leave, how far off in the standard deviations of independent passes (z), every run's share
outside the others', and whether the run is said to be unlike its earlier runs by the tail alone and by the tail
with the shares; and the same of every run with all its times scaled by --plant, which both should find.
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

import pandas as pd

from benchctl.analysis.at_speed import EARLIER
from benchctl.analysis.earlier_range import MIN_EARLIER, Standing, chance_outside, held, standing
from benchctl.analysis.repeat import earlier_speedups, either_state, repeats, runs_with_earlier
from benchctl.analysis.speedup import present_value
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


def z(s: Standing) -> float:
    """How far the run's count outside lies from what runs alike would leave, in standard deviations of the count
    were its passes independent (the Poisson binomial's: the sum of p(1-p))."""
    return (s.outside - s.expected) / math.sqrt(sum(p * (1 - p) for p in s.chances))


def runs_table(standings: list[Standing], planted: list[Standing], plant: float) -> None:
    """Every run held against its earlier runs as a whole (earlier_range.standing): whether the tail alone, and
    the tail with every run's share outside the others', say it is unlike them; and the same of each run with
    every time scaled by `plant` (a run in a state its earlier runs did not meet)."""
    print("\n| run | outside / held | runs alike | z | tail | this run's share | the earlier runs' shares | unlike "
          "by the tail alone | unlike by the tail and the shares |\n|---|---|---|---|---|---|---|---|---|")
    for s in standings:
        mine, others = (f"{s.shares.iloc[0]:.0%}", f"{s.shares.iloc[1:].min():.0%}-{s.shares.iloc[1:].max():.0%} "
                        f"({len(s.shares) - 1})") if len(s.shares) else ("", "")
        print(f"| {s.found['run_id'].iloc[0]} | {s.outside} / {len(s.found)} | {s.expected:.1f} | {z(s):+.1f} | "
              f"{s.chance:.2g} | {mine} | {others} | {'yes' if s.by_tail else ''} | {'yes' if s.unlike else ''} |")
    spread = sum(z(s) ** 2 for s in standings) / len(standings)
    print(f"\nthe counts outside spread {spread:.1f}x as wide (variance) as independent passes would; unlike by the "
          f"tail alone: {sum(s.by_tail for s in standings)} of {len(standings)} runs, by the tail and the shares: "
          f"{sum(s.unlike for s in standings)}; every time x{plant:g} (planted): by the tail alone "
          f"{sum(s.by_tail for s in planted)} of {len(planted)}, by the tail and the shares "
          f"{sum(s.unlike for s in planted)}")


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
    parser.add_argument("--plant", type=float, default=0.85, help="each run again with every time scaled by this")
    args = parser.parse_args()
    times: list[tuple] = []
    speedups: list[tuple] = []
    either: list[tuple] = []
    standings: list[Standing | None] = []
    planted: list[Standing | None] = []
    for _, rows, earlier in runs_with_earlier(args.root):
        if rows.empty or earlier.empty:
            continue
        times += times_inside(rows, earlier)
        speedups += speedups_inside(rows, earlier)
        either += speedups_either_state(rows, earlier)
        standings.append(standing(rows, earlier))
        planted.append(standing(rows.assign(median_s=rows["median_s"] * args.plant), earlier))
    print("| what | earlier runs | held | within their range | if the runs were alike | their median within "
          "this run's interval |\n|---|---|---|---|---|---|")
    table("pass time (any state)", times, False)
    table("paired speedup (its state)", speedups, True)
    table("paired speedup (either state)", either, False)
    runs_table(*([s for s in found if s is not None] for found in (standings, planted)), args.plant)


if __name__ == "__main__":
    main()

"""Each run of a results folder held against the runs before it as `run` holds it (analysis/speedup_states.py): of
its paired speedups that the folder holds both at speed and in a slow phase, how many read apart between the two
states (`states_apart`), and, as the control, how many read apart when the same runs are put into two groups of
the same sizes at random instead of by state (a seeded shuffle), and by the medians alone (over SLOW_PHASE apart,
ranges allowed to overlap), both ways. Also how many the earlier runs' median reads outside the run's interval,
against the earlier runs in the same state (`↻` now) and against all of them (before the states were kept apart).

    .venv/bin/python benchmarks/speedup_states_bench.py results

Prints a Markdown table, a row per run, and the totals.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from benchctl.analysis.repeat import OTHER_STATE, SAME_STATE, earlier_speedups, runs_with_earlier
from benchctl.analysis.speedup import moved_since, present_value
from benchctl.analysis.speedup_states import readings, states_apart
from benchctl.results.schema import SLOW_PHASE
from benchctl.vocab import Status

SEED = 0
COUNTS = ("held", "apart", "shuffled apart", "medians apart", "shuffled medians apart", "with an interval",
          "outside (same state)", "outside (all)")


def shuffled(row: dict, rng: np.random.Generator) -> dict:
    """The row with its readings dealt into two groups of the same sizes at random (this run's stays first)."""
    mine, other = readings(row)
    dealt = [mine[0], *rng.permutation([*mine[1:], *other])]
    return {**row, "paired_speedup": dealt[0], SAME_STATE: tuple(dealt[1:len(mine)]), OTHER_STATE: tuple(dealt[len(mine):])}


def medians_apart(row: dict) -> bool:
    mine, other = readings(row)
    return abs(np.log(np.median(mine) / np.median(other))) > np.log1p(SLOW_PHASE)


def counts(rows: pd.DataFrame, earlier: pd.DataFrame, rng: np.random.Generator) -> list[int]:
    paired = rows[(rows["status"] == Status.OK) & rows["paired_speedup"].map(present_value)]
    out = dict.fromkeys(COUNTS, 0)
    for row in paired.assign(**earlier_speedups(paired, earlier)).to_dict("records"):
        interval = (row["paired_ci_lo"], row["paired_ci_hi"])
        if all(map(present_value, interval)) and row[SAME_STATE] + row[OTHER_STATE]:
            out["with an interval"] += 1
            out["outside (same state)"] += moved_since(interval, row[SAME_STATE]) > 1
            out["outside (all)"] += moved_since(interval, row[SAME_STATE] + row[OTHER_STATE]) > 1
        if readings(row) is None:
            continue
        fake = shuffled(row, rng)
        out["held"] += 1
        out["apart"] += states_apart(row) != 1.0
        out["shuffled apart"] += states_apart(fake) != 1.0
        out["medians apart"] += medians_apart(row)
        out["shuffled medians apart"] += medians_apart(fake)
    return list(out.values())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    rng, total = np.random.default_rng(SEED), [0] * len(COUNTS)
    print("| run | " + " | ".join(COUNTS) + " |\n" + "|---" * (len(COUNTS) + 1) + "|")
    for run, rows, earlier in runs_with_earlier(args.folder):
        found = counts(rows, earlier, rng)
        if found[0] or found[5]:
            print(f"| {run.name} | " + " | ".join(map(str, found)) + " |")
        total = [a + b for a, b in zip(total, found)]
    held, with_interval = total[0], total[5]
    print(f"\n{held} speedups held in both states: {total[1] / held:.1%} apart by state, {total[2] / held:.1%} "
          f"shuffled; by the medians alone {total[3] / held:.1%} and {total[4] / held:.1%}")
    print(f"{with_interval} speedups with an interval measured before: {total[6] / with_interval:.1%} outside against "
          f"the earlier runs in the same state, {total[7] / with_interval:.1%} against all of them")


if __name__ == "__main__":
    main()

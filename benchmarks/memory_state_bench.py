"""How holding a pass to its memory state changes the `slow↑`/`slow↓` arrows and the `↻` marks of a folder's runs.

    .venv/bin/python benchmarks/memory_state_bench.py [--root results] [--rates 0,0.05,0.2]

Reads the runs already in ROOT (it times nothing, so it may run beside anything) and, for each false discovery
rate at which a pass's time or speedup is tried against the memory probe (at_speed.with_earlier's `hold`; 0: the
canary's state alone), holds every run against up to ten before it, as `run` and the report do. Prints, summed
over the runs: the passes marked slow with a time at speed and their arrows, the arrows whose memory probe read
over MEMORY_NEAR outside that of the runs at speed the way the arrow points (the memory may have drawn them), and
the same of the speedups held against earlier runs and their `↻`.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from benchctl.analysis.at_speed import with_earlier
from benchctl.analysis.repeat import repeats, runs_with_earlier
from benchctl.analysis.summary import at_speed_arrow
from benchctl.results.schema import MEMORY_NEAR, slow_machine
from benchctl.vocab import Status


def outside(here: float, low: float, high: float) -> int:
    """1 where a memory probe reading `here` lies over MEMORY_NEAR above [low, high], -1 below, else 0."""
    return 1 if here > high * (1 + MEMORY_NEAR) else -1 if here < low / (1 + MEMORY_NEAR) else 0


def arrows(rows: pd.DataFrame) -> tuple[int, int, int]:
    """(passes marked slow with a time at speed, their arrows, the arrows the memory may have drawn: a faster pass
    with a faster memory, or a slower with a slower)."""
    known = rows[(rows["status"] == Status.OK) & rows.apply(slow_machine, axis=1) & rows["at_speed_s"].notna()]
    moved = [(r, at_speed_arrow(r)) for r in known.to_dict("records")]
    memory = sum(outside(r.get("mem_gbps", math.nan), r["at_speed_mem_lo_gbps"], r["at_speed_mem_hi_gbps"]) ==
                 (1 if a == "↓" else -1) for r, a in moved if a)
    return len(known), sum(bool(a) for _, a in moved), memory


def rings(rows: pd.DataFrame, earlier: pd.DataFrame) -> tuple[int, int, int]:
    """(speedups held against earlier runs, their `↻`, the `↻` the memory may have drawn: its probe read outside
    that of the earlier runs, either way, since a speedup moves with it whichever side is memory-bound)."""
    found = repeats(rows, earlier)
    moved = [r for r in found if r.moved > 1]
    memory = sum(outside(float(r.row.get("mem_gbps") or math.nan), *_range(r.before)) != 0 for r in moved)
    return len(found), len(moved), memory


def _range(before: pd.DataFrame) -> tuple[float, float]:
    read = before.reindex(columns=["mem_gbps"])["mem_gbps"].astype(float).dropna()
    return (float(read.min()), float(read.max())) if len(read) else (math.nan, math.nan)


def tally(root: Path, hold: float) -> list[int]:
    total = [0] * 6
    for _, rows, earlier in runs_with_earlier(root):
        if rows.empty or earlier.empty:
            continue
        held = with_earlier(rows, earlier, hold)
        total = [a + b for a, b in zip(total, (*arrows(held), *rings(held, earlier)))]
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("results"))
    parser.add_argument("--rates", default="0,0.05,0.2")
    args = parser.parse_args()
    print("| held at | marked slow, timed at speed | slow↑/slow↓ | of them beyond the memory at speed | speedups held | "
          "↻ | of them beyond the memory before |\n|---|---|---|---|---|---|---|")
    for rate in (float(r) for r in args.rates.split(",")):
        said = "the canary alone" if rate == 0 else f"{rate:.0%}"
        print(f"| {said} | " + " | ".join(str(n) for n in tally(args.root, rate)) + " |")


if __name__ == "__main__":
    main()

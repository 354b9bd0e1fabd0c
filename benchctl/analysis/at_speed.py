"""What a slow phase did to each pass marked `slow`: its time against its own runs at speed, the earlier runs of
the same code on the same kind of machine (repeat.earlier_rows) that timed it with the machine at speed and left
alone.

The mark says the machine's canary ran over SLOW_PHASE slower than calibrated around the pass; it does not say
what that did to the pass. Over nine main-job runs on the 2-core VM the state moved passes both ways: lstm_cell's
py forward at B=256 read 1.9x its time at speed, hoconv2d's py backward 0.75x, and most passes held
(benchmarks/README.md, "Which passes the slow state moves"). Where the folder holds the pass at speed, the tables
mark a pass beyond those runs (summary.at_speed_arrow) and the line under them says how many, which way, and the
furthest.

A pass whose time follows the memory probe across the folder's runs (follows.py) is held only against the runs at
speed whose memory probe read near its own (repeat.near_memory): in a slow phase on the 2-core VM the memory probe
read fast, and every `slow↓` on such a pass in twelve sweeps was the memory's, its runs at speed never near it.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from benchctl.analysis.follows import memory_followers, row_cells
from benchctl.analysis.repeat import (SPEEDUP_FOLLOWS_MEMORY, by_memory, earlier_speedups, machine_text,
                                      measurement, near, where)
from benchctl.analysis.speedup import present_value
from benchctl.analysis.summary import at_speed_arrow, ms_text
from benchctl.results.schema import MEMORY_HOLD, MEMORY_NEAR, SLOW_PHASE, left_alone, slow_machine
from benchctl.vocab import Status

# What two rows must share, besides what every measurement shares (repeat.measurement), for their own times to
# be the same: the code, the partner it was timed beside (pairs interleave its calls), torch and the allocator.
OWN = ("impl_code", "paired_with", "torch_version", "allocator")
RUNS_AT_SPEED = 2  # earlier runs that timed the pass at speed, at least, for its time at speed
# The columns `with_earlier` adds (not columns of the files: worked out from the folder at each table): the pass's
# time at speed (the median of those runs' medians), and the fastest and slowest of them.
AT_SPEED = {"median": "at_speed_s", "min": "at_speed_lo_s", "max": "at_speed_hi_s"}
# ... and the lowest and highest reading of each of the machine's probes in those runs, for the line's furthest.
AT_SPEED_PROBES = {"canary_ratio": ("at_speed_canary_lo", "at_speed_canary_hi"),
                   "mem_gbps": ("at_speed_mem_lo_gbps", "at_speed_mem_hi_gbps")}
COLUMNS = [*AT_SPEED.values(), *(c for pair in AT_SPEED_PROBES.values() for c in pair)]
# ... and the pass's median in every earlier run of the same measurement left alone, whatever the machine's state:
# how far its time moves from run to run, where this run's interval says only how well its own samples agree
# (the report's table, "earlier runs ms").
EARLIER = {"min": "earlier_lo_s", "max": "earlier_hi_s", "count": "earlier_runs"}
# Whether a row's time follows the memory probe across the folder's runs (follows.memory_followers): a column
# `with_earlier` adds, so that the time at speed it is held against is at a memory state near its own.
FOLLOWS_MEMORY = "time_follows_memory"
FOLLOWERS = {"median_s": FOLLOWS_MEMORY, "paired_speedup": SPEEDUP_FOLLOWS_MEMORY}  # what follows, and its column


def at_speed_times(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> pd.DataFrame:
    """For each row of `rows`, the median, fastest and slowest time (s) of the same measurement in the earlier runs
    that timed it at speed and left alone, with the range of each probe in them (AT_SPEED, AT_SPEED_PROBES; NaN
    where fewer than RUNS_AT_SPEED did, or the row has no code digest). A row whose time follows the memory probe
    (FOLLOWS_MEMORY, where `with_earlier` gave it) is held only against those whose memory probe read near its own
    (repeat.near_memory)."""
    keep = [] if earlier is None else list(map(_at_speed, earlier.to_dict("records")))
    quiet = earlier.loc[np.array(keep, dtype=bool)] if any(keep) else pd.DataFrame()
    if quiet.empty or rows.empty:
        return pd.DataFrame(np.nan, index=rows.index, columns=COLUMNS)
    runs = dict(tuple(quiet.groupby(measurement(quiet, OWN))))
    found = [_times(runs.get(key), row) for key, row in zip(_keys(rows), rows.to_dict("records"))]
    return pd.DataFrame(found, index=rows.index, columns=COLUMNS, dtype=float)


def earlier_times(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> pd.DataFrame:
    """For each row of `rows`, the fastest and slowest median of the same measurement in the earlier runs that timed
    it left alone, and how many did (EARLIER's columns; NaN where none did, or the row has no code digest)."""
    keep = [] if earlier is None else list(map(timed_alone, earlier.to_dict("records")))
    ok = earlier.loc[np.array(keep, dtype=bool)] if any(keep) else pd.DataFrame()
    if ok.empty or rows.empty:
        return pd.DataFrame(np.nan, index=rows.index, columns=list(EARLIER.values()))
    found = ok.groupby(measurement(ok, OWN))["median_s"].agg(list(EARLIER)).rename(columns=EARLIER)
    return found.reindex(_keys(rows).to_numpy()).set_axis(rows.index).astype(float)


def _keys(rows: pd.DataFrame) -> pd.Series:
    """Each row's measurement (OWN), NaN for a row without a code digest: its earlier runs may be of other code."""
    return measurement(rows, OWN).where(rows.reindex(columns=["impl_code"])["impl_code"].notna())


def _times(runs: pd.DataFrame | None, row: Mapping[str, Any]) -> list[float]:
    """COLUMNS' values of one row from the earlier runs at speed of its measurement (None: none)."""
    runs = None if runs is None else near(runs, row, FOLLOWS_MEMORY)
    if runs is None or len(runs) < RUNS_AT_SPEED:
        return [np.nan] * len(COLUMNS)
    probes = [runs.reindex(columns=[p])[p].astype(float).agg(end) for p in AT_SPEED_PROBES for end in ("min", "max")]
    return [*runs["median_s"].agg(list(AT_SPEED)), *probes]


def timed_alone(row: Mapping[str, Any]) -> bool:
    """An ok row with a time, timed left alone (schema.left_alone)."""
    return row.get("status") == Status.OK and left_alone(row) and row.get("median_s", 0) > 0


def _at_speed(row: Mapping[str, Any]) -> bool:
    return timed_alone(row) and present_value(row.get("canary_ratio")) and not slow_machine(row)


def with_earlier(rows: pd.DataFrame, earlier: pd.DataFrame | None,
                 hold: float = MEMORY_HOLD) -> pd.DataFrame:
    """The rows with what the earlier runs read of each, for the tables' `↻` and `slow↑`/`slow↓`, the report's
    marks and dashes and the line on the two states: whether their time and their speedup follow the memory probe
    (FOLLOWERS, tried at the false discovery rate `hold`; 0: none is held to its memory state), their paired
    speedups in the same machine state as the row and in the other (`earlier_speedups`), the pass's times at
    speed (AT_SPEED) and in every earlier run (EARLIER)."""
    cells = row_cells(rows, earlier)  # built once for both values
    rows = rows.assign(**{column: memory_followers(rows, earlier, value, hold, cells)
                          for value, column in FOLLOWERS.items()})
    return rows.assign(**earlier_speedups(rows, earlier), **at_speed_times(rows, earlier),
                       **earlier_times(rows, earlier))


def at_speed_line(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> str | None:
    """The line under the tables: of this run's passes marked `slow` that earlier runs timed at speed, how many
    read over SLOW_PHASE above the slowest of those runs (`slow↑`), how many below the fastest (`slow↓`), and the
    furthest from its time at speed; None where none was. Rows that `with_earlier` gave their times at speed are
    not held against `earlier` again."""
    marked = rows[(rows["status"] == Status.OK) & rows.apply(slow_machine, axis=1)] if len(rows) else rows
    given = set(AT_SPEED.values()) <= set(marked.columns)  # `with_earlier` already read them (run, report)
    timed = marked if given or marked.empty else marked.assign(**at_speed_times(marked, earlier))
    known = timed.dropna(subset=["at_speed_s"]) if len(timed) else timed
    if known.empty:
        return None
    arrows = known.apply(at_speed_arrow, axis=1)
    up, down = int((arrows == "↑").sum()), int((arrows == "↓").sum())
    text = (f"{len(known)} of the {len(marked)} passes marked slow were timed at speed in earlier runs of the same "
            f"code on this machine{_memory_text(timed)}: {up} read over {SLOW_PHASE:.0%} above the slowest of those "
            f"runs (slow↑), {down} over {SLOW_PHASE:.0%} below the fastest (slow↓), {len(known) - up - down} within")
    if not up + down:
        return text
    moved = known[arrows != ""]
    ratios = moved["median_s"] / moved["at_speed_s"]
    row = moved.loc[ratios.map(lambda r: abs(np.log(r))).idxmax()]
    return (f"{text}; the furthest, {where(row)}: {ms_text(row['median_s'])} ms here{machine_text([row])}, "
            f"{ms_text(row['at_speed_s'])} ms at speed ({row['median_s'] / row['at_speed_s']:.2f}x; "
            f"{ms_text(row['at_speed_lo_s'])}-{ms_text(row['at_speed_hi_s'])} ms{_machine_at_speed(row)})")


def _memory_text(marked: pd.DataFrame) -> str:
    """`, those whose time may follow the memory probe (8, false discovery rate 20%) only by runs whose memory probe
    read within 15% of theirs (1 had such runs)`, where some marked pass is held to its memory state
    (repeat.by_memory)."""
    follow = marked[[by_memory(r, FOLLOWS_MEMORY) for r in marked.to_dict("records")]] if len(marked) else marked
    if follow.empty:
        return ""
    return (f", those whose time may follow the memory probe ({len(follow)}, false discovery rate {MEMORY_HOLD:.0%}) "
            f"only by runs whose memory probe read within {MEMORY_NEAR:.0%} of theirs "
            f"({int(follow['at_speed_s'].notna().sum())} had such runs)")


def _machine_at_speed(row: Mapping[str, Any]) -> str:
    """The machine's probes in the earlier runs that timed the row's measurement at speed (AT_SPEED_PROBES),
    as repeat.machine_text says them."""
    ends = [{probe: row.get(pair[i]) for probe, pair in AT_SPEED_PROBES.items()} for i in (0, 1)]
    return machine_text(ends)

"""Whether a run's speedups repeat: each speedup timed in pairs (run --pair-with) against the same cell's in the
earlier runs of the same code (its and its partner's digests, ops/digest.py) on the same kind of machine,
timed the same way, found beside the run in its results folder.

A paired interval comes from pairs timed within seconds of each other: it says how well that moment's pairs
agree, not where the next run lands. Over five runs of the README's main job on the 2-core VM (the same code),
a run's speedup fell outside another run's interval 821 times of 1,504 (55%; docs/measuring.md, "Speedups run
after run"). A table that shows `2.05x ±0.3%` should not pass for a forecast, so the run and the report say how
the earlier runs fell: a line, a `↻` on each speedup whose earlier runs read outside its interval at their
median, and a mark per earlier run on the report's speedup chart.

Part of that is the machine's state: lstm_cell's cpp forward at B=256 read 2.02-2.07x over py in seven runs at
speed and 2.89-3.13x in six in a slow phase (py's time nearly doubles there, cpp's grows 15%). So a speedup is
held against the earlier runs in the same state as it (both in a slow phase, or both at speed: `machine_state`),
and those in the other state are kept apart (speedup_states.py says where the two states read apart).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from benchctl.analysis.compare import KEY, machine_kinds
from benchctl.analysis.speedup import moved_since, present_value
from benchctl.analysis.summary import axis_value_text
from benchctl.analysis.timed_alike import thread_kinds, timing_kinds
from benchctl.results import storage
from benchctl.results.schema import MEMORY_HOLD, MEMORY_NEAR, slow_machine
from benchctl.vocab import Status

EARLIER_RUNS = 10  # the latest runs before it in its results folder that a run is held against
# What must be equal for two rows' speedups to be the same measurement, besides the cell and pass (KEY): the
# partner, both sides' code (a row without both digests matches none), and what `compare` says makes two runs'
# timings incomparable that a machine kind does not (torch, the allocator: the system's gives large buffers back
# to the OS and faults them in again each call).
DIGESTS = ("impl_code", "partner_code")
SAME = ("paired_with", *DIGESTS, "torch_version", "allocator")
# The columns `earlier_speedups` gives each row (worked out from the folder at each table, not in the files): the
# earlier runs' speedups in the same machine state as the row (which `↻` holds it against), and in the other; and
# those of either state by run id (`either_state`'s), so two implementations paired with one partner compare run by run.
SAME_STATE, OTHER_STATE, BY_RUN = "earlier_speedups", "other_state_speedups", "earlier_speedups_by_run"
STATES = "both in a slow phase or both at speed"
# Whether a row's paired speedup follows the memory probe across the folder's runs: a column at_speed.with_earlier
# adds before `earlier_speedups`; a row without it is held against the runs in its canary state alone.
SPEEDUP_FOLLOWS_MEMORY = "speedup_follows_memory"


@dataclass(frozen=True)
class Repeat:
    """One paired speedup of a run with its interval, and the rows of the same measurement in earlier runs."""

    row: Mapping[str, Any]
    before: pd.DataFrame  # the earlier runs' rows in the same machine state as it

    @property
    def interval(self) -> tuple[float, float]:
        return float(self.row["paired_ci_lo"]), float(self.row["paired_ci_hi"])

    @property
    def earlier(self) -> tuple[float, ...]:
        return tuple(self.before["paired_speedup"])

    @property
    def moved(self) -> float:
        """How far the earlier runs' median lies outside this run's interval (speedup.moved_since; 1: inside)."""
        return moved_since(self.interval, self.earlier)


def repeats(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> list[Repeat]:
    """Each ok row of `rows` timed in pairs with an interval that earlier runs measured in the same machine state
    (`matches`, `in_state`)."""
    found = [(row, in_state(near(before, row), machine_state(row)))
             for row, before in zip(rows.to_dict("records"), matches(rows, earlier))]
    return [Repeat(row, before) for row, before in found
            if len(before) and present_value(row.get("paired_ci_lo")) and present_value(row.get("paired_ci_hi"))]


def earlier_speedups(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> pd.DataFrame:
    """For each row of `rows`, the paired speedups of the earlier runs' rows that it `matches` (`near` its memory
    probe), a tuple each: in the same machine state as the row (SAME_STATE) and in the other (OTHER_STATE); and
    both by run id (BY_RUN, a dict)."""
    states = [(machine_state(row), near(before, row))
              for row, before in zip(rows.to_dict("records"), matches(rows, earlier))]
    same = [in_state(before, state) for state, before in states]
    other = [in_state(before, not state) if state is not None else before.iloc[:0] for state, before in states]
    return pd.DataFrame({SAME_STATE: [tuple(s["paired_speedup"]) for s in same],  # unknown state: no other
                         OTHER_STATE: [tuple(o["paired_speedup"]) for o in other],
                         BY_RUN: [{**_by_run(s), **_by_run(o)} for s, o in zip(same, other)]},
                        index=rows.index, dtype=object)


def either_state(row: Mapping[str, Any]) -> tuple[float, ...]:
    """The earlier runs' paired speedups of a row that `earlier_speedups` gave it, in both machine states."""
    return tuple(s for column in (SAME_STATE, OTHER_STATE) if isinstance(row.get(column), tuple) for s in row[column])


def _by_run(before: pd.DataFrame) -> dict[str, float]:
    runs = before.reindex(columns=["run_id"])["run_id"]
    return {str(run): float(s) for run, s in zip(runs, before["paired_speedup"])}


def near(before: pd.DataFrame, row: Mapping[str, Any], column: str = SPEEDUP_FOLLOWS_MEMORY) -> pd.DataFrame:
    """The earlier rows `before` that a row is held against: those whose memory probe read near its own
    (`near_memory`) where it is held to its memory state (`by_memory`), else all."""
    return near_memory(before, float(row["mem_gbps"])) if by_memory(row, column) and len(before) else before


def by_memory(row: Mapping[str, Any], column: str = SPEEDUP_FOLLOWS_MEMORY) -> bool:
    """Whether a row is held to its memory state: what `column` says follows the memory probe (its speedup, or at
    its time: at_speed.FOLLOWS_MEMORY) does, and the row read the probe."""
    return row.get(column) is True and present_value(row.get("mem_gbps"))


def machine_state(row: Mapping[str, Any]) -> bool | None:
    """The machine around a pass: True in a slow phase (`slow_machine`), False at speed, None where its canary was
    not read (no calibration): unknown, held only against rows as unknown."""
    return slow_machine(row) if present_value(row.get("canary_ratio")) else None


def in_state(rows: pd.DataFrame, state: bool | None) -> pd.DataFrame:
    """The rows timed with the machine in this state (`machine_state`, which reads the canary alone)."""
    if not len(rows):
        return rows
    canaries = rows.reindex(columns=["canary_ratio"]).to_dict("records")
    return rows[[machine_state(r) == state for r in canaries]]


def near_memory(rows: pd.DataFrame, gbps: float) -> pd.DataFrame:
    """The rows whose memory probe read within MEMORY_NEAR of `gbps`."""
    read = rows.reindex(columns=["mem_gbps"])["mem_gbps"].astype(float)
    return rows[(read >= gbps / (1 + MEMORY_NEAR)) & (read <= gbps * (1 + MEMORY_NEAR))]


def matches(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> list[pd.DataFrame]:
    """For each row of `rows` (in order), the rows of `earlier` (other runs; None: none) that measured the same
    thing (KEY, SAME, the machine kind, threads and timing); none for a row not timed in pairs, without both
    digests, or not measured before."""
    none = pd.DataFrame(columns=["paired_speedup"])
    if earlier is None or earlier.empty:
        return [none] * len(rows)
    rows, before = rows.reset_index(drop=True), _keyed(_paired(earlier))
    found = dict(tuple(before.groupby("_same"))) if len(before) else {}
    ours = _keyed(_paired(rows))["_same"].to_dict()
    return [found.get(ours.get(i), none) for i in range(len(rows))]


def _paired(rows: pd.DataFrame) -> pd.DataFrame:
    if rows.empty or "paired_speedup" not in rows:
        return rows.iloc[:0]
    found = rows[(rows["status"] == Status.OK) & rows["paired_speedup"].map(present_value)]
    return found[found.reindex(columns=list(DIGESTS)).notna().all(axis=1)]


def _keyed(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with `_same`: one text for everything that must be equal between two runs' rows."""
    return rows.assign(_same=measurement(rows, SAME))


def measurement(rows: pd.DataFrame, same: Sequence[str]) -> pd.Series:
    """One text per row for what two runs' rows must share to be the same measurement: the cell and pass (KEY),
    the columns `same`, the machine kind, the way of timing and the threads."""
    if rows.empty:
        return pd.Series(dtype=str)
    parts = [rows.reindex(columns=[c])[c].astype(object).fillna("").astype(str) for c in (*KEY, *same)]
    parts += [machine_kinds(rows), timing_kinds(rows), thread_kinds(rows)]
    return pd.concat(parts, axis=1).agg("|".join, axis=1)


def repeat_line(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> str | None:
    """The line under the tables: of this run's paired speedups with an interval that earlier runs of the same
    code measured in the same machine state, how many the earlier runs' median read outside it, and the furthest;
    None where none was measured before."""
    found = repeats(rows, earlier)
    if not found:
        return None
    moved, runs = [r for r in found if r.moved > 1], max(len(r.earlier) for r in found)
    before = (f"(in up to {runs} earlier run(s) of the same code on this machine, in the same state: {STATES}"
              f"{_memory_text(found)})")
    if not moved:
        return (f"{len(found)} paired speedups measured before {before} read, at their median, inside this run's "
                "interval")
    worst = max(moved, key=lambda r: r.moved)
    return (f"{len(moved)} of {len(found)} paired speedups measured before {before} read, at their median, outside "
            f"this run's interval (↻); the furthest, {where(worst.row)}: {_interval_text(worst)} here"
            f"{machine_text([worst.row])}, {_range_text(worst.earlier)} before (median "
            f"{_digits(float(np.median(worst.earlier)))}x){machine_text(worst.before.to_dict('records'))}. A "
            "paired interval holds the pairs of one moment, not the next run's: judge a change with `benchctl "
            "compare`, and a cell's runs with `benchctl history`")


def _memory_text(found: Sequence[Repeat]) -> str:
    """`; for the 12 that may follow the memory probe (false discovery rate 20%), with it within 15%`, where some
    are held to their memory state (`by_memory`)."""
    follow = sum(by_memory(r.row) for r in found)
    return (f"; for the {follow} that may follow the memory probe (false discovery rate {MEMORY_HOLD:.0%}), with it "
            f"within {MEMORY_NEAR:.0%}" if follow else "")


def where(row: Mapping[str, Any]) -> str:
    """`lstm_cell/cell py forward at batch_size=256`: a row's cell and pass, as the lines name them."""
    at = f" at {row['axis']}={axis_value_text(row['axis_value'])}" if present_value(row.get("axis")) else ""
    return f"{row['op']}/{row['target']} {row['impl']} {row['pass']}{at}"


def _interval_text(r: Repeat) -> str:
    lo, hi = r.interval
    return f"{_digits(float(r.row['paired_speedup']))}x ({_range_text((lo, hi))})"


def machine_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """` with the canary at 1.51x calibrated and the memory probe at 62.8 GB/s` (or ranges): the machine's speed
    and its memory bandwidth beside the rows, each where some row read it (the memory probe moves the memory-bound
    passes between runs more than the canary does: follows.py); empty where none read either."""
    canary = [float(r["canary_ratio"]) for r in rows if present_value(r.get("canary_ratio"))]
    memory = [float(r["mem_gbps"]) for r in rows if present_value(r.get("mem_gbps"))]
    said = ([f"the canary at {_range_text(canary)} calibrated"] if canary else []) + \
        ([f"the memory probe at {_gbps_text(memory)}"] if memory else [])
    return f" with {' and '.join(said)}" if said else ""


def _gbps_text(values: Sequence[float]) -> str:
    """`62.8 GB/s`, or `39.4-58.2 GB/s`."""
    lo, hi = f"{min(values):.3g}", f"{max(values):.3g}"
    return f"{lo} GB/s" if lo == hi else f"{lo}-{hi} GB/s"


def _range_text(values: Sequence[float]) -> str:
    """`2.96-3.08x`, or `3.01x` for one value: three digits, as a paired interval's ends need."""
    lo, hi = _digits(min(values)), _digits(max(values))
    return f"{lo}x" if lo == hi else f"{lo}-{hi}x"


def _digits(value: float) -> str:
    """Three significant digits, trailing zeros kept: 2.00, 0.0184, 12.0, 123."""
    return f"{value:.{max(0, 2 - math.floor(math.log10(abs(value))))}f}" if value else "0"


def earlier_rows(run_dir: Path | str, limit: int = EARLIER_RUNS) -> pd.DataFrame:
    """The rows of the `limit` latest runs before `run_dir` in its results folder (its parent); empty where
    there are none."""
    run_dir = Path(run_dir).resolve()
    before = [p for p in storage.run_dirs(run_dir.parent) if p.name < run_dir.name][-limit:]
    return _joined(storage.load_run(p) for p in before)


def runs_with_earlier(root: Path | str, limit: int = EARLIER_RUNS) -> Iterator[tuple[Path, pd.DataFrame,
                                                                                   pd.DataFrame]]:
    """Every run of the results folder `root`, oldest first, with its rows and those `earlier_rows` gives it,
    each run read once (for scripts that hold every run of a folder against the runs before it)."""
    window: deque[pd.DataFrame] = deque(maxlen=limit)
    for run in storage.run_dirs(Path(root)):
        rows = storage.load_run(run)
        yield run, rows, _joined(window)
        window.append(rows)


def _joined(frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
    kept = [f for f in frames if not f.empty]
    return pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()

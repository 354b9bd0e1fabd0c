"""Paired speedups that read one way with the machine at speed and another in a slow phase, over the runs of the
same code in a run's folder (repeat.py keeps the two states apart).

On the 2-core VM the slow state of two threads does not slow every implementation alike: lstm_cell's py forward at
B=256 took 0.26 ms at speed and 0.44-0.48 ms in a slow phase while cpp's went from 0.13 to 0.15 ms, so cpp's
speedup read 2.02-2.07x in seven runs at speed and 2.89-3.13x in six in a slow phase, each run's interval
within 3%. Both are true of the machine they met; a speedup like that is two numbers here, and the line under the
tables says which speedups are, how far apart, and which state this run met.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from benchctl.analysis.repeat import OTHER_STATE, SAME_STATE, earlier_speedups, where
from benchctl.analysis.speedup import present_value, ratio_text
from benchctl.results.schema import SLOW_PHASE, slow_machine
from benchctl.vocab import Status

RUNS_IN_STATE = 2  # earlier runs in the other state, at least, for a speedup's reading there


def readings(row: Mapping[str, Any]) -> tuple[list[float], list[float]] | None:
    """A paired speedup's readings in this run's machine state (this run's, and the earlier runs' in that state)
    and in the other state (at least RUNS_IN_STATE earlier runs); None where the folder holds too few."""
    other = list(row.get(OTHER_STATE) or ())  # none where this run's state is unknown (repeat.machine_state)
    if len(other) < RUNS_IN_STATE or not present_value(row.get("paired_speedup")):
        return None
    return [float(row["paired_speedup"]), *(row.get(SAME_STATE) or ())], other


def states_apart(row: Mapping[str, Any]) -> float | None:
    """How far a paired speedup reads apart between the states: the median of its readings in a slow phase over
    the median at speed, where no reading in one state lies within the range of the other's and the medians lie
    over SLOW_PHASE apart; 1.0 where they do not; None where the folder does not hold it in both. (Over thirteen
    main-job runs, 18.0% of the speedups held in both read so apart, and 3.5% where the runs were dealt into two
    groups at random instead; by the medians alone, 32% against 17%: benchmarks/speedup_states_bench.py.)"""
    found = readings(row)
    if found is None:
        return None
    mine, other = found
    ratio = float(np.median(mine) / np.median(other))
    overlap = min(mine) <= max(other) and min(other) <= max(mine)
    if overlap or abs(np.log(ratio)) <= np.log1p(SLOW_PHASE):
        return 1.0
    return ratio if slow_machine(row) else 1 / ratio


def state_medians(row: Mapping[str, Any]) -> tuple[float, float]:
    """The median of a paired speedup's readings at speed and in a slow phase (`readings`: held in both)."""
    mine, other = (float(np.median(r)) for r in readings(row))
    return (other, mine) if slow_machine(row) else (mine, other)


def states_line(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> str | None:
    """The line under the tables: of the paired speedups the folder holds in both states, how many read apart
    between them (`states_apart`), and the furthest; None where none is held in both. Rows that `with_earlier`
    gave their earlier speedups are not held against `earlier` again."""
    if rows.empty or "paired_speedup" not in rows:
        return None
    paired = rows[(rows["status"] == Status.OK) & rows["paired_speedup"].map(present_value)]
    if paired.empty:
        return None
    known = paired if OTHER_STATE in paired else paired.assign(**earlier_speedups(paired, earlier))
    apart = known.apply(states_apart, axis=1).dropna()
    if apart.empty:
        return None
    far = apart[apart != 1.0]
    text = (f"{len(far)} of {len(apart)} paired speedups that this run and earlier runs of the same code timed both "
            f"in a slow phase and at speed read apart between the two states (every run in one state beyond every run "
            f"in the other, their medians over {SLOW_PHASE:.0%} apart)")
    if far.empty:
        return text
    row = known.loc[np.abs(np.log(far)).idxmax()]
    return f"{text}; the furthest, {where(row)}: {_states_text(row)}. Such a speedup depends on the machine's state"


def _states_text(row: Mapping[str, Any]) -> str:
    """`3.01x in a slow phase (this run's 2.89x and 5 earlier), 2.04x at speed (7 earlier runs)`."""
    mine, other = readings(row)
    medians = dict(zip(("at speed", "in a slow phase"), state_medians(row)))
    here, there = ("in a slow phase", "at speed") if slow_machine(row) else ("at speed", "in a slow phase")
    return (f"{ratio_text(medians[here])}x {here} (this run's {ratio_text(float(row['paired_speedup']))}x "
            f"and {len(mine) - 1} earlier), {ratio_text(medians[there])}x {there} ({len(other)} earlier runs)")

"""The lines under a run's tables that say what its numbers carry: passes whose partner read far from its own
row, passes mostly in the OS, host-bound GPU passes, a device with no calibration, a calibration or a whole run
in a slow phase, a machine whose speed moves on several threads and holds on one, other work beside the run, its
folder changed while it ran, passes outside their earlier runs' range (earlier_range.py), passes marked slow
against their time at speed in earlier runs, speedups that earlier runs of the same code read outside this run's
interval, speedups that read apart at speed and in a slow phase, cells whose time follows the machine across the
folder's runs (follows.py). One list, so `run` prints them under its tables and the report shows them above its
sections, each under a heading that says what kind of doubt it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from benchctl.analysis.at_speed import at_speed_line
from benchctl.analysis.earlier_range import outside_line
from benchctl.analysis.follows import run_line as follows_line
from benchctl.analysis.machine_lines import (busy_run_line, slow_calibration_line, slow_run_line, threads_line,
                                             uncalibrated_line)
from benchctl.analysis.repeat import repeat_line
from benchctl.analysis.speedup_states import states_line
from benchctl.analysis.partner_lines import partner_apart_line
from benchctl.analysis.summary import host_bound_line, os_time_line
from benchctl.results import storage
from benchctl.results.guard import changed_line


@dataclass(frozen=True)
class Note:
    """One line of what a run's numbers carry, and the heading of its kind."""

    heading: str
    text: str


# The heading of each kind of line, as the report shows it.
# (a partner's line names what moved it: other work, the machine's speed, or the pairing itself)
PARTNERS = "References far from their own row in the pairs (≠)"
OS_TIME, HOST_BOUND = "Mostly OS time", "Host-bound GPU passes"
SLOW_CALIBRATION, SLOW_RUN = "A calibration in a slow phase", "A run slower than calibrated"
UNCALIBRATED = "No calibration"
BUSY, THREADS, CHANGED = "Other work beside the run", "Marked slow on several threads", "Files changed while it ran"
OUTSIDE, AT_SPEED = "Against the earlier runs' range", "Marked slow, against their time at speed"
REPEAT, STATES = "Speedups against the earlier runs (↻)", "Speedups that depend on the machine's state"
FOLLOWS = "Times that follow the machine"


def notes(rows: pd.DataFrame, metas: Sequence[Mapping[str, Any]], cores: int | None = None,
          earlier: pd.DataFrame | None = None) -> list[Note]:
    """The lines for these rows and the runs they came from (`metas`: each run's metadata; `cores`: the
    machine's, else each run's `cpu_count` fact; `earlier`: the rows of the runs before them, repeat.py). A line
    of one run among several names it."""
    lines = [(PARTNERS, partner_apart_line(rows)), (OS_TIME, os_time_line(rows)), (HOST_BOUND, host_bound_line(rows)),
             (SLOW_CALIBRATION, slow_calibration_line(rows)), (SLOW_RUN, slow_run_line(rows))]
    several = len(metas) > 1
    for meta in metas:
        mine = rows[rows["run_id"] == meta.get("run_id")] if several and "run_id" in rows else rows
        busy = busy_run_line(mine, meta.get("busy_stretch"), cores or storage.meta_fact(dict(meta), "cpu_count"))
        peaks = storage.meta_fact(dict(meta), "peaks")
        threads, bare = threads_line(mine, (peaks or {}).get("cpu")), uncalibrated_line(mine, peaks)
        lines += [(heading, f"run {meta.get('run_id')}: {line}" if line and several else line)
                  for heading, line in ((UNCALIBRATED, bare), (BUSY, busy), (THREADS, threads))]
        lines.append((CHANGED, changed_line(meta)))
    lines += [(OUTSIDE, outside_line(rows, earlier)), (AT_SPEED, at_speed_line(rows, earlier)),
              (REPEAT, repeat_line(rows, earlier)), (STATES, states_line(rows, earlier)),
              (FOLLOWS, follows_line(rows, earlier))]
    return [Note(heading, line) for heading, line in lines if line]

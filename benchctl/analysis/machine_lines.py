"""What the machine did through a run, as the lines `run` prints after its tables: a canary that read far
faster than calibrated (the calibration ran slow), or far slower (the machine ran slow), and other work that
kept cores busy through a stretch of the run (its metadata's `busy_stretch`)."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from benchctl.analysis.speedup import disturbed
from benchctl.results.schema import SLOW_PHASE
from benchctl.vocab import Device, Status

# Passes enough to say that the run's canary read far faster, or slower, than calibrated (slow_calibration_line,
# slow_run_line).
CALIBRATION_PASSES = 6


def slow_calibration_line(rows: pd.DataFrame) -> str | None:
    """A line under the tables where the run's CPU passes read their canary far faster than calibrated
    (median ratio under 1/(1+SLOW_PHASE), over CALIBRATION_PASSES passes at least): `env --calibrate` ran in a
    slow phase of the machine, so a pass measured in one read `canary_ratio` near 1 and was not marked slow."""
    median, passes = _median_canary(rows)
    if median is None or median >= 1 / (1 + SLOW_PHASE):
        return None
    return (f"the canary read a median {median:.2f}x its calibrated time over {passes} CPU passes: "
            "`benchctl env --calibrate` ran while the machine was slow, so a pass measured while it was slow "
            "could not be marked slow; calibrate again")


def slow_run_line(rows: pd.DataFrame) -> str | None:
    """A line under the tables where the run's CPU passes read their canary far slower than calibrated
    (median ratio over 1+SLOW_PHASE): the machine ran slow through the run, so most passes are marked slow
    and their times are the slow machine's (a quick sweep on the 2-core VM read a median 1.41x)."""
    median, passes = _median_canary(rows)
    if median is None or median <= 1 + SLOW_PHASE:
        return None
    return (f"the canary read a median {median:.2f}x its calibrated time over {passes} CPU passes: the machine "
            "ran slower through this run than when calibrated, and these times with it; `compare` holds a "
            "change against the canary of both runs")


def busy_through(stretch: Mapping[str, float], cores: int | None = None) -> str:
    """A run's `busy_stretch` as words: "other work kept about 1.0 [of 2] cores busy through 48% of"."""
    of = f" of {cores}" if cores else ""
    return f"other work kept about {stretch['cores']:.1f}{of} cores busy through {stretch['share']:.0%} of"


def busy_run_line(rows: pd.DataFrame, stretch: Mapping[str, float] | None, cores: int) -> str | None:
    """A line under the tables where other work kept cores busy through a stretch of the run (`stretch`: the run
    metadata's `busy_stretch`, the median busy cores then and the share of the run): the passes measured beside
    it that stopped `disturbed` are its times as much as the code's; the others may read slow."""
    if not stretch:
        return None
    cpu = rows[(rows["device"] == Device.CPU) & (rows["status"] == Status.OK)] if "device" in rows else rows[:0]
    stalled = int(cpu.apply(disturbed, axis=1).sum()) if len(cpu) else 0
    said = f"{busy_through(stretch, cores)} this run"
    if not stalled:
        return (f"{said}: no CPU pass stopped `disturbed`, but those measured beside it may read slow (`slow` where "
                "the canary saw it; the report's machine chart shows when)")
    return (f"{said}: {stalled} of {len(cpu)} CPU passes stopped `disturbed`, their times as much its as the code's "
            "(the report's machine chart shows when); measure again with it gone, or with --threads that fit in "
            "the cores it left")


def _median_canary(rows: pd.DataFrame) -> tuple[float | None, int]:
    """The median canary ratio of the run's ok CPU passes (None under CALIBRATION_PASSES), and their count."""
    ratios = rows.loc[rows["status"] == Status.OK, "canary_ratio"].dropna() if "canary_ratio" in rows else ()
    return (float(np.median(ratios)) if len(ratios) >= CALIBRATION_PASSES else None), len(ratios)

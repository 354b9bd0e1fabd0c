"""What the machine did through a run, as the lines `run` prints after its tables: no calibration of a device it
timed (and what its passes went without), a canary that read far faster than calibrated (the calibration ran
slow), or far slower (the machine ran slow), a machine whose speed moves on several threads and holds on one, and
other work that kept cores busy through a stretch of the run (its metadata's `busy_stretch`)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from benchctl.analysis import canary_windows
from benchctl.analysis.speedup import disturbed
from benchctl.results.schema import FAST_CANARY, SLOW_PHASE, beside_work, slow_machine
from benchctl.vocab import Device, Status

# Passes enough to say that the run's canary read far faster, or slower, than calibrated (slow_calibration_line,
# slow_run_line, threads_line).
CALIBRATION_PASSES = 6
SLOW_SHARE = 0.2  # of a run's CPU passes on several threads marked slow, from which threads_line speaks
# Of a run's CPU passes reading the canary far faster than calibrated, from which slow_calibration_line speaks. On
# the 2-core VM, thirteen main-job runs of one day read none so (the fastest pass of any, 0.91x); the next day's,
# calibrated at 318 us on 2 threads (the calibration before, 249 us), read 56 of 150 so, down to 0.75x, with the
# median at 0.96x, which the line had asked of the median alone.
FAST_SHARE = 0.25


# What a run goes without on a device its machine has no calibration for (`env --calibrate`): (the device's name,
# what). The CPU's canary has no calibrated time then, so `canary_ratio` stays empty; no device has peaks.
UNCALIBRATED = {
    Device.CPU: ("CPU", "no wait for the machine to be at speed, no `slow` mark on a pass timed in a slow phase, no "
                        "change held against the machine's speed in `compare`, no % of peak and no floor check"),
    Device.CUDA: ("GPU", "no % of the GPU's peak and no floor check"),
}


def uncalibrated(devices: Iterable[str], peaks: Mapping[str, Any] | None) -> list[str]:
    """Of `devices`, those the calibration (`peaks`: device -> its peaks) does not cover, CPU first."""
    covered = {d for d, p in (peaks or {}).items() if p}
    return sorted((d for d in set(devices) - covered if d in UNCALIBRATED), key=list(UNCALIBRATED).index)


def uncalibrated_line(rows: pd.DataFrame, peaks: Mapping[str, Any] | None) -> str | None:
    """A line under the tables where the run timed passes on a device that its machine had no calibration for
    (`peaks`, the run's record of the calibration; None: a run that kept no record says nothing)."""
    if peaks is None or "device" not in rows:
        return None
    said = [f"the machine had no calibration of its {UNCALIBRATED[d][0]} when this run measured it, so its "
            f"{UNCALIBRATED[d][0]} passes had {UNCALIBRATED[d][1]}"
            for d in uncalibrated(rows.loc[rows["status"] == Status.OK, "device"], peaks)]
    return f"{'; '.join(said)}: run `benchctl env --calibrate` with nothing else running, then measure again" \
        if said else None


def slow_calibration_line(rows: pd.DataFrame) -> str | None:
    """A line under the tables where FAST_SHARE or more of the run's CPU passes (CALIBRATION_PASSES at least) read
    their canary far faster than calibrated (a ratio under FAST_CANARY): `env --calibrate` ran in a slow phase
    of the machine, so a pass measured in one read `canary_ratio` near 1 and was not marked slow."""
    ratios = _canary_ratios(rows)
    fast = int((ratios < FAST_CANARY).sum())
    if len(ratios) < CALIBRATION_PASSES or fast < FAST_SHARE * len(ratios):
        return None
    return (f"{fast} of {len(ratios)} CPU passes read the canary over {SLOW_PHASE:.0%} faster than calibrated (a "
            f"median {np.median(ratios):.2f}x its calibrated time, the fastest {ratios.min():.2f}x): `benchctl env "
            "--calibrate` ran while the machine was slow, so a pass measured as slow as the calibration "
            f"({1 / ratios.min():.2f}x the machine's fastest here) read near 1x and could not be marked slow; "
            "calibrate again")


def slow_run_line(rows: pd.DataFrame) -> str | None:
    """A line under the tables where the run's CPU passes read their canary far slower than calibrated
    (median ratio over 1+SLOW_PHASE): the machine ran slow through the run, so most passes are marked slow
    and their times are the slow machine's (a quick sweep on the 2-core VM read a median 1.41x)."""
    ratios = _canary_ratios(rows)
    median = float(np.median(ratios)) if len(ratios) >= CALIBRATION_PASSES else None
    if median is None or median <= 1 + SLOW_PHASE:
        return None
    return (f"the canary read a median {median:.2f}x its calibrated time over {len(ratios)} CPU passes: the machine "
            "ran slower through this run than its calibrated speed (the fastest stretch `env --calibrate` read), "
            "and these times with it; `compare` holds a change against the canary of both runs")


def threads_line(rows: pd.DataFrame, peaks: Mapping[str, Any] | None) -> str | None:
    """A line under the tables where a share (SLOW_SHARE) of the run's CPU passes on more than one thread were
    marked slow, and the calibration (`peaks`, the run's) read the canary spread past SLOW_PHASE on their
    threads while one thread's held (canary_windows.only_threads_move): on such a machine a `--threads 1` run's
    times hold from run to run. On the 2-core VM three runs each way of lstm_cell and patch_resample read a
    pass's median 1.7% apart between runs at the median (5.5% at the 90th percentile) on one thread, 3.9%
    (40%) on two."""
    ok = _ok(rows, Device.CPU)
    many = ok[ok["threads"] > 1] if "threads" in ok and "canary_ratio" in ok else ok.iloc[:0]
    if len(many) < CALIBRATION_PASSES or not peaks:
        return None
    threads, slow = int(many["threads"].max()), int(many.apply(slow_machine, axis=1).sum())
    if slow < SLOW_SHARE * len(many) or not canary_windows.only_threads_move(peaks, threads):
        return None
    spread = canary_windows.spread
    return (f"{slow} of {len(many)} CPU passes on {threads} threads were marked slow: this machine's speed moves "
            f"on {threads} threads (the calibration's canary windows 1.00-{spread(peaks, threads):.2f}x the fastest) "
            f"and holds on one (1.00-{spread(peaks, 1):.2f}x); `--threads 1` times on the steady part, and its "
            "compute-bound times hold closer from run to run")


def busy_through(stretch: Mapping[str, float], cores: int | None = None) -> str:
    """A run's `busy_stretch` as words: "other work kept about 1.0 [of 2] cores busy through 48% of"."""
    of = f" of {cores}" if cores else ""
    return f"other work kept about {stretch['cores']:.1f}{of} cores busy through {stretch['share']:.0%} of"


def busy_run_line(rows: pd.DataFrame, stretch: Mapping[str, float] | None, cores: int | None) -> str | None:
    """A line under the tables where other work kept cores busy through a stretch of the run (`stretch`: the run
    metadata's `busy_stretch`, the median busy cores then and the share of the run): the passes measured beside
    it, stopped `disturbed` or timed `busy`, are its times as much as the code's."""
    if not stretch:
        return None
    cpu, gpu = _ok(rows, Device.CPU), _ok(rows, Device.CUDA)
    stalled = cpu.apply(disturbed, axis=1) if len(cpu) else pd.Series(dtype=bool)
    beside = cpu.apply(beside_work, axis=1) & ~stalled if len(cpu) else pd.Series(dtype=bool)
    said = f"{busy_through(stretch, cores)} this run"
    issued = int(gpu.apply(beside_work, axis=1).sum()) if len(gpu) else 0  # host-bound ones: their host set the time
    if stalled.any() or beside.any() or issued:
        fit = ", or with --threads that fit in the cores it left" if stalled.any() else ""
        counted = "; ".join(filter(None, [_counted(int(stalled.sum()), int(beside.sum()), len(cpu)),
                                          f"{issued} host-bound GPU passes were timed beside it" if issued else ""]))
        return (f"{said}: {counted}, their times as much its as the code's (the report's machine chart shows "
                f"when); measure again with it gone{fit}")
    if len(gpu) and not len(cpu):
        return f"{said}: no host-bound GPU pass was timed beside it (their kernels set their times)"
    if "other_cores" in cpu and cpu["other_cores"].notna().any():
        return f"{said}: no CPU pass was timed beside it"
    return (f"{said}: no CPU pass stopped `disturbed`, but those measured beside it may read slow (`slow` where "
            "the canary saw it; the report's machine chart shows when)")


def _ok(rows: pd.DataFrame, device: str) -> pd.DataFrame:
    """The run's ok passes on `device`."""
    return rows[(rows["device"] == device) & (rows["status"] == Status.OK)] if "device" in rows else rows[:0]


def _counted(stalled: int, beside: int, passes: int) -> str:
    """How many of the run's CPU `passes` stopped `disturbed`, and how many more were timed `busy` (empty
    where none was)."""
    if not (stalled or beside):
        return ""
    if stalled and beside:
        return f"{stalled} of {passes} CPU passes stopped `disturbed` and {beside} more were timed beside it (`busy`)"
    if stalled:
        return f"{stalled} of {passes} CPU passes stopped `disturbed`"
    return f"{beside} of {passes} CPU passes were timed beside it (`busy`)"


def _canary_ratios(rows: pd.DataFrame) -> np.ndarray:
    """The canary ratios of the run's ok CPU passes not timed beside other work: a neighbour slows the canary as it
    slows the pass, and says nothing of the calibration or of the machine's own speed."""
    ok = rows[rows["status"] == Status.OK]
    quiet = ok[~ok.apply(beside_work, axis=1).astype(bool)] if len(ok) else ok
    return quiet["canary_ratio"].dropna().to_numpy(float) if "canary_ratio" in quiet else np.array([])

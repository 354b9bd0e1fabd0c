"""This machine's measured peaks: copy bandwidth (GB/s) from DRAM, from each cache level and at each size
between them, and matmul throughput (GFLOP/s) in each dtype, per device.

Stored per host in the user's cache, so `run` can add `pct_of_peak` to every row: the share of the
roofline bound (the larger of bytes / peak GB/s and FLOPs / peak GFLOP/s) that a pass achieves. On the
CPU also the best of the memory bandwidth probes its canary windows take all through it (membw.py,
`read_gbps`) and their median (`read_gbps_typical`): `run` compares the probe it takes at the start with the
median and warns when the machine's memory is busy (against the best, it warned at most starts on a quiet
2-core VM: 30 GB/s against 63), and the compute canary's time on each thread count a pass takes
(`canary_s_by_threads`). A CPU matmul rate timed while the float32 matmul itself read slow is timed again, then
raised to that matmul's fastest reading where still slow (matmul_peaks.py).

Every run after it is held to what it stores, so a calibration beside other work stores nothing: it waits up
to QUIET_WAIT_S for the machine to be quiet before it starts, watches the other processes' load while it runs
(machine/load.py), and where other work kept cores busy through BUSY_SHARE of it or more, it leaves the file
as it was and says so (`BusyMachine`).
"""

from __future__ import annotations

import json
import socket
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from benchctl.cache import cache_dir

from benchctl.errors import BenchError
from benchctl.machine import canary, load
from benchctl.measure import copies, trust
from benchctl.measure.matmul_peaks import MATMUL_RAISED_BY, at_matmul_speed, matmul_rates
from benchctl.results.schema import BUSY_WARN_CORES, SLOW_PHASE

# The canary's calibrated time, per thread count: the fastest of its windows' medians, a window being
# CANARY_READINGS readings, each right after a memory probe as a sweep reads it, taken before the peaks are
# timed and after each step. The 2-core VM spends stretches of tens of seconds in a slow phase (the canary
# up to 1.7x), idle or not, and a slow phase only ever slows the canary: in ten calibrations
# (benchmarks/calibration_bench.py) one window after the peaks, the rule before, read 249-402 us, the
# median of the windows 250-369, the fastest 248-256. Runs after a slow calibration read their canaries
# under 1 and could not mark a slow pass (the sweeps after a 450 us one read 0.55-0.73 of it).
CANARY_READINGS = 11
# Where the fastest canary window on a thread count reads over 1+SLOW_PHASE the calibration it replaces, more windows
# are read, up to this long, for the machine's fast state: on the 2-core VM one calibration's fastest read 318 us on
# 2 threads where the one before had read 249 us, and the sweep after it read passes down to 0.75x of it.
SEEK_S = 60.0
QUIET_WAIT_S = 10  # readings of a second each, at most, for other work to leave the machine before calibrating
BUSY_SHARE = 0.25  # of the calibration's load timeline with other work on the machine, from which nothing is stored


@dataclass(frozen=True)
class Window:
    """One window of the canary: its median on each thread count (s), and the memory probes it was read after on
    torch's threads (GB/s), as a sweep reads them."""
    canary_s: dict[int, float]
    read_gbps: list[float]


class BusyMachine(BenchError):
    """Other work kept cores busy before or through a calibration: nothing was stored."""


def calibration_path() -> Path:
    return cache_dir() / f"calibration-{socket.gethostname()}.json"


def calibrate(devices: list[str]) -> dict[str, dict[str, float]]:
    counts, windows = canary_threads() if "cpu" in devices else (), []
    before = load_peaks().get("cpu", {}).get("canary_s_by_threads") or {}

    def between() -> None:  # a window of the canary before and after each step, so that they span the calibration
        if counts:
            windows.append(canary_window(counts))

    _wait_for_quiet()
    with load.Timeline() as watched:
        between()
        peaks = {d: _device_peaks(d, between) for d in devices}
        _seek_speed(windows, counts, before)
        if "cpu" in peaks:
            _add_cpu_speed(peaks["cpu"], counts, windows)
    stretch = load.busy_stretch(watched.samples, BUSY_SHARE)
    if stretch is not None:
        raise BusyMachine(f"other work kept about {stretch['cores']:.1f} cores busy through {stretch['share']:.0%} "
                          "of the calibration, whose peaks and canary would hold every later run to what it left: "
                          "nothing was stored; calibrate again once it has stopped")
    path = calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**load_peaks(), **peaks}, indent=2))
    return peaks


def _seek_speed(windows: list[Window], counts: tuple[int, ...], before: dict[str, float],
                clock: Callable[[], float] = time.monotonic) -> None:
    """More canary windows, for up to SEEK_S, while the fastest on a thread count reads over 1+SLOW_PHASE the
    calibration it replaces (`before`, its calibrated times): a slow phase of tens of seconds passes within it, a
    slower machine does not (env then says so)."""
    def slower() -> bool:
        found = canary.furthest_over(before, {str(n): min(w.canary_s[n] for w in windows) for n in counts})
        return found is not None and found[1] > 1 + SLOW_PHASE

    start = clock()
    while windows and slower() and clock() - start < SEEK_S:
        windows.append(canary_window(counts))


def _wait_for_quiet() -> None:
    """Returns once the machine reads quiet (load.wait_for_quiet: a first second under BUSY_WARN_CORES, or three
    in a row after one over it), within QUIET_WAIT_S; else raises BusyMachine."""
    busy = load.wait_for_quiet(QUIET_WAIT_S)[0]
    if busy is not None and busy >= BUSY_WARN_CORES:
        raise BusyMachine(f"other work keeps about {busy:.1f} cores busy (for {QUIET_WAIT_S} s): a calibration now "
                          "would hold every later run to what it leaves; nothing was measured, calibrate once it "
                          "has stopped")


def _device_peaks(device: str, between: Callable[[], None]) -> dict[str, Any]:
    """A device's copy GB/s from DRAM, within each cache level and at each size between (copies.copy_window), the
    fastest of its copy windows (one first, one after each dtype's matmul rate, one last: a VM's memory runs slow
    for ten seconds and more at a time), and each dtype's matmul rate, calling `between` after each step."""
    windows = [copies.copy_window(device)]
    between()
    found: dict[str, Any] = {"threads": torch.get_num_threads()}
    found["gflops_by_dtype"], around = matmul_rates(device, lambda: windows.append(copies.copy_window(device)))
    found["gflops"] = found["gflops_by_dtype"]["float32"]
    between()
    windows.append(copies.copy_window(device))
    between()
    found.update(copies.best_copies(windows, device))
    return {**found, "matmul_readings": around} if around else found


def _add_cpu_speed(cpu: dict[str, Any], counts: tuple[int, ...], windows: list[Window]) -> None:
    """The memory probes' best and median over every window (spread over the calibration, as the canary's are:
    ten probes back to back at its end read one stretch of the host's memory traffic), the canary's fastest
    window per thread count (and every window's median on each, `canary_windows_by_threads`: how far the
    machine's speed moved on each while it was calibrated), and the matmul rates at the float32 matmul's
    fastest reading (with how much slower it read around each)."""
    reads = [gbps for w in windows for gbps in w.read_gbps]
    cpu.update(read_gbps=max(reads), read_gbps_typical=statistics.median(reads))
    by_threads = {str(n): min(w.canary_s[n] for w in windows) for n in counts}
    threads = torch.get_num_threads()
    cpu.update(canary_s_by_threads=by_threads, canary_s=by_threads[str(threads)],
               canary_windows_by_threads={str(n): [w.canary_s[n] for w in windows] for n in counts})
    cpu["gflops_by_dtype"], cpu["matmul_slowdown"] = at_matmul_speed(cpu["gflops_by_dtype"],
                                                                     cpu.pop("matmul_readings"))
    cpu["matmul_raised_by"] = MATMUL_RAISED_BY
    cpu["gflops"] = cpu["gflops_by_dtype"]["float32"]


def _readings(count: int) -> tuple[list[float], list[float]]:
    """`count` memory probes (GB/s) and canary readings (s), each reading right after its probe as a sweep reads
    them."""
    probes = [trust.probe()[:2] for _ in range(count)]
    return [gbps for gbps, _ in probes], [s for _, s in probes]


def canary_threads() -> tuple[int, ...]:
    """The thread counts a run's passes take here: torch's default, and one (`run --threads 1`)."""
    return tuple(sorted({1, torch.get_num_threads()}))


def canary_window(counts: tuple[int, ...]) -> Window:
    """The canary's time on each thread count in `counts` now, the median of CANARY_READINGS readings, and the
    memory probes read on torch's default threads."""
    found, reads, threads = {}, [], torch.get_num_threads()
    for n in counts:
        with canary.on_threads(n):
            gbps, seconds = _readings(CANARY_READINGS)
        found[n] = statistics.median(seconds)
        if n == threads:
            reads = gbps
    return Window(found, reads)


def load_peaks() -> dict[str, dict[str, float]]:
    """The stored calibration: each device's peaks; {} where there is none, and without a device whose entry
    lacks its copy and matmul rates (the file damaged, or written by something else: floors are read from it)."""
    try:
        peaks = json.loads(calibration_path().read_text())
    except (OSError, ValueError):
        return {}
    return {device: p for device, p in peaks.items() if _rated(p)} if isinstance(peaks, dict) else {}


def _rated(entry: Any) -> bool:
    return isinstance(entry, dict) and all(type(entry.get(key)) in (int, float) for key in ("gbps", "gflops"))

"""The machine's speed right now, read by a fixed compute-bound call timed beside each CPU measurement.

A shared VM changes speed from minute to minute with nothing else running inside it: a 64x256 by
256x1024 float32 matmul and a sigmoid, on two threads, timed as the median of 200 calls every half
second for 90 s, read 277 to 606 us (median 327), while steal time stayed at zero and no thread waited
for a CPU. Nothing inside one measurement's samples shows it: they move together. The same call timed
around each pass (`canary_s`) against its calibrated time (`benchctl env --calibrate`) says whether the
pass ran on the machine that was calibrated, and `compare` holds a change against how much the canary
moved between the two runs. The memory side has its own probe (membw.py, `mem_gbps`).

The 2-core VM has a slow phase: the canary 1.34-1.54x its calibrated time, a chain of 64x64 matmuls
1.5-1.6x, for seconds or for minutes. A cell measured in one is measured again at the end of the sweep,
and the sweep first waits a while for the machine to return to speed (`wait_for_speed`, run --settle).
"""

from __future__ import annotations

import contextlib
import functools
import statistics
import time
from typing import Any, Callable, Iterator, Mapping

import torch

from benchctl.results.schema import SLOW_PHASE

SHAPE = (64, 256, 1024)  # (m, k, n) of the matmul: 33.6 MFLOP, a fraction of a millisecond
CALLS = 9  # timed calls per reading; its median is the reading
POLL_S = 1.0  # seconds between readings while waiting for the machine to return to speed
SPEED_READINGS = 3  # readings whose median says the machine is back to speed


@functools.lru_cache(maxsize=1)
def _operands() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    m, k, n = SHAPE
    return torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)


def canary() -> float:
    """Seconds the fixed call takes now: the median of CALLS calls after one untimed call."""
    a, b = _operands()
    torch.sigmoid(a @ b)
    times = []
    for _ in range(CALLS):
        start = time.perf_counter()
        torch.sigmoid(a @ b)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@contextlib.contextmanager
def on_threads(threads: int | None) -> Iterator[None]:
    """torch's threads set to `threads` inside the block (None: left as they are), and set back after it."""
    given = torch.get_num_threads()
    try:
        torch.set_num_threads(threads or given)
        yield
    finally:
        torch.set_num_threads(given)


def canary_on(threads: int | None) -> float:
    """The canary on `threads` of torch's threads (None: as many as now): the speed of the machine a run's passes
    are timed on, on their threads (`run --threads`)."""
    with on_threads(threads):
        return canary()


def calibrated_s(peaks: Mapping[str, Any], threads: int | None) -> float | None:
    """The canary's calibrated time on `threads` threads (it runs on the pass's threads: on the 2-core VM one
    thread took 1.5x two threads' time, so a `--threads 1` run held to the two-thread time read every pass
    slow); None for a count `env --calibrate` did not time. A calibration from before it timed each count
    has the one it ran at (`threads`)."""
    by_threads = peaks.get("canary_s_by_threads")
    if by_threads:
        return by_threads.get(str(threads))
    return peaks.get("canary_s") if threads == peaks.get("threads") else None


def slowdown(canary_s: float | None, calibrated_s: float | None) -> float | None:
    """The canary's time over its calibrated time (above 1: slower than when calibrated)."""
    if not canary_s or not calibrated_s:
        return None
    return canary_s / calibrated_s


def wait_for_speed(calibrated_s: float, limit_s: float, on_wait: Callable[[float], None] = lambda ratio: None,
                   read: Callable[[], float] = canary, sleep: Callable[[float], None] = time.sleep,
                   clock: Callable[[], float] = time.monotonic, readings: int = SPEED_READINGS) -> tuple[float, float]:
    """Reads the canary every POLL_S until the median of the last `readings` readings is within SLOW_PHASE of
    its calibrated time, for `limit_s` at most, telling `on_wait` each median over it; the last median and the
    seconds waited. One reading under the bar is luck on a VM in a slow phase: over 10 min of a canary read
    1.2-2.6x (10-90%), the 10 s after a wait that ended on one read a median 1.39x, after three 1.20x."""
    start, ratios = clock(), []
    while True:
        ratios.append(read() / calibrated_s)
        ratio, waited = statistics.median(ratios[-readings:]), clock() - start
        if (ratio <= 1 + SLOW_PHASE and len(ratios) >= readings) or waited >= limit_s:
            return ratio, waited
        if ratio > 1 + SLOW_PHASE:
            on_wait(ratio)
        sleep(min(POLL_S, limit_s - waited))


def furthest_over(before: Mapping[str, float], now: Mapping[str, float]) -> tuple[str, float] | None:
    """Of the thread counts both calibrated canary times name (`canary_s_by_threads`: "2" -> seconds), the one whose
    time `now` reads furthest over `before`, and that ratio; None where they share none."""
    ratios = {n: now[n] / before[n] for n in now if before.get(n)}
    n = max(ratios, key=ratios.__getitem__, default=None)
    return None if n is None else (n, ratios[n])


def slower_than_before(before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    """Where a new calibration's canary (`after`, a device's peaks) is over SLOW_PHASE slower than the calibration
    it replaced (`before`) on a thread count both timed (`furthest_over`), even after the calibration read more
    windows for its fast state (calibrate.SEEK_S), what that leaves: calibrated in a slow phase, no pass of a later
    run can read slow. On the 2-core VM one read 318 us on 2 threads where the one before had read 249 us, and the
    main job after it read 56 of 150 passes over 15% faster than calibrated."""
    old, new = before.get("canary_s_by_threads") or {}, after.get("canary_s_by_threads") or {}
    found = furthest_over(old, new)
    if found is None or found[1] <= 1 + SLOW_PHASE:
        return None
    n, ratio = found
    return (f"the canary calibrated at {new[n] * 1e6:.0f} us on {n} thread{'' if n == '1' else 's'}, "
            f"{ratio:.2f}x the calibration it replaced ({old[n] * 1e6:.0f} us), after a minute more of canary "
            "windows: a slower machine, or a long slow phase, in which case the runs after this calibration cannot "
            "mark a pass slow (a run says so where a quarter of its passes read faster than calibrated); calibrate "
            "again in a while")

"""The timing loop: warm-up, adaptive repetition, every sample kept, robust statistics.

A measured step is split in two: `setup()` runs untimed and returns the thunk that is timed (so a
backward's graph is built outside the clock). Clocks are replaceable: `CpuClock` reads a monotonic
ns counter; `CudaEventClock` records CUDA events around each repetition and synchronises before
reading them. Tests drive the loop with fake clocks, the CUDA path included.
"""

from __future__ import annotations

import gc
import resource
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Protocol

import numpy as np

NOISY_IQR_RATIO = 0.10

Thunk = Callable[[], Any]


class Clock(Protocol):
    """Times one call of a thunk, in seconds."""

    def time(self, thunk: Thunk) -> float: ...


class OsUsage(NamedTuple):
    """What the OS counts for this process, all threads: page faults that needed no disk (first
    touches of memory) and system CPU seconds (the kernel working for it, e.g. zeroing those pages)."""

    faults: int
    sys_s: float

    def __sub__(self, other: OsUsage) -> OsUsage:
        return OsUsage(self.faults - other.faults, self.sys_s - other.sys_s)


def os_usage() -> OsUsage:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return OsUsage(r.ru_minflt, r.ru_stime)


class CpuClock:
    """perf_counter_ns around each call; also what the OS did for each call (`usage_per_call`, in
    order), read outside the clock. A fresh multi-MB result faults in every 4 KiB page on its first
    write, which can cost more than computing it."""

    def __init__(self, counter: Callable[[], int] = time.perf_counter_ns,
                 usage: Callable[[], OsUsage] | None = os_usage):
        self.counter = counter
        self.usage = usage
        self.usage_per_call: list[OsUsage] = []

    def time(self, thunk: Thunk) -> float:
        before = self.usage() if self.usage else None
        start = self.counter()
        result = thunk()
        stop = self.counter()
        if before is not None:
            self.usage_per_call.append(self.usage() - before)
        del result  # freeing the output (and a forward's graph) is not part of the call
        return (stop - start) * 1e-9


class CudaEventClock:
    """CUDA events around each repetition on the current stream, read after a synchronise.

    The stream is idle when the start event is recorded, so the sample runs from there until the
    thunk's last kernel ends: the kernels, plus any time the GPU waits for the host to launch them.
    A call whose host side (Python, dispatch, launches) is slower than its kernels is timed at host
    speed, as an eager model runs it: on an H100, hoconv2d's cuda filter forward at B=1 measured
    ~60 us for one kernel that moves 6 MB, a few microseconds at that GPU's bandwidth.

    `host_per_call` (in order) is how long the host took to issue each call: where it is close to
    the sample, the GPU mostly waited for the host.

    `event_factory` and `synchronize` default to torch.cuda's; tests pass fakes. An optional
    `before` hook (e.g. an L2 flush) runs before the start event is recorded, so it is not timed.
    """

    def __init__(self, event_factory: Callable[..., Any] | None = None,
                 synchronize: Callable[[], None] | None = None, before: Thunk | None = None,
                 counter: Callable[[], int] = time.perf_counter_ns):
        if event_factory is None or synchronize is None:
            import torch

            event_factory = event_factory or (lambda: torch.cuda.Event(enable_timing=True))
            synchronize = synchronize or torch.cuda.synchronize
        self.event_factory = event_factory
        self.synchronize = synchronize
        self.before = before
        self.counter = counter
        self.host_per_call: list[float] = []

    def time(self, thunk: Thunk) -> float:
        if self.before is not None:
            self.before()
        start, end = self.event_factory(), self.event_factory()
        self.synchronize()  # nothing queued earlier may leak into this sample
        start.record()
        issued = self.counter()
        result = thunk()
        returned = self.counter()
        end.record()
        self.synchronize()
        self.host_per_call.append((returned - issued) * 1e-9)  # kept out of the events' window
        del result  # freeing the output (and a forward's graph) is not part of the call
        return start.elapsed_time(end) * 1e-3  # elapsed_time is in ms


@dataclass(frozen=True)
class Policy:
    """How long to measure: at least `min_samples` and `min_time` seconds of samples, at most
    `max_samples` and `max_time`; stop early once the running median moved less than `stable_rtol`
    over the last `stable_window` samples and a quarter of `min_time` is sampled (so a cheap call is
    never judged on a few milliseconds of samples, which one scheduler hiccup can skew).

    Before sampling, `warmup` untimed calls, and more until `warmup_time` seconds of wall clock have
    passed (none at all when `warmup` is 0). Wall clock, untimed setup included: judged by the timed
    part alone, a backward of 40 us behind a 10 ms forward warmed up for 2,500 forwards. Sampling is
    bounded by `max_time` of wall clock too. The first calls can run in another state than the rest: on a
    VM that hands freed memory back to its host, a kernel returning a new 80 MB gradient ran its first
    five calls 7x slower, nearly all of it OS time while the host backed the memory again, then
    settled."""

    warmup: int = 1
    warmup_time: float = 0.5
    min_samples: int = 5
    max_samples: int = 1000
    min_time: float = 0.2
    max_time: float = 5.0
    stable_rtol: float = 0.01
    stable_window: int = 5


@dataclass(frozen=True)
class Measurement:
    samples: tuple[float, ...]
    warmup_s: tuple[float, ...] = ()
    stats: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0  # warm-up and sampling, untimed setup included

    @property
    def median(self) -> float:
        return self.stats["median_s"]

    @property
    def noisy(self) -> bool:
        return is_noisy(self.stats)


def is_noisy(stats: dict[str, float]) -> bool:
    """The samples' IQR is over NOISY_IQR_RATIO of their median."""
    return stats["iqr_s"] > NOISY_IQR_RATIO * stats["median_s"]


def noisy_message(stats: dict[str, float]) -> str:
    return f"noisy: IQR is {stats['iqr_s'] / stats['median_s']:.0%} of the median"


def summarize(samples: list[float] | tuple[float, ...]) -> dict[str, float]:
    arr = np.asarray(samples, dtype=np.float64)
    q1, med, q3 = np.percentile(arr, [25, 50, 75])
    return {
        "n": int(arr.size),
        "median_s": float(med),
        "iqr_s": float(q3 - q1),
        "mean_s": float(arr.mean()),
        "std_s": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
        "min_s": float(arr.min()),
        "max_s": float(arr.max()),
    }


def measure(setup: Callable[[], Thunk], clock: Clock, policy: Policy = Policy(),
            elapsed: Callable[[], float] = time.monotonic) -> Measurement:
    """Warm up, then repeat until `policy` is satisfied. Only `thunk()` is inside the clock.

    Python's cyclic garbage collector is off meanwhile, as timeit has it: a collection of the
    whole heap (torch's objects included) would otherwise land in whichever sample crossed its
    allocation threshold. Reference counting still frees each repetition's tensors and graph.
    """
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        began = elapsed()
        warm = _warm_up(setup, clock, policy, elapsed)
        samples: list[float] = []
        medians: list[float] = []
        start = elapsed()
        while True:
            samples.append(clock.time(setup()))
            medians.append(statistics.median(samples))
            if _done(samples, medians, elapsed() - start, policy):
                break
    finally:
        if was_enabled:
            gc.enable()
    return Measurement(tuple(samples), warm, summarize(samples), elapsed() - began)


def _warm_up(setup: Callable[[], Thunk], clock: Clock, policy: Policy,
             elapsed: Callable[[], float]) -> tuple[float, ...]:
    times: list[float] = []
    start = elapsed()
    while len(times) < policy.warmup or (times and elapsed() - start < policy.warmup_time):
        times.append(clock.time(setup()))
    return tuple(times)


def _done(samples: list[float], medians: list[float], spent: float, policy: Policy) -> bool:
    if len(samples) >= policy.max_samples or spent >= policy.max_time:
        return True
    if len(samples) < policy.min_samples:
        return False
    if sum(samples) >= policy.min_time:
        return True
    enough = len(samples) >= 2 * policy.min_samples and sum(samples) >= policy.min_time / 4
    return enough and _stable(medians, policy)


def _stable(medians: list[float], policy: Policy) -> bool:
    if len(medians) < policy.stable_window:
        return False
    window = medians[-policy.stable_window:]
    ref = window[-1]
    return ref > 0 and all(abs(m - ref) <= policy.stable_rtol * ref for m in window)

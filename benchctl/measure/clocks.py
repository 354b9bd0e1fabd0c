"""Clocks: how long one call of a thunk takes. `CpuClock` reads a monotonic ns counter (and what the
OS did for the call); `CudaEventClock` records CUDA events around each repetition and synchronises
before reading them. Both are replaceable, so the timing loop is tested with fakes.
"""

from __future__ import annotations

import resource
import time
from typing import Any, Callable, NamedTuple, Protocol

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

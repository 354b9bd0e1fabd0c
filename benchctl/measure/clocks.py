"""Clocks: how long one call of a thunk takes. `CpuClock` reads a monotonic ns counter (and what the
OS did for the call); `CudaEventClock` records CUDA events around each repetition and synchronises
before reading them. Both are replaceable, so the timing loop is tested with fakes.
"""

from __future__ import annotations

import functools
import os
import resource
import time
from typing import Any, Callable, Iterable, NamedTuple, Protocol

from benchctl.measure import orphans

Thunk = Callable[[], Any]
NOTHING = object()  # a clock's `result` when no call has been timed since the last `take`


class Clock(Protocol):
    """Times one call of a thunk, in seconds."""

    def time(self, thunk: Thunk) -> float: ...


class OsUsage(NamedTuple):
    """What the OS counts for this process, all threads: page faults that needed no disk (first
    touches of memory), system CPU seconds (the kernel working for it, e.g. zeroing those pages), CPU
    seconds in all (user and system) and the wall clock when read: between two readings, CPU over wall is
    the cores its threads kept busy (cores.py), the readings' own cost included on both sides."""

    faults: int
    sys_s: float
    cpu_s: float = 0.0
    wall_s: float = 0.0
    threads_s: float = 0.0  # the part of cpu_s read from the listed threads' own clocks
    process_s: float = 0.0  # the process's CPU clock: all its threads', those that ended too (cores.ended)
    tasks: int = 0  # tasks (threads, processes) the kernel had made, machine-wide: a change says one was made

    def __sub__(self, other: OsUsage) -> OsUsage:
        return OsUsage(*(a - b for a, b in zip(self, other)))


TASKS = "/proc/self/task"


def thread_ids(tasks: str = TASKS) -> list[str]:
    """This process's threads now (none where there is no /proc: not Linux)."""
    try:
        return os.listdir(tasks)
    except OSError:
        return []


def thread_cpu_clock(tid: int) -> int:
    """The id of thread `tid`'s CPU clock (Linux: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED))."""
    return ((~tid) << 3) | 6


def process_cpu_clock(pid: int) -> int:
    """The id of process `pid`'s CPU clock, all its threads (Linux: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED))."""
    return ((~pid) << 3) | 2


LAST_TASK = "/proc/sys/kernel/ns_last_pid"


class TaskCount:
    """The id of the last task (thread or process) the kernel made in this PID namespace: it changes whenever
    one is made, by this process or any other (1 us to read). Where it cannot be read, every reading differs from
    the last: a task may have been made."""

    def __init__(self, path: str = LAST_TASK):
        try:
            self.fd: int | None = os.open(path, os.O_RDONLY)
        except OSError:
            self.fd = None
        self.unknown = 0

    def __call__(self) -> int:
        if self.fd is not None:
            try:
                return int(os.pread(self.fd, 32, 0))
            except (OSError, ValueError):
                pass
        self.unknown -= 1
        return self.unknown


@functools.cache
def task_count() -> TaskCount:
    """The process's one TaskCount (one file kept open, whatever the number of clocks made)."""
    return TaskCount()


class OsReader:
    """Reads an OsUsage: getrusage's faults and system time, and the CPU seconds of this process's threads, each
    from its own CPU clock: the kernel's runtime of the thread with its running part, where getrusage (and the
    process's clock) add a running thread's time only at the scheduler's ticks and switches. Summed over 50 ms of
    short calls with gaps between them, as a pass times them, two busy threads read 1.1-2.9 cores by getrusage
    and 1.87-2.10 by their own clocks. The threads are listed when made (after the cell's first call, so the
    pools it started are there) and again at each reading after the kernel made a task (TaskCount): a thread
    started later is read from then on, one that ended keeps its last reading. A thread that started and ended
    between two readings is in the process's clock only (`process_s`; cores.ended). Where no thread can be listed
    (no /proc), getrusage's user and system time stand in. Work handed to other processes counts too: the child
    processes listed when made (a pool the first call started) by their own CPU clocks until they are waited
    for, and from then on, as children that ended and were waited for, by getrusage."""

    def __init__(self, tasks: str = TASKS, children: Callable[[], Iterable[int]] = orphans.children,
                 made: Callable[[], int] | None = None):
        self.task_dir, self.made = tasks, made or task_count()
        self.last_made = self.made()
        self.threads: dict[int, float] = {}  # each listed thread's CPU clock -> its last reading
        self._list()
        self.children = {process_cpu_clock(pid): 0.0 for pid in children()} if self.threads else {}

    def _list(self) -> None:
        for tid in thread_ids(self.task_dir):
            self.threads.setdefault(thread_cpu_clock(int(tid)), 0.0)

    def __call__(self) -> OsUsage:
        made = self.made()
        if made != self.last_made and self.threads:
            self._list()
        self.last_made = made
        r = resource.getrusage(resource.RUSAGE_SELF)
        ended = resource.getrusage(resource.RUSAGE_CHILDREN)
        own, kids = (_read(self.threads), _read(self.children, ended=0.0)) if self.threads else \
            (r.ru_utime + r.ru_stime, 0.0)
        return OsUsage(r.ru_minflt, r.ru_stime, own + kids + ended.ru_utime + ended.ru_stime, time.perf_counter(),
                       own, time.clock_gettime(time.CLOCK_PROCESS_CPUTIME_ID), made)


def _read(clocks: dict[int, float], ended: float | None = None) -> float:
    """The clocks' CPU seconds, each read now and kept; a clock that cannot be read (its thread ended, its child
    process was waited for) keeps its last reading, or reads `ended` where given."""
    for clock, last in clocks.items():
        try:
            clocks[clock] = time.clock_gettime(clock)
        except OSError:
            clocks[clock] = last if ended is None else ended
    return sum(clocks.values())


class CpuClock:
    """perf_counter_ns around each call; also what the OS did for each call (`usage_per_call`, in
    order), read outside the clock (`usage`: an OsReader made with the clock, by default). A fresh multi-MB
    result faults in every 4 KiB page on its first write, which can cost more than computing it. An optional
    `before` hook (a cache flush, flush.py) runs before the OS's work is first read, so neither counts it."""

    def __init__(self, counter: Callable[[], int] = time.perf_counter_ns,
                 usage: Callable[[], OsUsage] | None = None, before: Thunk | None = None):
        self.counter = counter
        self.usage = usage or OsReader()
        self.before = before
        self.usage_per_call: list[OsUsage] = []
        self.result: Any = NOTHING

    def time(self, thunk: Thunk) -> float:
        self.result = NOTHING  # the last call's result, if nobody took it, is freed before this call
        if self.before is not None:
            self.before()
        used = self.usage() if self.usage else None
        start = self.counter()
        result = thunk()
        stop = self.counter()
        if used is not None:
            self.usage_per_call.append(self.usage() - used)
        self.result = result  # freeing the output (and a forward's graph) is not part of the call
        return (stop - start) * 1e-9

    def take(self) -> Any:
        """The last call's result, let go by the clock (its output is checked outside the clock: audit.py);
        NOTHING when no call was timed since the last take."""
        result, self.result = self.result, NOTHING
        return result


SPIN_CYCLES_PER_S = 3e9  # above any GPU's SM clock, so a spin lasts at least as long as asked
SPIN_FIRST_S = 1e-4  # before the first call's host time is known
SPIN_MAX_S = 1e-3  # a host-bound call is timed at host speed anyway; longer spins only cost wall time
# The device still busy this long after the call's own stream finished: the call left work on another
# stream, and that work's time is added to the sample. Measured as the host's wait in a device-wide
# synchronise beyond what one costs with nothing to wait for (the 90th percentile of the last IDLE_WINDOW
# idle ones: a synchronise that yields its thread can take tens of us on an idle device; a window, so the
# percentile costs the same at the 10,000th call as at the 10th).
STRAY_MIN_S = 50e-6
IDLE_QUANTILE, IDLE_WINDOW = 0.9, 128


def gpu_spin(seconds: float) -> None:
    """Queues a kernel that keeps the GPU busy for at least `seconds`."""
    import torch

    torch.cuda._sleep(int(seconds * SPIN_CYCLES_PER_S))


class CudaEventClock:
    """CUDA events around each repetition on the current stream, read after a synchronise; a sample is
    what the call costs in a loop that keeps the GPU fed: the larger of its GPU time and its host time.

    Before the start event a short spin kernel is queued (twice the last call's host time, at most
    SPIN_MAX_S), so the host issues the call while the GPU is still busy: the events then time the
    call's kernels, not the GPU waiting idle for the first launch. Without it, every sample carried
    that latency: on an H200, hoconv2d's cuda filter at B=16 timed 18% (forward) and 22% (backward) above
    torch.utils.benchmark's Timer on the same call; with it, within 1%. The host's time to issue the
    call (`host_per_call`, in order) still bounds the sample from below: a call whose host side (Python,
    dispatch, launches) is slower than its kernels is timed at host speed, as an eager loop runs it
    (hoconv2d's cuda filter forward at B=1 on an H100: ~60 us of host time for one kernel that moves
    6 MB). `gpu_per_call` keeps the events' times.

    The end event times the call's own stream; a call that queued work on another stream and returned is
    caught by a device-wide synchronise after the end event's: the time the device stayed busy after the
    event (the host's wait in it beyond an idle synchronise's, `idle_sync_s`; over STRAY_MIN_S) is added
    to the sample and kept in `stray_per_call`.

    `event_factory`, `synchronize` and `spin` default to torch.cuda's; tests pass fakes. An optional
    `before` hook (e.g. an L2 flush) runs before the start event is recorded, so it is not timed.
    """

    def __init__(self, event_factory: Callable[..., Any] | None = None,
                 synchronize: Callable[[], None] | None = None, before: Thunk | None = None,
                 counter: Callable[[], int] = time.perf_counter_ns,
                 spin: Callable[[float], None] = gpu_spin, wall: Callable[[], int] | None = None):
        # How long the device stayed busy after the end event: real time for a real device; nothing
        # strays on a fake one unless the test gives it a clock.
        self.wall = wall or (time.perf_counter_ns if synchronize is None else lambda: 0)
        if event_factory is None or synchronize is None:
            import torch

            event_factory = event_factory or (lambda: torch.cuda.Event(enable_timing=True))
            synchronize = synchronize or torch.cuda.synchronize
        self.event_factory = event_factory
        self.synchronize = synchronize
        self.before = before
        self.counter = counter
        self.spin = spin
        self.host_per_call: list[float] = []
        self.gpu_per_call: list[float] = []
        self.stray_per_call: list[float] = []
        self.idle_sync_s: list[float] = []  # a device-wide synchronise's wait with nothing queued, per call
        self.result: Any = NOTHING

    def time(self, thunk: Thunk) -> float:
        self.result = NOTHING  # the last call's result, if nobody took it, is freed before this call
        if self.before is not None:
            self.before()
        start, end = self.event_factory(), self.event_factory()
        self.synchronize()  # nothing queued earlier may leak into this sample
        self.idle_sync_s.append(self._synchronised())
        self.spin(min(2 * self.host_per_call[-1], SPIN_MAX_S) if self.host_per_call else SPIN_FIRST_S)
        start.record()
        issued = self.counter()
        result = thunk()
        returned = self.counter()
        end.record()
        end.synchronize()  # the call's own stream done ...
        stray = self._synchronised() - self._idle()  # ... then every stream: work left on another is the call's
        self.stray_per_call.append(stray if stray > STRAY_MIN_S else 0.0)
        self.host_per_call.append((returned - issued) * 1e-9)  # kept out of the events' window
        self.gpu_per_call.append(start.elapsed_time(end) * 1e-3 + self.stray_per_call[-1])  # elapsed_time: ms
        self.result = result  # freeing the output (and a forward's graph) is not part of the call
        return max(self.gpu_per_call[-1], self.host_per_call[-1])

    def _synchronised(self) -> float:
        """Seconds the host waited in a device-wide synchronise."""
        start = self.wall()
        self.synchronize()
        return (self.wall() - start) * 1e-9

    def _idle(self) -> float:
        ordered = sorted(self.idle_sync_s[-IDLE_WINDOW:])
        return ordered[int(IDLE_QUANTILE * (len(ordered) - 1))]

    take = CpuClock.take

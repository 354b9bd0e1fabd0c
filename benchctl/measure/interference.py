"""Whether the machine gave a timed call what it asked for, and the rule that sets a sample aside as
`disturbed`: on the CPU, the run-queue delay of this process's threads around each call; on a GPU, the
SM clock it ran at.

Linux counts, per thread, the time it spent runnable but not running (the second field of
/proc/self/task/TID/schedstat, in ns). A neighbour that holds a core shows there at once: on the 2-core
VM, with one busy process beside it, 7% of a 0.23 ms call's samples waited, each by a scheduler tick
(their median 4.3 ms against 0.23 ms for the others); with nothing beside it, 0.7% waited at all. All
threads count (the calling thread and torch's intra-op threads): one OpenMP thread waiting for a core
holds up the whole call.

Reading every thread's counter costs a few microseconds, so for a cheap call the counters are read
around a window of consecutive calls instead of each one, sized to keep the reads under READ_BUDGET of
the window's time; every sample of a disturbed window is set aside (docs/measuring.md, "Disturbed
samples").

On a GPU the same loop reads the SM clock through NVML before and after each window: samples taken while
either reading was below THROTTLED_BELOW of the maximum are set aside, as nvbench discards samples taken
while the GPU was throttled. A clock that dips and recovers within one window is not seen.
"""

from __future__ import annotations

import math
import os
import time
from typing import Callable, Protocol, Sequence

from benchctl.machine.gpu_clocks import THROTTLED_BELOW  # a GPU window below it is disturbed
from benchctl.measure.clocks import TASKS, Clock, Thunk, thread_ids

# A window is disturbed when its threads waited for a CPU, together, more than this share of its wall time.
DISTURBED_WAIT = 0.05
READ_BUDGET = 0.03  # the counters' reads take at most this share of a window's time
MAX_WINDOW = 1000  # calls per window at most, so a disturbance sets aside no more than these


class Queue(Protocol):
    """Seconds this process's threads have waited for a CPU so far (RunQueue, or a fake)."""

    def read(self) -> float: ...

    def close(self) -> None: ...


class Meter(Protocol):
    """What a watched clock reads around a window of calls: `open()` before its first call; `judge()`
    after its last, given that reading, the window's wall time and its calls: (disturbed, a reading per call)."""

    def open(self) -> float: ...

    def judge(self, opened: float, wall_s: float, calls: int) -> tuple[bool, float]: ...

    def close(self) -> None: ...


class RunQueueMeter:
    """The CPU's meter: a window is disturbed when its threads waited for a CPU over DISTURBED_WAIT of its
    wall time; the reading per call is the wait in seconds."""

    def __init__(self, queue: Queue):
        self.queue = queue

    def open(self) -> float:
        return self.queue.read()

    def judge(self, opened: float, wall_s: float, calls: int) -> tuple[bool, float]:
        delay = self.queue.read() - opened
        return is_disturbed(delay, wall_s), delay / calls

    def close(self) -> None:
        self.queue.close()


class SmClockMeter:
    """A GPU's meter: a window is disturbed when its SM clock read below THROTTLED_BELOW of the maximum
    before or after it (`read_mhz`, NVML); the reading per call is the lower clock, in MHz. A clock NVML
    cannot read counts as full."""

    def __init__(self, read_mhz: Callable[[], float | None], max_mhz: float):
        self.read_mhz, self.max_mhz = read_mhz, max_mhz

    def open(self) -> float:
        return self.read_mhz() or self.max_mhz

    def judge(self, opened: float, wall_s: float, calls: int) -> tuple[bool, float]:
        low = min(opened, self.read_mhz() or self.max_mhz)
        return low < THROTTLED_BELOW * self.max_mhz, low

    def close(self) -> None:
        pass


class RunQueue:
    """The summed run-queue delay of this process's threads (or of the `threads` named), in seconds,
    read from schedstat. Threads are listed when it is made (after the warm-up, torch's threads exist);
    one that ends later is left out, one that starts later is not seen."""

    def __init__(self, tasks: str = TASKS, threads: Sequence[int] | None = None):
        self.fds: list[int] = []
        for tid in thread_ids(tasks) if threads is None else map(str, threads):
            try:
                self.fds.append(os.open(os.path.join(tasks, tid, "schedstat"), os.O_RDONLY))
            except OSError:
                continue

    def __bool__(self) -> bool:
        return bool(self.fds)

    def read(self) -> float:
        total = 0
        for fd in self.fds:
            try:
                total += int(os.pread(fd, 128, 0).split()[1])
            except (OSError, IndexError, ValueError):  # the thread ended
                continue
        return total * 1e-9

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


class WatchedClock:
    """A clock whose calls are watched by a meter: each call's sample comes from the clock it wraps;
    `disturbed` and `readings` (the meter's reading per call: seconds waited on a CPU, MHz on a GPU)
    follow the calls in order, filled when each window closes (`flush` closes the one open). The window
    starts at one call and grows to the size that keeps the reads under READ_BUDGET of its wall time."""

    def __init__(self, clock: Clock, meter: Meter, counter: Callable[[], int] = time.perf_counter_ns,
                 read_cost_s: float | None = None, kind: str = "cpu"):
        self.clock = clock
        self.meter = meter
        self.kind = kind  # the device whose meter it is: what its readings mean
        self.counter = counter
        self.read_cost_s = read_cost(meter.open, counter) if read_cost_s is None else read_cost_s
        self.disturbed: list[bool] = []
        self.readings: list[float] = []
        self.window = 1
        self._open: tuple[float, int] | None = None  # (delay, counter) when the window opened
        self._calls = 0
        self._alone = False  # the next call is judged in a window of its own

    def alone(self) -> None:
        """The next call is judged in a window of its own: a call on data never drawn before (unseen.py), whose
        being set aside must be its own and not its neighbours'."""
        self.flush()
        self._alone = True

    def time(self, thunk: Thunk) -> float:
        if self._open is None:
            self._open = (self.meter.open(), self.counter())
        sample = self.clock.time(thunk)
        self._calls += 1
        if self._calls >= self.window or self._alone:
            self.flush(resize=not self._alone)
            self._alone = False
        return sample

    def flush(self, resize: bool = True) -> None:
        """Closes the open window: its calls are judged together (and, with `resize`, the next is sized by
        them). A window whose call raised (out of memory, say) has no call to judge, and closing it must not
        hide that call's error."""
        if self._open is None or self._calls == 0:
            self._open = None
            return
        wall = (self.counter() - self._open[1]) * 1e-9
        disturbed, reading = self.meter.judge(self._open[0], wall, self._calls)
        self.disturbed += [disturbed] * self._calls
        self.readings += [reading] * self._calls
        if resize:
            # by the window's wall time a call, not its samples': with the caches flushed before each call
            # (flush.py) a window of cheap calls sized by their samples spans a thousand times their time, and
            # a wait many calls long is under DISTURBED_WAIT of it
            self.window = window_for(self.read_cost_s, wall / self._calls)
        self._open, self._calls = None, 0

    def close(self) -> None:
        self.flush()
        self.meter.close()

    def __getattr__(self, name: str):  # the wrapped clock's records (usage_per_call, host_per_call, ...)
        if name == "clock":
            raise AttributeError(name)
        return getattr(self.clock, name)


def unwrapped(clock: Clock) -> Clock:
    """The clock that times the calls, under its watch if it has one."""
    return clock.clock if isinstance(clock, WatchedClock) else clock


def is_disturbed(delay_s: float, wall_s: float) -> bool:
    """The threads waited for a CPU more than DISTURBED_WAIT of the window's wall time."""
    return delay_s > DISTURBED_WAIT * wall_s


def window_for(read_cost_s: float, call_s: float) -> int:
    """Calls per window so that two reads of the counters cost at most READ_BUDGET of the window."""
    if call_s <= 0:
        return MAX_WINDOW
    return max(1, min(MAX_WINDOW, math.ceil(2 * read_cost_s / (READ_BUDGET * call_s))))


def read_cost(read: Callable[[], float], counter: Callable[[], int] = time.perf_counter_ns, reads: int = 5) -> float:
    """Seconds one read of the counters takes (the fastest of a few)."""
    best = math.inf
    for _ in range(reads):
        start = counter()
        read()
        best = min(best, (counter() - start) * 1e-9)
    return best


def watched(clock: Clock) -> WatchedClock | None:
    """`clock` watched for run-queue delay, where the OS reports it (Linux)."""
    queue = RunQueue()
    return WatchedClock(clock, RunQueueMeter(queue)) if queue else None


def watched_gpu(clock: Clock, read_mhz: Callable[[], float | None], max_mhz: float) -> WatchedClock | None:
    """`clock` watched for the GPU's SM clock, where its maximum is known."""
    return WatchedClock(clock, SmClockMeter(read_mhz, max_mhz), kind="cuda") if max_mhz > 0 else None

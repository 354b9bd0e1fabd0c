"""The load of other processes all through a run: how many cores they kept busy, and the steal time, once
a second, for the run's metadata (`timeline`) and the report's machine chart.

Busy cores come from /proc/stat (all processes) less the CPU time of this process and its descendants
(the sweep's workers and what they start), read from /proc/PID/stat. Steal is the time the hypervisor
gave this VM's CPUs to someone else. A look at the start of a run (`busy_cores_at_start`) misses whatever starts
later: a compile beside a sweep, a test run, a browser. Each CPU pass reads the same ticks before and after it
(`ticks`, `other_cores`): the cores its neighbours kept busy while it was timed, a row's `other_cores`.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from benchctl.results.schema import BUSY_WARN_CORES

INTERVAL_S = 1.0
QUIET_READINGS = 3  # readings in a row under BUSY_WARN_CORES that end a wait for quiet, once one was over it
PROC = Path("/proc")
Ticks = tuple[int, int, int, int]  # jiffies: busy, steal and total over all CPUs; this process tree's own
BUSY_SHARE = 0.1  # of a run's timeline with BUSY_WARN_CORES or more kept busy, from which its summary says so


def machine_ticks(proc: Path = PROC) -> tuple[int, int, int]:
    """(busy, steal, total) jiffies over all CPUs, from the first line of /proc/stat."""
    fields = [int(v) for v in (proc / "stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    steal = fields[7] if len(fields) > 7 else 0
    return sum(fields) - idle - steal, steal, sum(fields)


def own_ticks(pid: int, proc: Path = PROC) -> int:
    """CPU jiffies (user + system) of process `pid` and all its descendants (a worker's compile workers,
    a profiler and the process it samples), from /proc/PID/stat, with those of the children each has
    waited for: a descendant's time moves to its parent's when it ends, and left out it read as another
    process's (a child that spun 3 s and ended put 3.03 busy cores on a 2-core timeline, one sample)."""
    parents, ticks = {}, {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        # fields after the name: state, ppid, ..., utime (12), stime (13), cutime (14), cstime (15)
        parents[int(entry.name)], ticks[int(entry.name)] = int(fields[1]), sum(map(int, fields[11:15]))
    ours, found = set(), {pid}
    while found:
        ours |= found
        found = {child for child, parent in parents.items() if parent in found and child not in ours}
    return sum(ticks.get(p, 0) for p in ours)


def ticks(pid: int | None = None, proc: Path = PROC) -> Ticks | None:
    """The machine's jiffies and those of process `pid` (this one) with its descendants; None without /proc."""
    try:
        return (*machine_ticks(proc), own_ticks(pid or os.getpid(), proc))
    except (OSError, ValueError, IndexError):  # no /proc, or a file read while it changed
        return None


def other_cores(before: Ticks | None, after: Ticks | None) -> float | None:
    """The cores other processes than this one and its descendants kept busy between two `ticks` readings
    (None where either is missing): a pass's neighbours, whether or not its threads waited for them."""
    if before is None or after is None:
        return None
    found = load_between(before, after, os.cpu_count() or 1)
    return found["other_cores"] if found else None


class Timeline:
    """Samples the load every `interval` seconds in a daemon thread while it runs (a context manager).
    `samples` holds {"t": seconds since the start, "other_cores": busy cores not ours, "steal_cores"}."""

    def __init__(self, interval: float = INTERVAL_S, proc: Path = PROC, pid: int | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.interval, self.proc, self.pid, self.clock = interval, proc, pid or os.getpid(), clock
        self.samples: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "Timeline":
        previous = ticks(self.pid, self.proc)
        if previous is None:  # no /proc: nothing to sample
            return self
        start = self.clock()
        self._thread = threading.Thread(target=self._loop, args=(previous, start), name="load-timeline", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def other_cores(self) -> float | None:
        """The median of the busy cores of other processes over the samples (None before the first): a
        neighbour that runs through most of the block, not one moment's."""
        return statistics.median(s["other_cores"] for s in self.samples) if self.samples else None

    def _loop(self, previous: Ticks, start: float) -> None:
        while not self._stop.wait(self.interval):
            now = ticks(self.pid, self.proc)
            if now is None:  # a file read while it changed: the next one
                continue
            sample = load_between(previous, now, os.cpu_count() or 1)
            if sample is not None:
                self.samples.append({"t": round(self.clock() - start, 2), **sample})
            previous = now


def others_busy(interval: float = INTERVAL_S, proc: Path = PROC,
                sleep: Callable[[float], None] = time.sleep) -> float | None:
    """The cores other processes than this one and its descendants keep busy, over the next `interval` seconds."""
    before = ticks(proc=proc)
    sleep(interval)
    return other_cores(before, ticks(proc=proc))


def wait_for_quiet(seconds: float, read: Callable[[], float | None] | None = None,
                   clock: Callable[[], float] = time.monotonic) -> tuple[float | None, float]:
    """Reads the cores other work keeps busy (`read`: others_busy, over a second) until the machine reads quiet
    (`_quiet`), `seconds` readings at most (one at least): the most of the last QUIET_READINGS (under
    BUSY_WARN_CORES only where it read quiet; None: the machine cannot tell), and the seconds taken."""
    start, found = clock(), []
    for _ in range(max(1, int(seconds))):
        found.append((read or others_busy)())
        if found[-1] is None or _quiet(found):
            break
    return None if found[-1] is None else max(found[-QUIET_READINGS:]), clock() - start  # None only ever last


def _quiet(found: Sequence[float]) -> bool:
    """The first reading under BUSY_WARN_CORES; once one was over it, the last QUIET_READINGS: a loop of compiles
    read under it for the second between two files, and the sweep that went on then ran beside it."""
    needed = 1 if len(found) == 1 else QUIET_READINGS
    recent = found[-needed:]
    return len(recent) == needed and all(r < BUSY_WARN_CORES for r in recent)


def busy_stretch(samples: Sequence[Mapping[str, float]], share: float = BUSY_SHARE) -> dict[str, float] | None:
    """Where other work kept BUSY_WARN_CORES or more busy for `share` of a timeline's samples or more: the
    median of those samples' busy cores (`cores`) and their share of the timeline (`share`), as a run's metadata
    keeps them (`busy_stretch`); else None."""
    busy = [s["other_cores"] for s in samples if s["other_cores"] >= BUSY_WARN_CORES]
    if not samples or len(busy) < share * len(samples):
        return None
    return {"cores": round(statistics.median(busy), 2), "share": round(len(busy) / len(samples), 3)}


def load_between(before: Ticks, after: Ticks, cores: int) -> dict[str, float] | None:
    """Busy cores of other processes and steal cores between two readings (busy, steal, total, own)."""
    busy, steal, total, own = (a - b for a, b in zip(after, before))
    if total <= 0:
        return None
    return {"other_cores": round(max(0.0, (busy - own) / total * cores), 3),
            "steal_cores": round(steal / total * cores, 3)}

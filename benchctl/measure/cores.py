"""The cores a cell's calls kept busy, against torch's threads it was given (held.py holds the count).

The cores a pass's calls kept busy (`cpu_cores`): the CPU seconds of the process's threads, and of its child
processes, over the wall time of its timed calls (clocks.OsReader, read outside the clock). torch's own work
keeps at most its threads busy (its OpenMP team spins between parallel regions, so even serial torch code reads
near them); a call that keeps more busy ran threads of its own (a std::thread pool, an OpenMP team of its own
size, Python threads, a process pool), and its time is not comparable with implementations held to the threads
given (schema.beyond_threads). A thread started and ended within a call (a pool made for the call and shut down
before it returns, as naive code does) is never listed: its CPU seconds are in the process's CPU clock only
(`ended`). Where such a pool did half the work (10.6 ms against 12.0 for the work on the one thread given), the
calls read 0.05 cores by the listed threads alone, 1.37-1.69 with `ended`.
"""

from __future__ import annotations

from typing import Sequence

from benchctl.analysis.timed_alike import threads_words
from benchctl.measure.clocks import OsUsage
from benchctl.results.schema import beyond_threads


def busy(usage: Sequence[OsUsage]) -> float | None:
    """The cores the calls kept busy on average: their CPU seconds, with those of threads that ended within them,
    over their wall time (None: none timed)."""
    wall = sum(u.wall_s for u in usage)
    return (sum(u.cpu_s for u in usage) + ended(usage)) / wall if wall > 0 else None


def ended(usage: Sequence[OsUsage]) -> float:
    """The CPU seconds of threads that started and ended within the calls: what the process's clock counted beyond
    the listed threads' own clocks, in the calls during which the kernel made a task (at most a few in an honest
    pass, on a machine where other processes start some). The process's clock adds another running thread's time
    only at ticks and switches, so a call's difference is off by up to a tick per such thread, either way; summed
    over every call of an honest pass on torch's 2 threads it read 0.05-1.4 cores below the threads' own clocks.
    Hence the sum over the pass, never below 0, rather than each call's."""
    return max(0.0, sum(map(_unlisted, usage)))


def _unlisted(usage: OsUsage) -> float:
    """What the process's clock counted in one call beyond the listed threads' clocks, where the kernel made a task
    meanwhile (a thread may have started and ended within it); 0 where it made none."""
    return usage.process_s - usage.threads_s if usage.tasks else 0.0


def call_cpu(usage: OsUsage) -> float:
    """One call's CPU seconds, with those of threads that started and ended within it where the kernel made a task
    meanwhile (`ended`, for one call): what unseen.by_cpu judges a call on data never given before by. A result
    cache can work out each miss on a thread of the call's own while processes not its children crowd the
    machine, so that the watch sets the miss aside and its work is in no listed thread's clock: by those alone
    its misses read 12-134x their neighbours beside a busy test run, close to the bar of 10. Honest calls on
    torch's 2 threads read 4.5 us more (median) by the process's clock, 17.5 us beside a compile loop."""
    return usage.cpu_s + max(0.0, _unlisted(usage))


def beyond(busy_cores: float | None, threads: int) -> str:
    """What a row says where its calls kept more cores busy than torch's `threads` given (schema.beyond_threads),
    or ''."""
    if not beyond_threads(busy_cores, threads):
        return ""
    return (f"its calls kept {busy_cores:.2f} CPU cores busy with torch given {threads_words(threads)}: it ran "
            "threads of its own, so its time is not comparable with the others'")

"""The cores a cell's calls kept busy, against torch's threads it was given (held.py holds the count).

The cores a pass's calls kept busy (`cpu_cores`): the CPU seconds of the process's threads, and of its child
processes, over the wall time of its timed calls (clocks.OsReader, read outside the clock). torch's own work
keeps at most its threads busy (its OpenMP team spins between parallel regions, so even serial torch code reads
near them); a call that keeps more busy ran threads of its own (a std::thread pool, an OpenMP team of its own
size, Python threads, a process pool), and its time is not comparable with implementations held to the threads
given (schema.beyond_threads). Threads started after the cell's first call are not counted here.
"""

from __future__ import annotations

from typing import Sequence

from benchctl.analysis.verdict import threads_words
from benchctl.measure.clocks import OsUsage
from benchctl.results.schema import beyond_threads


def busy(usage: Sequence[OsUsage]) -> float | None:
    """The cores the calls kept busy on average: their CPU seconds over their wall time (None: none timed)."""
    wall = sum(u.wall_s for u in usage)
    return sum(u.cpu_s for u in usage) / wall if wall > 0 else None


def beyond(busy_cores: float | None, threads: int) -> str:
    """What a row says where its calls kept more cores busy than torch's `threads` given (schema.beyond_threads),
    or ''."""
    if not beyond_threads(busy_cores, threads):
        return ""
    return (f"its calls kept {busy_cores:.2f} CPU cores busy with torch given {threads_words(threads)}: it ran "
            "threads of its own, so its time is not comparable with the others'")

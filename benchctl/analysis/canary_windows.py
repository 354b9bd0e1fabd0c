"""What a calibration's canary windows say (`env --calibrate` reads the canary in a few windows spread over
it, on each thread count a run takes): how far they spread, and whether the machine's speed moved on several
threads while one thread's held. On the 2-core VM the canary on two threads sat at 1.02-1.05x or at 1.64-1.75x
its calibrated time for 10 s to over a minute at a time, one thread at 0.99-1.02x all through
(benchmarks/thread_phases_bench.py)."""

from __future__ import annotations

from typing import Any, Mapping

from benchctl.results.schema import SLOW_PHASE


def windows(peaks: Mapping[str, Any], threads: int | None) -> list[float]:
    """The calibration's canary windows on `threads` threads (s; [] for a count it did not read them on). A
    calibration from before it kept each count's has those on the threads it ran at."""
    by_threads = peaks.get("canary_windows_by_threads")
    if by_threads:
        return by_threads.get(str(threads), [])
    return peaks.get("canary_windows_s", []) if threads == peaks.get("threads") else []


def spread(peaks: Mapping[str, Any], threads: int | None) -> float | None:
    """The slowest of the calibration's canary windows on `threads` threads over the fastest (the calibrated
    time); None without windows."""
    found = windows(peaks, threads)
    return max(found) / min(found) if found and min(found) > 0 else None


def only_threads_move(peaks: Mapping[str, Any], threads: int | None) -> bool:
    """Whether the calibration read the canary on `threads` threads (more than one) spread past SLOW_PHASE while
    one thread's stayed within it: the machine's parallel speed moves and one thread's holds."""
    return (threads or 1) > 1 and slow_on_threads_alone(spread(peaks, threads), spread(peaks, 1))


def slow_on_threads_alone(many: float | None, one: float | None) -> bool:
    """Whether a ratio to the canary's calibrated time on several threads (`many`) is past SLOW_PHASE while one
    thread's (`one`) is within it."""
    return bool(many and one and many > 1 + SLOW_PHASE >= one)

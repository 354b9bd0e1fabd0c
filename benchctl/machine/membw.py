"""The memory bandwidth this machine gives right now: a short read taken beside each CPU measurement.

On a shared host (a cloud VM) the other tenants' memory traffic moves the bandwidth one process gets
by 2x and more within minutes, and every memory-bound timing moves with it. On a 2-core cloud VM a
sequential read of 80 MB took from 1.0 to 3.3 ms within ten minutes, and hoconv2d's cpp forward
(B=16, bound by reading its 80 MB of weights) from 2.7 to 5.0 ms along with it. A row that records
the bandwidth around its own measurement tells a slow machine from a slow implementation: `run`
marks the cells measured while it was well below the run's median, and `compare` warns when two runs
had different bandwidth.

The probe sums a float32 buffer four times the size of the last-level cache (at least 64 MiB, at most
256 MiB) on the threads the measurement uses, and takes the median of three reads: 10 to 60 ms per
probe. Part of a buffer only twice the cache stays cached: a probe right after another read ran up to
1.7x faster than one after a larger read (84-96 against 49-74 GB/s with a 32 MiB L3); four times the
cache, 1.2x (35-38 against 29-31 GB/s), small beside what other tenants do to it. With a 260 MiB L3
(a quiet 2-core VM) a 64 MiB buffer read at 48-55 GB/s, mostly from the cache; 256 MiB at 28-29 GB/s
in 28 ms a probe, and 1 GiB at 26-28 in 123 ms: beyond 256 MiB the probe only gets slower.
"""

from __future__ import annotations

import functools
import statistics
import time
from typing import Callable

import torch

from benchctl.machine import caches

MIN_BYTES, MAX_BYTES = 64 << 20, 256 << 20
READS = 3


def last_level_cache_bytes() -> int:
    """The largest cache's size, as the kernel reports it; 0 where it does not say."""
    found = caches.cpu_caches()
    return found[-1].bytes if found else 0


def buffer_bytes(cache_bytes: int) -> int:
    """Four times the cache, so the reads come from memory and not from the cache; at least MIN_BYTES,
    at most MAX_BYTES."""
    return min(MAX_BYTES, max(MIN_BYTES, 4 * cache_bytes))


@functools.lru_cache(maxsize=1)
def probe_buffer() -> torch.Tensor:
    """One buffer per process, written once (so its pages exist before the first probe)."""
    return torch.ones(buffer_bytes(last_level_cache_bytes()) // 4, dtype=torch.float32)


def read_gbps(buffer: torch.Tensor, reads: int = READS,
              timer: Callable[[], float] = time.perf_counter) -> float:
    """GB/s of the median of `reads` full reads (a sum) of `buffer`."""
    times = []
    for _ in range(reads):
        start = timer()
        buffer.sum()
        times.append(timer() - start)
    median = statistics.median(times)
    return buffer.nbytes / median * 1e-9 if median > 0 else float("nan")


def probe() -> float:
    return read_gbps(probe_buffer())

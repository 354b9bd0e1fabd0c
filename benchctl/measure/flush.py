"""What makes each timed call start on cold caches (run --flush-caches): a buffer larger than the device's last
cache level, touched before each call, outside the clock (clocks.py's `before` hook).

Timed back to back, a call finds in the caches what the call before it left there, and a call that reads a
little of a large input (grid_sample at image size 1024: 64 points a sample of a 50 MB image) is timed on a
cache a model running it once per step would not give it. Two implementations timed by turns evict each
other's data, so such a cell read 0.066 ms alone and 0.10-0.26 ms beside its partner on the 2-core VM, and
the paired speedup and the medians' ratio were two answers. Flushed before each call, both sides, and a cell
timed alone, start from DRAM.

On a GPU the buffer is twice the L2 and is written (nvbench's way). On a CPU it is twice the largest cache
level of all its cores together and is read by torch's threads: a read evicts each core's own L2 as well as
the shared L3, and leaves no dirty lines whose write-back the timed call would pay. The buffer is written
once when made, so its pages are its own and not the one shared zero page.
"""

from __future__ import annotations

import os

import torch

from benchctl.machine.caches import cpu_caches
from benchctl.measure.clocks import Thunk
from benchctl.vocab import Device

TIMES_LAST_LEVEL = 2  # the buffer is this many times the last level's capacity
LEAST_BYTES = 64 << 20  # where the machine does not say its caches' sizes
_MADE: dict[tuple[str, int], Thunk] = {}  # (device, GPU index) -> its flusher, made once


def flusher(device: str) -> Thunk:
    """A thunk that leaves `device`'s caches cold; run before each timed call. One buffer a device in a
    process, shared by every clock that flushes there (a cell's, its partner's, the next cell's): each making its
    own cost a paired pass another 64 MiB, written in 17 ms, on the 2-core VM."""
    key = (device, torch.cuda.current_device() if device == Device.CUDA else -1)
    if key not in _MADE:
        _MADE[key] = gpu_flusher() if device == Device.CUDA else cpu_flusher(cpu_flush_bytes())
    return _MADE[key]


def cpu_flush_bytes(cpus: int | None = None) -> int:
    """TIMES_LAST_LEVEL the largest cache level's capacity over all `cpus` (default: this machine's); at least
    LEAST_BYTES."""
    cpus = cpus or os.cpu_count() or 1
    largest = max((c.capacity(cpus) for c in cpu_caches()), default=0)
    return max(TIMES_LAST_LEVEL * largest, LEAST_BYTES)


def cpu_flusher(nbytes: int) -> Thunk:
    """Reads a float32 buffer of `nbytes` on torch's threads."""
    buf = torch.ones(nbytes // 4, dtype=torch.float32)
    return lambda: buf.sum()


def gpu_flusher() -> Thunk:
    """Writes a buffer twice the size of the GPU's L2 cache."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    size = max(int(getattr(props, "L2_cache_size", 0)) * TIMES_LAST_LEVEL, LEAST_BYTES)
    buf = torch.empty(size, dtype=torch.uint8, device="cuda")
    return lambda: buf.zero_()

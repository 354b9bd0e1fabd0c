"""Peak memory of one repetition of a pass, measured, not estimated.

CUDA: the caching allocator's peak above what was allocated before the pass. CPU: the process's
resident-set high-water mark (VmHWM, reset through /proc/self/clear_refs) above the resident size
before the pass. Free heap pages are returned to the system first (malloc_trim), so memory the pass
needs shows up as new resident pages instead of hiding in reused free lists. The allocator's settings
are left alone: changing them would change the timings taken in the same process.
"""

from __future__ import annotations

import ctypes
import gc
from pathlib import Path
from typing import Callable

import torch

from benchctl.measure.clocks import Thunk
from benchctl.measure.timing import YOUNG_GENERATIONS
from benchctl.vocab import Device


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise OSError(f"{field} not in /proc/self/status")


def cpu_peak_bytes(setup: Callable[[], Thunk]) -> float | None:
    """Extra resident bytes at the peak of one thunk() call; None where Linux /proc is not available."""
    libc = _libc()
    try:
        thunk = setup()
        gc.collect(YOUNG_GENERATIONS)
        if libc is not None:
            libc.malloc_trim(0)
        base = _status_kib("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        thunk()
        return float(max(_status_kib("VmHWM") - base, 0) * 1024)
    except OSError:
        return None


def cuda_peak_bytes(setup: Callable[[], Thunk], device: torch.device | str = "cuda") -> float:
    thunk = setup()
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    thunk()
    torch.cuda.synchronize(device)
    return float(torch.cuda.max_memory_allocated(device) - base)


def peak_bytes(setup: Callable[[], Thunk], device: str) -> float | None:
    return cuda_peak_bytes(setup) if device == Device.CUDA else cpu_peak_bytes(setup)

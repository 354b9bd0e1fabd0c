"""Peak memory of one repetition of a pass, measured, not estimated; and the memory its calls keep.

CUDA: the caching allocator's peak above what was allocated before the pass. CPU: the process's
resident-set high-water mark (VmHWM, reset through /proc/self/clear_refs) above the resident size
before the pass. Free heap pages are returned to the system first (malloc_trim; tcmalloc's where it is
preloaded; the result blocks the extensions keep), so memory the pass needs shows up as new resident pages
instead of hiding in reused free lists. The allocator's settings are left alone: changing them would change
the timings taken in the same process.

Kept: the memory in use (CUDA: allocated; CPU: resident, free heap pages returned first) after each of
KEPT_CALLS calls, their results let go of: what the calls after the first kept, each, is memory no call
freed (a leak: outputs or graphs kept in a global list, a cache keyed by something new every call). The
first call's own is set apart: it may fill a cache once (a gradient buffer, a compiled kernel).
"""

from __future__ import annotations

import ctypes
import gc
from dataclasses import dataclass
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


KEPT_CALLS = 3
KEPT_MIN_BYTES = 1 << 20  # each call: below it, the Python heap's own growth (its arenas are 1 MiB)


@dataclass(frozen=True)
class Footprint:
    peak_bytes: float | None  # above the memory in use before, at the peak of one call
    kept_bytes: float | None = None  # what each call after the first kept after returning


def _resident(libc: ctypes.CDLL | None) -> int:
    """This process's resident bytes, the young garbage collected and free memory returned first: the
    extensions' kept result blocks, glibc's free heap pages (malloc_trim), and tcmalloc's where it is preloaded
    (`run --allocator tcmalloc`), whose cache would otherwise hand the pass memory already resident (a 300 MiB
    peak read 0-26 MiB under it)."""
    gc.collect(YOUNG_GENERATIONS)
    _release_kept_outputs()
    if libc is not None:
        libc.malloc_trim(0)
    release = getattr(ctypes.CDLL(None), "MallocExtension_ReleaseFreeMemory", None)
    if release is not None:
        release()
    return _status_kib("VmRSS") * 1024


RELEASE_OUTPUTS = "benchctl_release_outputs"  # the op an extension that keeps its result blocks defines


def _release_kept_outputs() -> None:
    """The blocks the loaded extensions keep for their large results back to the OS (benchctl_output.h): kept,
    the next call's results reuse them and add no resident pages, and the pass's peak reads 0."""
    for name in torch._C._dispatch_get_all_op_names():
        namespace, _, op = name.partition("::")
        if op == RELEASE_OUTPUTS:
            getattr(getattr(torch.ops, namespace), op)()


def cpu_footprint(setup: Callable[[], Thunk], calls: int = KEPT_CALLS) -> Footprint:
    """The peak of one call above the resident size before it, and what each later call kept; None where Linux
    /proc is not available."""
    libc = _libc()
    try:
        thunk = setup()
        base = _resident(libc)
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        thunk()
        peak = float(max(_status_kib("VmHWM") * 1024 - base, 0))
        del thunk
        return Footprint(peak, _kept(setup, calls, lambda: _resident(libc)))
    except OSError:
        return Footprint(None)


def cuda_footprint(setup: Callable[[], Thunk], calls: int = KEPT_CALLS,
                   device: torch.device | str = "cuda") -> Footprint:
    thunk = setup()
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    thunk()
    torch.cuda.synchronize(device)
    peak = float(torch.cuda.max_memory_allocated(device) - base)
    del thunk

    def allocated() -> int:
        gc.collect(YOUNG_GENERATIONS)
        torch.cuda.synchronize(device)
        return torch.cuda.memory_allocated(device)

    return Footprint(peak, _kept(setup, calls, allocated))


def _kept(setup: Callable[[], Thunk], calls: int, in_use: Callable[[], int]) -> float | None:
    """What each call after the first kept: the memory in use after the last of `calls` calls over that after the
    first (already made: its thunk let go of), per call; None for one call."""
    if calls < 2:
        return None
    first = in_use()
    for _ in range(calls - 1):
        setup()()
    return (in_use() - first) / (calls - 1)


def footprint(setup: Callable[[], Thunk], device: str, calls: int = KEPT_CALLS) -> Footprint:
    return cuda_footprint(setup, calls) if device == Device.CUDA else cpu_footprint(setup, calls)


def kept(bytes_per_call: float | None) -> str:
    """What a row says where each call kept KEPT_MIN_BYTES or more, or ''."""
    if bytes_per_call is None or bytes_per_call < KEPT_MIN_BYTES:
        return ""
    return (f"its calls kept {bytes_per_call / 2**20:.1f} MiB each after returning, memory no call freed (a leak, or a "
            "cache that grows with every call): the worker's memory grows with each call")


def peak_bytes(setup: Callable[[], Thunk], device: str) -> float | None:
    """The peak of one call alone."""
    return footprint(setup, device, calls=1).peak_bytes

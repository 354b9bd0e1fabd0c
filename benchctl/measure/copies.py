"""The copies a calibration times on a device, and their rates: from DRAM, within each cache level, and at each
size between them (machine/caches.py holds a pass's bytes to them).

A copy's GB/s counts the bytes read plus the bytes written; its source and destination together are the bytes it
holds (`held_bytes`), the size a pass's bytes are compared with.
"""

from __future__ import annotations

from typing import Any

import torch

from benchctl.machine import caches
from benchctl.measure.execute import make_clock
from benchctl.measure.timing import Policy, measure
from benchctl.vocab import Device

COPY_BYTES = 256 * 1024 * 1024
# A window of a copy rate: the calibration takes several, spread over it, and keeps the fastest window's median.
# One window of 10 s read the 2-core VM's DRAM copy at 31.8 GB/s in one calibration and 66.9 in the
# next, an hour later (benchmarks/README.md, "Copy peaks").
COPY_POLICY = Policy(warmup=2, min_samples=10, min_time=0.5, max_time=2.0)


def copy_gbps(device: str, nbytes: int = COPY_BYTES) -> float:
    """A tensor copy of `nbytes` (DRAM by default), counting the bytes read plus the bytes written: its median
    call over a window of COPY_POLICY."""
    src = torch.ones(max(nbytes // 4, 1), dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    m = measure(lambda: (lambda: dst.copy_(src)), make_clock(device), COPY_POLICY)
    return 2 * src.numel() * 4 / m.median * 1e-9


def copy_window(device: str) -> dict[str | int, float]:
    """One window of copies: GB/s from DRAM ("DRAM", `dram_source`), within each cache level (`copy_sources`), and
    at each size between them (`between_sources`, keyed by their source bytes). Every window times them all: a
    size timed in fewer windows than DRAM's copy misses the VM's fast phases more often (six windows back to back
    on the 2-core VM: the best of the first and last read the copies holding 32-256 MiB 1.36-1.53x under the best
    of all six, DRAM's 1.49x; the in-cache ones within 2%), and a pass of its size would be held to too low a rate."""
    found: dict[str | int, float] = {"DRAM": copy_gbps(device, dram_source(device))}
    found.update({name: copy_gbps(device, size) for name, size in copy_sources(device).items()})
    found.update({size: copy_gbps(device, size) for size in between_sources(device)})
    return found


def best_copies(windows: list[dict[str | int, float]], device: str) -> dict[str, Any]:
    """The fastest of the windows' copy rates, from DRAM (`gbps`) and within each cache level (`levels`: its
    capacity, its rate, and the bytes the copy timed in it held, source and destination), and every copy timed
    by the bytes it held (`copy_sizes`, smallest first: the ceiling a working set is held to, machine/caches.py)."""
    best: dict[str | int, float] = {}
    for window in windows:
        for key, gbps in window.items():
            best[key] = max(best.get(key, 0.0), gbps)
    sources = {"DRAM": dram_source(device), **copy_sources(device)}
    held = {held_bytes(sources[key] if isinstance(key, str) else key): gbps for key, gbps in best.items()}
    return {"gbps": best["DRAM"], "copy_bytes": held_bytes(sources["DRAM"]),
            "levels": {name: {"bytes": size, "gbps": best[name], "copy_bytes": held_bytes(sources[name])}
                       for name, size in level_bytes(device).items()},
            "copy_sizes": [{"copy_bytes": nbytes, "gbps": held[nbytes]} for nbytes in sorted(held)]}


def held_bytes(source: int) -> int:
    """The bytes a copy of `source` bytes holds: its source and its destination."""
    return 2 * source


def cache_sizes(device: str) -> list[caches.CacheSize]:
    if device == Device.CUDA:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        size = int(getattr(props, "L2_cache_size", 0))
        return [caches.CacheSize("L2", size, 1)] if size else []
    return caches.cpu_caches()


def level_bytes(device: str) -> dict[str, int]:
    """Each cache level's capacity for the pass's threads, smallest first."""
    threads = torch.get_num_threads() if device == Device.CPU else 1
    return {cache.name: cache.capacity(threads) for cache in cache_sizes(device)}


def copy_sources(device: str) -> dict[str, int]:
    """The source bytes of the copy timed within each cache level: a quarter of its capacity (source and
    destination fill half of it), or, where that is less, twice the capacity of the level below (source and
    destination fill four times it), so that the copy is surely out of the level below and surely within this
    one. A VM's share of a large L3 is far less than the kernel reports: with a 480 MiB L3, copies holding 8 to
    64 MiB ran at 57-58 GB/s and one holding 240 MiB (half of it, the rule before) at 29, a DRAM rate, which
    put honest passes at up to 173% of peak (benchmarks/copy_sizes_bench.py)."""
    sources, below = {}, None
    for name, capacity in level_bytes(device).items():
        sources[name] = capacity // 4 if below is None else min(capacity // 4, 2 * below)
        below = capacity
    return sources


def dram_source(device: str) -> int:
    """The source bytes of the DRAM copy: COPY_BYTES, or twice the largest cache level's capacity where that is
    more (source and destination fill four times it, as a level's copy is held out of the level below). A server
    whose L3 across all its cores holds 1 GiB would time a copy of 512 MiB from its cache, and every pass's
    `% of peak` against a DRAM rate it never reaches."""
    return max(COPY_BYTES, 2 * max(level_bytes(device).values(), default=0))


def between_sources(device: str) -> list[int]:
    """The source bytes of the copies timed between the levels' and the DRAM one: each doubling from the smallest
    level's copy up to the DRAM copy. A working set between a level's copy and its capacity was held to that
    copy's rate, which a VM's share of the level need not reach: on a 2-core VM with a 32 MiB L3, copies holding
    8 and 16 MiB ran at 156-159 GB/s, one holding 32 MiB at 104 and 64 MiB at 57 (DRAM: 45)."""
    ends = sorted({*copy_sources(device).values(), dram_source(device)})
    found, size = [], 2 * ends[0]
    while size < ends[-1]:
        if size not in ends:
            found.append(size)
        size *= 2
    return found

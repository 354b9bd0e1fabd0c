"""This machine's cache levels and the bandwidth ceiling a pass is held against.

A working set that fits in a cache is read from that cache, not from DRAM, so holding it against DRAM
bandwidth gives percentages of peak far above 100. `env --calibrate` therefore measures a copy within each
cache level (copies.copy_sources), the DRAM copy, and copies at each doubling between them; a pass's bytes
are held to what a copy of their size does, read between the two copies timed either side of them, and named
after the level whose capacity holds the smaller: its `peak_level`. A VM's share of a cache can be far less
than its capacity (on one 2-core VM a copy holding all of its 32 MiB L3 ran at 104 GB/s, one holding a quarter
of it at 156), so a working set near a level's capacity is held to what a copy of its size did, not to the
level's best, nor to DRAM's just past the capacity. A level's capacity is what the threads of a pass can use
together: a private L2 per core counts once per thread, a shared L3 once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

CPU_CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
DRAM = "DRAM"


@dataclass(frozen=True)
class CacheSize:
    """One cache level as the kernel describes it: its size and how many CPUs share one instance."""

    name: str
    bytes: int
    shared_by: int

    def capacity(self, threads: int) -> int:
        """The bytes `threads` threads can keep in this level at once (one instance per sharing group)."""
        return self.bytes * math.ceil(max(threads, 1) / max(self.shared_by, 1))


@dataclass(frozen=True)
class Level:
    """A bandwidth ceiling: the copy GB/s a working set of up to `bytes` is held to (DRAM: unbounded), and where
    it is a copy timed at one size, the bytes that copy held (`held`)."""

    name: str
    bytes: float
    gbps: float
    held: float | None = None


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip()
    return int(text[:-1]) * units[text[-1]] if text[-1:] in units else int(text)


def _cpu_count(cpu_list: str) -> int:
    """CPUs in a list such as "0-3,8": the kernel's shared_cpu_list format."""
    count = 0
    for part in filter(None, cpu_list.strip().split(",")):
        first, _, last = part.partition("-")
        count += int(last or first) - int(first) + 1
    return count


def cpu_caches(root: Path = CPU_CACHE_DIR) -> list[CacheSize]:
    """The data caches from L2 up (L1 is too small for a copy to be timed), smallest first; [] where
    the kernel does not say."""
    found = []
    for index in sorted(root.glob("index*")):
        try:
            level, kind = int((index / "level").read_text()), (index / "type").read_text().strip()
            size, shared = _size((index / "size").read_text()), _cpu_count((index / "shared_cpu_list").read_text())
        except (OSError, ValueError):
            continue
        if level >= 2 and kind in ("Data", "Unified"):
            found.append(CacheSize(f"L{level}", size, shared))
    return sorted(found, key=lambda c: c.bytes)


def levels(peak: Mapping[str, Any]) -> list[Level]:
    """The ceilings one device's calibration holds, smallest working set first, DRAM last: the copies it timed
    at each size (`by_copy_size`), or each level's copy up to its capacity for a calibration from before those.
    A ceiling is never below a larger one: a small copy can lose to its own call overhead, while a working set
    that fits a level surely moves at least as fast as one that spills out of it."""
    found = by_copy_size(peak) or by_capacity(peak)
    out, floor = [], 0.0
    for level in reversed(found):
        floor = max(floor, level.gbps)
        out.append(replace(level, gbps=floor))
    return out[::-1]


def by_capacity(peak: Mapping[str, Any]) -> list[Level]:
    """Each level's copy rate for every working set up to its capacity, DRAM's beyond."""
    found = [Level(name, float(v["bytes"]), float(v["gbps"])) for name, v in peak.get("levels", {}).items()]
    return sorted(found, key=lambda lv: lv.bytes) + ([Level(DRAM, math.inf, float(peak["gbps"]))]
                                                     if peak.get("gbps") else [])


def by_copy_size(peak: Mapping[str, Any]) -> list[Level]:
    """Each copy timed, smallest first, for working sets up to the next copy's size, named after the level whose
    capacity holds it; [] for a calibration without `copy_sizes`."""
    copies = sorted((float(c["copy_bytes"]), float(c["gbps"])) for c in peak.get("copy_sizes", ()))
    capacities = sorted((float(v["bytes"]), name) for name, v in peak.get("levels", {}).items())
    names = [next((name for size, name in capacities if held <= size), DRAM) for held, _ in copies]
    ends = [held for held, _ in copies[1:]] + [math.inf]
    return [Level(name, end, gbps, held) for name, end, (held, gbps) in zip(names, ends, copies)]


def level_for(working_set: float, ceilings: list[Level]) -> Level | None:
    """The ceiling of a working set; None without a calibration. By capacity: the smallest level it fits in. By
    copy size: the rate of the two copies timed either side of it, read between them on a log-log line (a copy
    rate falls by a factor per doubling across a cache's edge), the smaller's below the smallest and the
    largest's above the largest. A step to the smaller copy's rate read a working set just past a 2-core VM's
    32 MiB L3 (48 MiB) against the 32 MiB copy's 104 GB/s where the 64 MiB copy did 57."""
    if not ceilings or ceilings[0].held is None:
        return next((lv for lv in ceilings if working_set <= lv.bytes), None)
    at = next(i for i, lv in enumerate(ceilings) if working_set < lv.bytes)  # its copy's, up to the next copy's size
    level, above = ceilings[at], ceilings[at + 1:at + 2]
    if not above or working_set <= level.held:
        return level
    share = math.log(working_set / level.held) / math.log(above[0].held / level.held)
    return replace(level, gbps=level.gbps * (above[0].gbps / level.gbps) ** share)

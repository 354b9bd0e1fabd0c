"""This machine's cache levels and the bandwidth ceiling a pass is held against.

A working set that fits in a cache is read from that cache, not from DRAM, so holding it against DRAM
bandwidth gives percentages of peak far above 100. `env --calibrate` therefore measures a copy within each
cache level (calibrate.copy_sources) as well as the DRAM copy, and a pass's bytes pick the smallest level they
fit in: its `peak_level`. A level's capacity is what the threads of a pass can use together: a private L2 per
core counts once per thread, a shared L3 once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
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
    """A bandwidth ceiling: the copy GB/s measured with a working set of `bytes` (DRAM: unbounded)."""

    name: str
    bytes: float
    gbps: float


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
    """The ceilings one device's calibration holds, smallest working set first, DRAM last. A level is
    never below a larger one: a small copy can lose to its own call overhead, while a working set that
    fits a level surely moves at least as fast as one that spills out of it."""
    found = [Level(name, float(v["bytes"]), float(v["gbps"])) for name, v in peak.get("levels", {}).items()]
    found = sorted(found, key=lambda lv: lv.bytes) + ([Level(DRAM, math.inf, float(peak["gbps"]))]
                                                        if peak.get("gbps") else [])
    out, floor = [], 0.0
    for level in reversed(found):
        floor = max(floor, level.gbps)
        out.append(Level(level.name, level.bytes, floor))
    return out[::-1]


def level_for(working_set: float, ceilings: list[Level]) -> Level | None:
    """The smallest level the working set fits in; None without a calibration."""
    return next((lv for lv in ceilings if working_set <= lv.bytes), None)

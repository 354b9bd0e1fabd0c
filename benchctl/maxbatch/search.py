"""The largest batch size that completes a pass: doubling until a failure, then bisection.

`search` is pure logic over a probe function (batch size -> fits or not), so it is tested without
allocating anything; the CLI probes with real cells in a worker process under a memory limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


@dataclass
class SearchResult:
    largest_ok: int | None
    smallest_failed: int | None
    probes: list[tuple[int, bool]] = field(default_factory=list)
    capped: bool = False  # stopped at the search limit without a failure


def search(fits: Callable[[int], bool], start: int = 1, limit: int = 1 << 16) -> SearchResult:
    """Doubles from `start` while `fits`, then bisects between the last fit and the first failure."""
    result = SearchResult(None, None)

    def probe(b: int) -> bool:
        ok = fits(b)
        result.probes.append((b, ok))
        return ok

    b = start
    while b <= limit and probe(b):
        result.largest_ok = b
        b *= 2
    if b > limit:
        result.capped = True
        return result
    result.smallest_failed = b
    low, high = result.largest_ok or 0, b
    while high - low > 1:
        mid = (low + high) // 2
        if probe(mid):
            low = result.largest_ok = mid
        else:
            high = result.smallest_failed = mid
    return result


def parse_size(text: str) -> int:
    """'2G', '512M', '1.5G', '1000000' -> bytes."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)I?B?\s*", text.upper())
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 512M or 2G)")
    return int(float(m.group(1)) * UNITS[m.group(2)])


def default_cpu_limit(fraction: float = 0.5) -> int:
    """A safe share of the memory available now, so probing never pushes the machine into swap."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(int(line.split()[1]) * 1024 * fraction)
    raise OSError("MemAvailable not in /proc/meminfo")

"""The memory allocator a worker runs under: glibc's (system), jemalloc or tcmalloc, chosen through
LD_PRELOAD as PyTorch's CPU performance guide recommends.

Large temporaries (a gradient buffer of tens of MB) are where allocators differ: glibc serves them with
mmap above its threshold and gives the pages back on free, so the next call faults every page in again
(hundreds of page faults and tens of ms of system time per call); jemalloc and tcmalloc keep such memory
for reuse. Which allocator a row was measured under is recorded in it.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from benchctl.vocab import Allocator

# name -> the shared library to preload (Debian: libjemalloc2, libtcmalloc-minimal4); system: none
LIBRARIES = {Allocator.SYSTEM: None, Allocator.JEMALLOC: "libjemalloc.so.2",
             Allocator.TCMALLOC: "libtcmalloc_minimal.so.4"}
PACKAGES = {Allocator.JEMALLOC: "libjemalloc2", Allocator.TCMALLOC: "libtcmalloc-minimal4"}
SEARCH = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")


class AllocatorMissing(LookupError):
    pass


def library(name: str, search: tuple[str, ...] = SEARCH) -> Path | None:
    """The library to preload for allocator `name` (None for the system allocator)."""
    filename = LIBRARIES[name]
    if filename is None:
        return None
    for folder in search:
        if (Path(folder) / filename).exists():
            return Path(folder) / filename
    raise AllocatorMissing(f"{name} is not installed here ({filename}); on Debian or Ubuntu: "
                           f"apt-get install {PACKAGES[name]}")


def preload_env(name: str, search: tuple[str, ...] = SEARCH) -> dict[str, str]:
    """Environment for a worker process that runs under allocator `name`."""
    path = library(name, search)
    if path is None:
        return {}
    kept = [p for p in os.environ.get("LD_PRELOAD", "").split(":") if p]
    return {"LD_PRELOAD": ":".join([str(path), *kept])}


@functools.lru_cache(maxsize=1)
def current(maps: Path = Path("/proc/self/maps")) -> str:
    """The allocator this process runs under, from the libraries it has mapped."""
    try:
        text = maps.read_text()
    except OSError:
        return Allocator.SYSTEM
    return next((name for name, lib in LIBRARIES.items() if lib and lib.split(".so")[0] in text), Allocator.SYSTEM)

"""How the CPU worker's memory allocator treats large blocks (`benchctl run --allocator`).

glibc serves a block above its mmap threshold (at most 32 MiB) with mmap and gives it back with munmap
when it is freed. A call that makes a large tensor therefore gets fresh pages every time, and the
kernel zero-fills each on its first write: on a VM that can be most of the call (hoconv2d's py
backward at B=16 spends 1.1 s of OS time in a 0.97 s call on two cores). Whether an implementation
pays it depends on its temporaries' sizes and on the heap the cells before it left behind.

- `system`: the process's allocator as configured (glibc's defaults unless the environment says
  otherwise).
- `reuse`: every block comes from the heap (no mmap) and the heap is never trimmed, so a freed block
  serves the next call without new pages, as it would under a caching allocator (jemalloc, tcmalloc,
  or PyTorch's own on the GPU). The memory a worker has used is not given back until it exits.

Set through glibc's environment tunables when the worker process starts, so not with `--in-process`.
"""

from __future__ import annotations

import platform

from benchctl.errors import UsageError

ALLOCATORS: dict[str, dict[str, str]] = {
    "system": {},
    "reuse": {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(2**62)},
}


def worker_environment(name: str, in_process: bool = False) -> dict[str, str]:
    """The environment variables a worker needs for allocator `name`. Raises UsageError where they
    cannot take effect."""
    if name not in ALLOCATORS:
        raise UsageError(f"unknown allocator {name!r}; choose from {', '.join(ALLOCATORS)}")
    env = ALLOCATORS[name]
    if env and in_process:
        raise UsageError(f"--allocator {name} configures the worker process at its start: drop --in-process")
    if env and platform.libc_ver()[0] != "glibc":
        raise UsageError(f"--allocator {name} sets glibc's malloc tunables, and this Python does not use glibc")
    return dict(env)

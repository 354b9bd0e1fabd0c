"""Whether a call ran out of memory (`is_oom`), and whether the kernel's OOM killer ended a process: the
memory cgroup's `oom_kill` counter.

A worker killed with SIGKILL while no --mem-limit was set was most often killed for memory, by the
kernel or by its cgroup. The counter of the cgroup the sweep runs in (cgroup v2 `memory.events`, v1
`memory.oom_control`) rises by one for each process the OOM killer ends there; read before and after a
cell, it says so. Without a readable counter the cause stays a likely one.
"""

from __future__ import annotations

from pathlib import Path

import torch

PROC_CGROUP = Path("/proc/self/cgroup")
CGROUP_ROOT = Path("/sys/fs/cgroup")


def counter_file(proc_cgroup: Path = PROC_CGROUP, root: Path = CGROUP_ROOT) -> Path | None:
    """The file holding this process's cgroup oom_kill counter; None where there is none to read."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):  # cgroup v1
            candidate = root / "memory" / path.lstrip("/") / "memory.oom_control"
        elif controllers == "":  # cgroup v2: one hierarchy
            candidate = root / path.lstrip("/") / "memory.events"
        else:
            continue
        if candidate.is_file():
            return candidate
    return None


def kills(path: Path | None) -> int | None:
    """The oom_kill count in `path`; None when it cannot be read."""
    if path is None:
        return None
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def is_oom(exc: BaseException) -> bool:
    """Whether `exc` is an allocation that failed (on the GPU or in the CPU's allocator)."""
    if isinstance(exc, (torch.cuda.OutOfMemoryError, MemoryError)):
        return True
    text = str(exc)
    return "out of memory" in text.lower() or "DefaultCPUAllocator: can't allocate memory" in text

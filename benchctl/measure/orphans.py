"""Processes the measured code started and left running: a process that outlives the calls can do their
work untimed, or rewrite the run's files later. Linux lists a process's children per thread
(/proc/self/task/*/children); the ones that appear during a cell's timed passes and are still running at
its end make the cell an `error` (the worker's whole process group is ended with it: sweep/executors.py).
Children from the cell's first call (a compiler's worker pool, say) were there before and do not count."""

from __future__ import annotations

import glob

CHILDREN = "/proc/self/task/*/children"


def children() -> set[int]:
    pids: set[int] = set()
    for path in glob.glob(CHILDREN):
        try:
            with open(path) as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            continue  # a thread that ended meanwhile
    return pids


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except (OSError, IndexError):
        return False


def left_running(before: set[int]) -> str:
    """Why the cell cannot be trusted when it left processes running, or ''."""
    new = sorted(p for p in children() - before if _running(p))
    if not new:
        return ""
    return (f"the measured code started {len(new)} process(es) that were still running after its calls "
            f"(pid {', '.join(map(str, new[:3]))}): their work is not timed, and they are ended with the worker")

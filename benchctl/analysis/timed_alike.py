"""Whether two rows' calls were timed alike, and how each was timed, in words: the clock's mode (eager, or
CUDA-graph replays), caches flushed before each call or not (run --flush-caches), torch's threads and the memory
allocator of a CPU cell. Rows timed differently measure different things: `compare` gives them no verdict and
`history` puts them in series of their own.

A CPU row from before CPU caches could be flushed has no `flush_l2`; its calls ran on warm caches, so it reads as
not flushed. A GPU row without it is unknown, and held against neither.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from benchctl.vocab import Device, TimingMode

TIMED_APART = "timed differently"  # no verdict at all, not even `same`: the two times measure different things
FLUSHED = {Device.CPU: "caches flushed", Device.CUDA: "L2 flushed"}  # a row's words for its cold-cache calls


def timed_apart(base: Mapping, new: Mapping) -> str | None:
    """Why two rows' times cannot be held against each other: their calls were timed differently (eager
    against CUDA-graph replays, which leave the host out; warm caches against caches flushed before each call;
    a CPU cell given another count of torch's threads, or run under another memory allocator: a large buffer
    faulted in afresh each call under glibc's took 2-10x as long as under tcmalloc's, which keeps it). A GPU row
    from before `flush_l2` was recorded (a row from before `allocator` was) leaves it unknown, and unjudged."""
    a, b = _timing(base), _timing(new)
    if a[0] != b[0] or (None not in (a[1], b[1]) and a[1] != b[1]):
        return f"{TIMED_APART}: {_timing_words(a)} in BASE, {_timing_words(b)} in NEW"
    given = [_cpu_threads(row) for row in (base, new)]
    if None not in given and given[0] != given[1]:
        return f"{TIMED_APART}: on {threads_words(given[0])} in BASE, {given[1]} in NEW"
    malloc = [row.get("allocator") if base.get("device") == Device.CPU else None for row in (base, new)]
    if None in malloc or malloc[0] == malloc[1]:
        return None
    return f"{TIMED_APART}: under the {malloc[0]} allocator in BASE, {malloc[1]} in NEW"


def threads_words(count: int) -> str:
    """`count` of torch's threads, in words: 1 thread, 2 threads."""
    return f"{count} thread" + ("s" if count != 1 else "")


def _cpu_threads(row: Mapping) -> int | None:
    """torch's threads a CPU row was given (None: a GPU row's, or not recorded)."""
    threads = row.get("threads")
    if row.get("device") != Device.CPU or threads is None or pd.isna(threads):
        return None
    return int(threads)


def timing_kinds(rows: pd.DataFrame) -> pd.Series:
    """How each row's calls were timed, in words, where not eager on warm caches (` (cuda_graph)`,
    ` (eager, L2 flushed)`, ` (eager, caches flushed)`), else "": what a history's series, a chart's panel and a
    table's title add."""
    facts = rows.reindex(columns=["timing_mode", "flush_l2", "device"]).astype(object).to_dict("records")
    words = [_timing_words(_timing(row)) for row in facts]
    return pd.Series([f" ({w})" if w != TimingMode.EAGER else "" for w in words], index=rows.index, dtype=object)


def thread_kinds(rows: pd.DataFrame) -> pd.Series:
    """Each CPU row's count of torch's threads, in words (` (2 threads)`), else "" (a GPU row, or not recorded)."""
    facts = rows.reindex(columns=["device", "threads"]).astype(object).to_dict("records")
    given = [_cpu_threads(row) for row in facts]
    return pd.Series([f" ({threads_words(n)})" if n else "" for n in given], index=rows.index, dtype=object)


def flushed(row: Mapping) -> bool | None:
    """Whether the row's calls started on flushed caches (None: a GPU row from before it was recorded)."""
    return _timing(row)[1]


def _timing(row: Mapping) -> tuple[str, bool | None, str]:
    """The row's timing mode, whether its caches were flushed (None: unknown) and its device."""
    mode, flushed, device = row.get("timing_mode"), row.get("flush_l2"), row.get("device")
    known = isinstance(flushed, (bool, np.bool_))
    return (mode if isinstance(mode, str) and mode else "eager",
            bool(flushed) if known else (False if device == Device.CPU else None), device)


def _timing_words(timing: tuple[str, bool | None, str]) -> str:
    return timing[0] + (f", {FLUSHED.get(timing[2], FLUSHED[Device.CUDA])}" if timing[1] else "")

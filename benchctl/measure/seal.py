"""The clocks and the statistics, sealed: a measured call that replaces them is caught.

The measured code runs in the process that times it, so it can reach the objects that time it: the
`time` module's counters, a clock's `counter`, `timing.summarize`. The worker takes a fingerprint of them
(`bind`) after importing benchctl and before importing any operator file; after a cell's first call and
gate, and after each pass, `broken` compares them with it and names what changed. A cell whose timing code
changed is an `error`. What the fingerprint covers: every function, class attribute and constant of the
timing modules and of what the pairs' ratios are taken with (SEALED), the `time` module's counters, torch's CUDA event and synchronise, and the
callables a clock holds.

The worker's parent also recomputes each row's statistics from its samples (sweep/executors.py), so a
statistic patched where the fingerprint cannot see still does not reach the results.
"""

from __future__ import annotations

import sys
import time
from typing import Any

SEALED = tuple(f"benchctl.measure.{m}" for m in (
    "audit", "clocks", "correctness", "cuda_graph", "execute", "fresh", "gate", "interference", "kept", "paired",
    "passes", "pooling", "prepared", "rates", "references", "result", "seal", "stats", "timing", "trust", "unseen",
)) + ("benchctl.analysis.pairs", "benchctl.results.schema", "benchctl.vocab")
COUNTERS = ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time")

Marks = dict[str, Any]
_bound: Marks = {}


def _mark(value: Any) -> Any:
    """What identifies a value: a function by itself and its code, anything else by itself."""
    code = getattr(value, "__code__", None)
    return (id(value), id(code)) if code is not None else id(value)


def _marks_of(prefix: str, namespace: dict[str, Any], marks: Marks) -> None:
    for name, value in list(namespace.items()):
        if name.startswith("__") and name != "__init__":
            continue
        marks[f"{prefix}.{name}"] = _mark(value)
        if isinstance(value, type) and value.__module__ == prefix:
            _marks_of(f"{prefix}.{name}", dict(vars(value)), marks)


def fingerprint() -> Marks:
    marks: Marks = {f"time.{n}": _mark(getattr(time, n)) for n in COUNTERS}
    for name in SEALED:
        module = sys.modules.get(name)
        if module is not None:
            _marks_of(name, dict(vars(module)), marks)
    torch = sys.modules.get("torch")
    if torch is not None:
        marks["torch.cuda.Event"] = _mark(torch.cuda.Event)
        marks["torch.cuda.synchronize"] = _mark(torch.cuda.synchronize)
    return marks


def clock_marks(clock: Any) -> Marks:
    """The callables a clock (and the clock it wraps, and its meter) holds."""
    marks: Marks = {}
    for owner in (clock, getattr(clock, "__dict__", {}).get("clock"), getattr(clock, "meter", None)):
        if owner is not None:
            marks.update({f"{type(owner).__name__}.{k}": _mark(v) for k, v in vars(owner).items() if callable(v)})
            marks[f"{type(owner).__name__}.__class__"] = id(type(owner))
    return marks


def bind() -> None:
    """Takes the fingerprint the cells are held against (once: before any operator file is imported)."""
    if not _bound:
        _bound.update(fingerprint())


def broken(before: Marks | None = None, after: Marks | None = None) -> str:
    """What changed since `bind` (or between two marks), as a message; '' when nothing did."""
    if before is None:
        bind()
        before, after = _bound, fingerprint()
    assert after is not None
    changed = sorted(k for k, v in before.items() if after.get(k) != v)
    if not changed:
        return ""
    return ("the measured code replaced benchctl's timing code (" + ", ".join(changed[:3]) +
            (f" and {len(changed) - 3} more" if len(changed) > 3 else "") + "): its times cannot be trusted")

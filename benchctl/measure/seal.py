"""The clocks and the statistics, sealed: a measured call that replaces them is caught.

The measured code runs in the process that times it, so it can reach the objects that time it: the
`time` module's counters, a clock's `counter`, `timing.summarize`. The worker takes a fingerprint of them
(`bind`) after importing benchctl and before importing any operator file; after a cell's first call and
gate, and after each pass, `broken` compares them with it and names what changed. A cell whose timing code
changed is an `error`. What the fingerprint covers: every function, class attribute and constant of the
timing modules and of what the pairs' ratios are taken with (SEALED), the `time` module's counters, and the
callables a clock holds.

The libraries are sealed too (LIBRARIES, CLASSES, HOOKS): every callable of the modules the harness calls
between a timed call and its look at the output, and that references are written with. An implementation
that put its work into `threading.active_count` (which the audit calls before it reads an output) left
each output empty when timed and whole when checked: 39x its reference, `ok`, re-checked. One that made
`torch.tanh` run eight times, where its own code called the method `Tensor.tanh`, slowed the reference
and not itself: 3.7x. A trace or profile hook, or a collector callback, runs code at any call.

The worker's parent also recomputes each row's statistics from its samples (sweep/executors.py), so a
statistic patched where the fingerprint cannot see still does not reach the results.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from typing import Any

SEALED = tuple(f"benchctl.measure.{m}" for m in (
    "audit", "clocks", "cores", "correctness", "cuda_graph", "execute", "fresh", "gate", "held", "interference",
    "kept", "paired", "passes", "pooling", "prepared", "rates", "references", "result", "seal", "stats", "timing",
    "trust", "unseen",
)) + ("benchctl.analysis.pairs", "benchctl.results.schema", "benchctl.vocab")
LIBRARIES = ("builtins", "gc", "math", "numpy", "os", "random", "resource", "threading", "torch", "torch.autograd",
             "torch.cuda", "torch.fft", "torch.linalg", "torch.nn.functional", "torch.special")
CLASSES = (("torch", "Tensor"), ("torch.autograd", "Function"))  # every name they answer to, inherited too
COUNTERS = ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time",
            "clock_gettime")

# What runs code beside the program's own calls, by what it reads now.
HOOKS = {
    "sys.gettrace": lambda: id(sys.gettrace()), "sys.getprofile": lambda: id(sys.getprofile()),
    "threading.gettrace": lambda: id(threading.gettrace()), "threading.getprofile": lambda: id(threading.getprofile()),
    "gc.callbacks": lambda: tuple(map(id, gc.callbacks)),
}

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


def _unwrapped(value: Any, home: str) -> Any:
    """A callable as it was before torch (whose files are under `home`) wrapped it in a function of its own
    (importing torch._dynamo wraps `torch.manual_seed`); a wrapper from anywhere else is the callable."""
    while home and getattr(getattr(value, "__code__", None), "co_filename", "").startswith(home + os.sep):
        inner = getattr(value, "__wrapped__", None)
        if inner is None:
            break
        value = inner
    return value


def _library_marks(marks: Marks) -> None:
    """Every callable of LIBRARIES and CLASSES, and the interpreter's hooks (HOOKS)."""
    torch = sys.modules.get("torch")
    home = os.path.dirname(torch.__file__) if torch is not None else ""
    for name in LIBRARIES:
        module = sys.modules.get(name)
        for key, value in (vars(module) if module is not None else {}).items():
            if not key.startswith("__") and callable(value):
                marks[f"{name}.{key}"] = _mark(_unwrapped(value, home))
    for module_name, class_name in CLASSES:
        cls = getattr(sys.modules.get(module_name), class_name, None)
        for key in dir(cls) if cls is not None else ():
            owner = next((c for c in cls.__mro__ if key in vars(c)), None)  # the attribute as stored, not bound
            value = vars(owner)[key] if owner is not None else None
            if callable(value) or isinstance(value, (classmethod, staticmethod)):
                marks[f"{module_name}.{class_name}.{key}"] = (id(owner), _mark(value))
    for name, read in HOOKS.items():
        marks[name] = read()


def fingerprint() -> Marks:
    marks: Marks = {f"time.{n}": _mark(getattr(time, n)) for n in COUNTERS}
    _library_marks(marks)
    for name in SEALED:
        module = sys.modules.get(name)
        if module is not None:
            _marks_of(name, dict(vars(module)), marks)
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
    library = all(k.startswith(tuple(f"{m}." for m in (*LIBRARIES, "sys"))) for k in changed)
    what = "what the harness and the references call" if library else "benchctl's timing code"
    return (f"the measured code replaced {what} (" + ", ".join(changed[:3]) +
            (f" and {len(changed) - 3} more" if len(changed) > 3 else "") + "): its times cannot be trusted")

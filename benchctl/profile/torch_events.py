"""What torch.profiler's events say of the timed loop: the top operators by self time, and the operator stacks
the torch profile's flame graph is drawn from.

The loop's timed thunks run inside `record_function(TORCH_RANGE)`; an event counts when it lies inside one
of those ranges. On a GPU a kernel is two events: a device event of its own and a kernel of the CPU operator
that launched it, whose `self_device_time_total` it makes. A device share is therefore taken of the device
events' time alone (as torch's own table does), and the flame graph's kernels hang from the operators that
launched them. Events are read by attribute only (name, time_range, cpu_parent, self times, kernels,
device_type), so there is no torch import here and tests pass stand-ins.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from benchctl.profile.stacks import Stacks

TORCH_RANGE = "benchctl.timed"
CPU_TIME, KERNEL_TIME = "CPU", "GPU kernel"  # what an operator stack's microseconds are of


def on_device(event: Any) -> bool:
    """A device event (a CUDA kernel or copy), not a CPU operator."""
    kind = getattr(event, "device_type", "CPU")
    return str(getattr(kind, "name", kind)) != "CPU"


def _ranges(events: list[Any]) -> list[tuple[float, float]]:
    return [(e.time_range.start, e.time_range.end) for e in events if e.name == TORCH_RANGE]


def _in_ranges(event: Any, ranges: list[tuple[float, float]]) -> bool:
    return any(lo <= event.time_range.start and event.time_range.end <= hi for lo, hi in ranges)


def timed(events: Iterable[Any]) -> list[Any]:
    """The events inside the timed ranges, the ranges themselves left out. By time range rather than by
    parent: the autograd engine runs a GPU graph's backward on threads of its own, not under the range."""
    events = list(events)
    ranges = _ranges(events)
    return [e for e in events if e.name != TORCH_RANGE and _in_ranges(e, ranges)]


def top_ops(events: Iterable[Any]) -> list[dict[str, Any]]:
    """Operators and device events inside the timed ranges, aggregated by name, by self time. Shares are of
    the device events' time where there are any (an operator's share is its kernels'), else of CPU time."""
    rows: dict[str, dict[str, Any]] = {}
    device_us = 0.0
    for e in timed(events):
        row = rows.setdefault(e.name, {"name": e.name, "calls": 0, "self_cpu_us": 0.0, "self_device_us": 0.0,
                                       "self_cpu_mem_bytes": 0, "self_device_mem_bytes": 0})
        row["calls"] += 1
        row["self_cpu_us"] += e.self_cpu_time_total
        row["self_device_us"] += e.self_device_time_total
        row["self_cpu_mem_bytes"] += e.self_cpu_memory_usage
        row["self_device_mem_bytes"] += e.self_device_memory_usage
        row["device"] = on_device(e)  # a kernel or copy, not an operator
        device_us += e.self_device_time_total if row["device"] else 0.0
    key = "self_device_us" if device_us > 0 else "self_cpu_us"
    total = device_us or sum(r["self_cpu_us"] for r in rows.values()) or 1.0
    for r in rows.values():
        r["pct"] = 100.0 * r[key] / total
    return sorted(rows.values(), key=lambda r: -r[key])


def _path(event: Any) -> list[str]:
    """The operator's name under its callers', up to the timed range (not included)."""
    names = []
    while event is not None and event.name != TORCH_RANGE:
        names.append(event.name)
        event = getattr(event, "cpu_parent", None)
    return names[::-1]


def op_stacks(events: Iterable[Any]) -> tuple[Stacks, str]:
    """The timed loop's operator stacks as collapsed stacks rooted at TORCH_RANGE, weighted in whole
    microseconds, and what they are of: GPU kernel time where the operators launched kernels (each kernel a
    leaf under its operator), else CPU self time (the range's own, the Python between operators, at its root)."""
    events = list(events)
    ops = [e for e in timed(events) if not on_device(e) and not getattr(e, "is_async", False)]
    weights: dict[tuple[str, ...], float] = defaultdict(float)
    for e in ops:
        for kernel in getattr(e, "kernels", ()):
            weights[(TORCH_RANGE, *_path(e), kernel.name)] += kernel.duration
    kind = KERNEL_TIME if weights else CPU_TIME
    if not weights:
        for e in [*(e for e in events if e.name == TORCH_RANGE), *ops]:  # the ranges' own time at the root
            weights[(TORCH_RANGE, *_path(e))] += e.self_cpu_time_total
    stacks = [(list(stack), round(us)) for stack, us in weights.items()]
    return [(stack, us) for stack, us in stacks if us > 0], kind

"""An operator's implementation by name: a registered one, or a registered one with a modifier
(`py@compile:max-autotune`, modifiers.py), built once per process so its compiled code and Dynamo's cache
last for the whole sweep in a worker."""

from __future__ import annotations

from benchctl.ops import compiling, modifiers
from benchctl.ops.registry import Implementation, Operator

_MODIFIED: dict[tuple[str, str], Implementation] = {}  # (operator, canonical name) -> built once


def find(op: Operator, name: str) -> Implementation:
    """KeyError if `op` has no such implementation; UsageError for a malformed modifier."""
    if name in op.implementations:
        return op.implementations[name]
    if not modifiers.is_modified(name):
        raise KeyError(f"{op.name} has no implementation {name!r}")
    name = modifiers.canonical(name)
    if (op.name, name) not in _MODIFIED:
        base, spec = modifiers.split(name)
        if base not in op.implementations:
            raise KeyError(f"{op.name} has no implementation {base!r} (in {name!r})")
        _MODIFIED[op.name, name] = compiling.modify(op.implementations[base], name, spec)
    return _MODIFIED[op.name, name]


def known(op: Operator, name: str) -> bool:
    """Whether `find(op, name)` finds one (a malformed modifier still raises UsageError)."""
    base = modifiers.split(name)[0] if modifiers.is_modified(name) else name
    return base in op.implementations


def alias(op: Operator, name: str, modified: str) -> None:
    """Register `name` as the modified implementation `modified` (e.g. `compile` for `py@compile`), so rows
    keep a name they carried before the modifier existed."""
    if name in op.implementations:
        raise ValueError(f"{op.name}: implementation {name!r} registered twice")
    base, spec = modifiers.split(modified)
    op.implementations[name] = compiling.modify(op.implementations[base], name, spec)

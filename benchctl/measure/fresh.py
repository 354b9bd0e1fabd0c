"""Inputs the implementation has not seen: every timed call gets new tensor objects holding new data.

An implementation timed on the same input objects call after call can cache its result by the input
(its identity, or its storage address) and be timed doing nothing. So the cell keeps a few data sets
(`SOURCES`, built from their own seeds before timing, prepared like the first one) and, before each call
and outside the clock, copies the next one into the storage of the cell's inputs and hands the call
fresh tensor objects over that storage (new leaves for the inputs that require grad). Consecutive calls
never see the same data in the same place, and no two calls see the same tensor objects.

A copy of the inputs per call costs wall time, never a sample: the clock covers the call alone. A cell
whose data sets would take more than POOL_BYTES keeps fewer (at least one: then only the objects are
new). Which data set a call had (`Draw.source`) lets a timed call's output be checked afterwards against
the reference on the same data (audit.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from benchctl.ops.cells import Resolved
from benchctl.ops.registry import Case, Inputs

SOURCES = 3  # data sets the calls rotate over
SOURCE_SEED = 1000  # data set j is made at the cell's seed + SOURCE_SEED + j (the gate uses seed and seed + 1)
POOL_BYTES = 512 * 1024 * 1024  # at most this much memory for the data sets


@dataclass(frozen=True)
class Draw:
    """One call's inputs: fresh objects over the cell's storage, holding data set `source`."""

    inputs: Inputs
    source: int


def tensor_bytes(inputs: Inputs) -> int:
    return sum(t.numel() * t.element_size() for t in inputs.values() if isinstance(t, torch.Tensor))


def sources_for(set_bytes: int) -> int:
    return max(1, min(SOURCES, POOL_BYTES // max(set_bytes, 1)))


def seed_of(cell_seed: int, source: int) -> int:
    """The seed of data set `source` (-1: the cell's own data, which its first call had)."""
    return cell_seed if source < 0 else cell_seed + SOURCE_SEED + source


def raw_inputs(resolved: Resolved, source: int, dtype: torch.dtype | None = None,
               device: str | None = None) -> Inputs:
    """Data set `source` as the target makes it (before the implementation's `prepare`)."""
    cell = resolved.cell
    case = Case(cell.params, dtype or cell.torch_dtype, device or cell.device, seed_of(cell.seed, source))
    return resolved.target.make_inputs(case)


def _prepared(resolved: Resolved, source: int) -> Inputs:
    inputs = raw_inputs(resolved, source)
    return resolved.impl.prepare(inputs) if resolved.impl.prepare is not None else inputs


def _copyable(store: Inputs, data: Inputs) -> bool:
    """Every tensor of `store` has a same-shaped, same-dtype twin in `data`."""
    return all(isinstance(data.get(k), torch.Tensor) and data[k].shape == t.shape and data[k].dtype == t.dtype
               for k, t in store.items() if isinstance(t, torch.Tensor))


def fresh_view(t: Any) -> Any:
    """A new tensor object over `t`'s storage (a new leaf where `t` is a leaf that requires grad)."""
    if not isinstance(t, torch.Tensor) or not t.is_leaf:
        return t
    return t.detach().requires_grad_(t.requires_grad)


class InputPool:
    """The cell's storage (`store`: the inputs its first call had) and the data sets copied into it."""

    def __init__(self, resolved: Resolved, store: Inputs):
        self.store = store
        count = sources_for(tensor_bytes(store))
        data = [_prepared(resolved, j) for j in range(count)] if count > 1 else []
        self.data = data if all(_copyable(store, d) for d in data) else []
        self.calls = 0
        self.current = -1  # the data set the store holds (-1: the cell's own)

    def draw(self) -> Draw:
        if self.data:
            self.current = self.calls % len(self.data)
            self._fill(self.data[self.current])
        self.calls += 1
        return Draw({k: fresh_view(v) for k, v in self.store.items()}, self.current)

    def _fill(self, data: Inputs) -> None:
        with torch.no_grad():
            for k, t in self.store.items():
                if isinstance(t, torch.Tensor):
                    t.detach().copy_(data[k])

"""What an implementation must not do to its inputs, found by the correctness gate (never in the timed
loop): change an input in place, or return an input's own storage as an output.

An implementation that scribbles on `x` but computes its result from the original passes a comparison
of outputs; the next call, or the caller, then sees changed data. An output that is an input's storage
(the input itself, or a view of it) changes when the caller changes that input.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import torch

Snapshot = dict[str, torch.Tensor]


def snapshot(inputs: Mapping[str, object]) -> Snapshot:
    """A detached copy of every tensor input, taken before the call."""
    return {name: t.detach().clone() for name, t in inputs.items() if isinstance(t, torch.Tensor)}


def _unchanged(now: torch.Tensor, before: torch.Tensor) -> bool:
    """Equal values, NaN equal to NaN (an input holding NaN is not changed by being compared)."""
    now = now.detach()
    if now.shape != before.shape or now.dtype != before.dtype:
        return False
    same = now == before
    if now.is_floating_point() or now.is_complex():
        same |= torch.isnan(now) & torch.isnan(before)
    return bool(same.all())


def _shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    ptr = a.untyped_storage().data_ptr()
    return ptr != 0 and ptr == b.untyped_storage().data_ptr()


def problems(inputs: Mapping[str, object], before: Snapshot, outs: Sequence[torch.Tensor]) -> list[str]:
    """What the call did to its inputs, one phrase each: [] for a well-behaved implementation."""
    found = [f"modified input {name} in place" for name, saved in before.items()
             if not _unchanged(inputs[name], saved)]  # type: ignore[arg-type]
    tensors = {name: t for name, t in inputs.items() if isinstance(t, torch.Tensor)}
    found += [f"output {i} shares storage with input {name}" for i, out in enumerate(outs)
              for name, t in tensors.items() if _shares_storage(out, t)]
    return found

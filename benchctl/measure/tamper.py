"""What an implementation must not do to its inputs, found by the correctness gate (never in the timed
loop): change an input in place, or return an input's own storage as an output; and, for the timed calls,
an input changed in place since before the cell's first call (`Marks`).

An implementation that scribbles on `x` but computes its result from the original passes a comparison
of outputs; the next call, or the caller, then sees changed data. An output that is an input's storage
(the input itself, or a view of it) changes when the caller changes that input.

The timed calls share the cell's inputs (fresh.py rotates one of them), and the audit's reference runs on
them as they are: an implementation that wrote zeros into `x` outside the gate, then handed back zeros
without the work wherever `x` was zero, was right for every call and `ok` at 1.4 ms against 6.4 ms for the
work. So before the cell's first call a few of each input's values (MARKS, at positions drawn from the OS's
random source) are kept, and after each pass they must read the same.

An input the target declares written (`Target.writes`: an `out=` buffer the call fills, as kernels with a
preallocated output do) is exempt from both: changing it is the call's job. Its result is still checked: a call
that left the buffer as an earlier call filled it returns the wrong values for its own data (audit.py).
"""

from __future__ import annotations

import os
from typing import Iterable, Mapping, Sequence

import torch

Snapshot = dict[str, torch.Tensor]
MARKS = 1024  # values kept per input: zeroing or rescaling an input changes nearly all of them


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


def problems(inputs: Mapping[str, object], before: Snapshot, outs: Sequence[torch.Tensor],
             writes: Iterable[str] = ()) -> list[str]:
    """What the call did to its inputs (but those it `writes`), one phrase each: [] for a well-behaved
    implementation."""
    written = set(writes)
    unknown = sorted(written - set(inputs))
    if unknown:
        raise ValueError(f"the target writes {', '.join(unknown)}, which its make_inputs does not make (it makes "
                         f"{', '.join(inputs)})")
    found = [f"modified input {name} in place" for name, saved in before.items()
             if name not in written and not _unchanged(inputs[name], saved)]  # type: ignore[arg-type]
    tensors = {name: t for name, t in inputs.items() if isinstance(t, torch.Tensor) and name not in written}
    found += [f"output {i} shares storage with input {name}" for i, out in enumerate(outs)
              for name, t in tensors.items() if _shares_storage(out, t)]
    return found


class Marks:
    """MARKS of each tensor input's values at random positions (all of a smaller one), as they were when made."""

    def __init__(self, inputs: Mapping[str, object]):
        gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little"))
        self.kept: dict[str, tuple[Positions, torch.Tensor]] = {}
        for name, t in inputs.items():
            if isinstance(t, torch.Tensor) and t.numel() and t.layout == torch.strided:  # not sparse, nested
                at = _positions(t, gen)
                self.kept[name] = at, _at(t, at)

    def changed(self, inputs: Mapping[str, object], skip: Iterable[str] = ()) -> list[str]:
        """The inputs (but `skip`) whose values at the kept positions are not those kept."""
        left_out = set(skip)
        return [name for name, (at, values) in self.kept.items()
                if name not in left_out and not _unchanged(_at(inputs[name], at), values)]  # type: ignore[arg-type]


Positions = tuple[torch.Tensor, ...]  # an index per dimension, on the input's device


def _positions(t: torch.Tensor, gen: torch.Generator) -> Positions:
    """MARKS positions in `t` drawn with `gen` (every one of a smaller `t`)."""
    n = t.numel()
    flat = torch.randint(n, (MARKS,), generator=gen) if n > MARKS else torch.arange(n)
    return tuple(i.to(t.device) for i in torch.unravel_index(flat, torch.atleast_1d(t).shape))


def _at(t: torch.Tensor, at: Positions) -> torch.Tensor:
    """`t`'s values at positions `at`, on the CPU: a gather of those values whatever `t`'s strides (flattening a
    transposed or expanded input first copied all of it: 53 ms for 4096 x 4096, not 0.5 ms)."""
    return torch.atleast_1d(t.detach())[at].cpu()


def in_place(names: Sequence[str]) -> str:
    """What a pass's row says where its calls changed inputs in place (Marks.changed), or ''."""
    if not names:
        return ""
    return (f"its calls modified input {', '.join(names)} in place: the timed calls, and the reference that checks "
            "them, had other data than the cell's")

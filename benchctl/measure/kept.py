"""A timed call's outputs that the audit keeps (audit.py): copied into host memory as they were on return,
and, where the audit holds them, the output objects themselves, so that a change after the call returned
(work done after the clock stopped, by a thread or a stream) shows when the pass has ended."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Kept:
    call: int
    source: int
    held: list[torch.Tensor | None]  # the output objects themselves (None: not held, or let go of)
    copy: list[torch.Tensor | None]  # as they were when the call returned
    names: list[str]  # the gradients' input names, in the order the pass returns them
    ptrs: set[int] = field(default_factory=set)  # the held outputs' storage addresses

    @staticmethod
    def of(call: int, source: int, tensors: list[torch.Tensor | None], names: list[str], hold: bool) -> "Kept":
        held = tensors if hold else [None] * len(tensors)
        return Kept(call, source, held, [_copy(t) for t in tensors], names,
                    {t.data_ptr() for t in held if t is not None} - {0})

    def let_go(self) -> None:
        self.held, self.ptrs = [None] * len(self.held), set()

    def changed(self) -> str:
        for held, copy in zip(self.held, self.copy):
            now = None if held is None else held.detach().to(copy.device)
            if now is not None and not torch.equal(now, copy) and not _same_nan(now, copy):
                return "its output changed after the call returned (work done after the clock stopped)"
        return ""

    def non_finite(self) -> str:
        for i, t in enumerate(self.copy):
            if t is not None and t.is_floating_point() and not bool(torch.isfinite(t).all()):
                return f"tensor {i} of what it returned: non-finite values (at the timed size)"
        return ""


def _copy(t: torch.Tensor | None) -> torch.Tensor | None:
    """A kept output as it was on return, in host memory: on the GPU each kept call's copy would take as much
    device memory as its outputs again (hoconv2d's backward at B=2048: 12 GiB), and a cell near the GPU's
    limit would run out of memory for the harness's sake."""
    return None if t is None else t.detach().to("cpu", copy=True)


def _same_nan(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(((a == b) | (a.isnan() & b.isnan())).all()) if a.is_floating_point() else False

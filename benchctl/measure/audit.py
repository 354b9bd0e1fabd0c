"""The timed calls' own outputs, checked: the numbers recorded are those of calls that did the work.

The gate (correctness.py) checks an implementation on inputs of its own; nothing there stops a call that
is right when checked and skips its work when timed. So the outputs of the timed calls are looked at too,
outside the clock, each right after its call (the clock keeps the result for this: clocks.py):

- every output must be a plain, materialised tensor (not a subclass that computes when read, nor a meta
  or fake tensor), and no thread may be left running that the pass did not start with;
- KEPT calls are picked at random among all the pass's calls (reservoir sampling, from the OS's random
  source, decided after each call returned), their outputs copied as they were on return and kept;
- after sampling, each kept output must still equal its copy (an output filled in later, e.g. by a
  thread, has changed), and the copy must match the operator's reference implementation run on the same
  data (fresh.py says which data set each call had), at the cell's size, within `timed_tolerance`. The
  reference runs on the cell's device in float32 (float64 for a float64 cell; float64 on a CPU).

A failure makes the pass `incorrect`, with what was found. The reference implementation's own cells are
not checked against themselves.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import Any, Callable

import torch

from benchctl.measure import correctness, fresh
from benchctl.measure.clocks import NOTHING
from benchctl.ops.cells import Resolved
from benchctl.ops.registry import Case
from benchctl.results.schema import Pass

KEPT = 2  # timed calls per pass whose outputs are checked against the reference
STRICT_KEPT = 16  # in a re-check of a time too good to keep unexamined (sweep/recheck.py)
# The bar at the timed size, relative to the reference's largest magnitude: this check is for work skipped
# (an output for other data, stale, unfilled or zero is off by the order of the values themselves), not
# for precision, which the gate judges at the check size. Rounding grows with the size: honest float32
# cells at timed sizes read up to 2.3e-4 against float64 (grid_sample at 4096), above the gate's 2e-4.
TIMED_FACTOR, TIMED_MIN = 10.0, 1e-2
PLAIN = (torch.Tensor, torch.nn.Parameter)


@dataclass
class Kept:
    call: int
    source: int
    held: list[torch.Tensor | None]  # the output objects themselves
    copy: list[torch.Tensor | None]  # as they were when the call returned
    names: list[str]  # the gradients' input names, in the order the pass returns them


def flat(result: Any) -> list[torch.Tensor | None]:
    """The tensors of a call's result in order (tuples opened; None kept where a gradient is None)."""
    if isinstance(result, (tuple, list)):
        return [t for part in result for t in flat(part)]
    return [result] if result is None or isinstance(result, torch.Tensor) else [None]


def not_plain(tensors: list[torch.Tensor | None]) -> str:
    for t in tensors:
        if t is not None and (type(t) not in PLAIN or t.is_meta or t.layout != torch.strided):
            return f"a timed call returned a {type(t).__name__} ({t.layout}), not a plain materialised tensor"
    return ""


class Audit:
    """Watches one pass's calls (`drawn` before each, `finish` after the last) and judges them (`verdict`)."""

    def __init__(self, resolved: Resolved, pass_name: str, take: Callable[[], Any], accumulate: bool = False,
                 references: dict[int, correctness.Run] | None = None):
        self.resolved, self.pass_name, self.take = resolved, pass_name, take
        self.references = {} if references is None else references  # by data set, shared by a cell's passes
        self.accumulate = accumulate  # gradients go to `.grad` (passes.py): only the outputs come back
        self.random = random.SystemRandom()
        self.threads = threading.active_count()
        self.calls = 0
        self.kept: list[Kept] = []
        self.problem = ""
        self.pending: fresh.Draw | None = None
        self.size = STRICT_KEPT if resolved.cell.strict else KEPT

    def drawn(self, draw: fresh.Draw) -> None:
        """Before each call: the previous call's result is looked at, then this call's draw noted."""
        self._observe()
        self.pending = draw

    def finish(self) -> None:
        self._observe()

    def _observe(self) -> None:
        if self.pending is None:
            return
        draw, self.pending = self.pending, None
        result = self.take()
        if result is NOTHING:  # the draw's call was not timed (a paired warm-up runs some untimed)
            return
        tensors = flat(result)
        self.calls += 1
        self.problem = self.problem or not_plain(tensors) or self._threads()
        slot = len(self.kept) if len(self.kept) < self.size else self.random.randrange(self.calls)
        if slot < self.size and not self.problem:
            names = [k for k, t in draw.inputs.items() if isinstance(t, torch.Tensor) and t.requires_grad]
            kept = Kept(self.calls, draw.source, tensors, [_copy(t) for t in tensors], names)
            self.kept[slot:slot + 1] = [kept]

    def _threads(self) -> str:
        now = threading.active_count()
        return (f"a timed call left a thread running after it returned ({self.threads} threads before the pass, "
                f"{now} after the call): its work would not be timed") if now > self.threads else ""

    def verdict(self) -> str:
        """Why the pass's timed outputs cannot be trusted, or ''."""
        self.finish()
        if self.problem or self.resolved.impl.name == self.resolved.op.reference:
            return self.problem
        for kept in self.kept:
            found = _changed(kept) or self._wrong(kept)
            if found:
                return f"timed call {kept.call} of {self.calls}: {found}"
        return ""

    def _wrong(self, kept: Kept) -> str:
        expected, names = self._reference(kept)
        got = kept.copy
        if self.accumulate:  # gradients went to `.grad` (passes.py): only the outputs came back
            count = sum(n.startswith("output") for n in names)
            expected, names, got = expected[:count], names[:count], got[:count]
        if len(expected) != len(got):
            return f"returned {len(got)} tensors, the reference {len(expected)}"
        cell = self.resolved.cell
        tol = timed_tolerance(cell.torch_dtype, cell.device)
        for name, mine, ref in zip(names, got, expected):
            if ref is None:
                continue
            c = correctness.compare(name, mine, ref.detach().to("cpu", torch.float64), tol, name.startswith("output"))
            if not c.passed:
                return f"{name}: {c.reason} against the reference on the same inputs (at the timed size)"
        return ""

    def _reference(self, kept: Kept) -> tuple[list[torch.Tensor | None], list[str]]:
        if kept.source not in self.references:
            self.references[kept.source] = reference_run(self.resolved, kept.source)
        run = self.references[kept.source]
        outs: list[torch.Tensor | None] = list(run.outs)
        grads = [run.grads.get(n) for n in kept.names]
        out_names = [f"output {i}" for i in range(len(outs))]
        grad_names = [f"grad {n}" for n in kept.names]
        by_pass = {Pass.FORWARD: (outs, out_names), Pass.BACKWARD: (grads, grad_names),
                   Pass.FORWARD_BACKWARD: (outs + grads, out_names + grad_names)}
        return by_pass[self.pass_name]


def timed_tolerance(dtype: torch.dtype, device: str) -> float:
    return max(TIMED_FACTOR * correctness.tolerance(dtype, device), TIMED_MIN)


def reference_run(resolved: Resolved, source: int) -> correctness.Run:
    """The reference implementation, forward and backward, on data set `source` at the cell's size."""
    cell, op = resolved.cell, resolved.op
    dtype = torch.float64 if cell.device == "cpu" or cell.torch_dtype == torch.float64 else torch.float32
    case = Case(cell.params, dtype, cell.device, fresh.seed_of(cell.seed, source))
    return correctness.run_once(resolved.target, op.implementations[op.reference], case)


def _copy(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else t.detach().clone()


def _changed(kept: Kept) -> str:
    for held, copy in zip(kept.held, kept.copy):
        if held is not None and not torch.equal(held.detach(), copy) and not _same_nan(held, copy):
            return "its output changed after the call returned (work done after the clock stopped)"
    return ""


def _same_nan(a: torch.Tensor, b: torch.Tensor) -> bool:
    a = a.detach()
    return bool(((a == b) | (a.isnan() & b.isnan())).all()) if a.is_floating_point() else False

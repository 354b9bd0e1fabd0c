"""A cell ready to time: its inputs built and prepared, its first (compile) call done, and the data sets its
timed calls rotate over (fresh.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from benchctl.measure import fresh, tamper, unseen
from benchctl.measure.clocks import Thunk
from benchctl.measure.passes import (Drawn, Grads, as_tuple, backward_from, drawn_setup, grad_outputs, has_backward,
                                     has_own_leaves, seeded_like)
from benchctl.ops.cells import Resolved
from benchctl.ops.registry import Case, Inputs
from benchctl.ops.triton_support import best_config
from benchctl.vocab import Device, Pass


@dataclass
class Prepared:
    resolved: Resolved
    call_on: Callable[[Inputs], Any]  # the implementation called on one set of inputs
    inputs: Inputs  # the cell's own inputs, which the first call had; the timed calls' data is copied in
    raw: Inputs  # the same inputs as the target made them, before the implementation's prepare
    grads: Grads  # the outputs' gradients a backward starts from (None for an output that carries none)
    compile_s: float
    marks: tamper.Marks  # a few of the inputs' values before the first call
    accumulate: bool = False  # the graph has leaves of its own: time backward(), see passes.py
    pool: fresh.InputPool | None = None
    best_config: str | None = None  # Triton: the autotune configs its first call chose (untimed)
    # the gradients the next unseen draw's backward starts from, and its data set: made with that set (`_ahead`)
    unseen_grads: tuple[Grads, int | None] = ((), None)

    def has(self, pass_name: str) -> bool:
        """Whether the cell has the pass: a backward only where an output carries a gradient (passes.NO_BACKWARD)."""
        return pass_name == Pass.FORWARD or has_backward(self.grads)

    def call(self) -> Any:
        """One call on the cell's own inputs (a CUDA graph captures this one: cuda_graph.py)."""
        return self.call_on(self.inputs)

    def setup(self, pass_name: str, on_draw: Callable[[fresh.Draw], None] | None = None) -> Callable[[], Thunk]:
        """Each repetition on fresh inputs (fresh.py); `on_draw` (the pass's audit) hears of each draw before
        its call, and where it listens a few draws hold data never drawn before, for it to judge (unseen.py):
        every input the pool refreshes, and the outputs' gradients a backward starts from."""
        pool = self.pool or fresh.InputPool(self.resolved, self.inputs, self.raw)
        self.pool = pool
        pool.begin(unseen.every(self.resolved.cell.strict) if on_draw is not None else 0)

        def draw() -> Drawn:
            drawn = pool.draw()
            if on_draw is not None:
                on_draw(drawn)
            self._ahead(pool.upcoming())
            grads = self.unseen_grads[0] if drawn.unseen else self.grads
            return (lambda: self.call_on(drawn.inputs)), drawn.inputs, grads

        return drawn_setup(draw, pass_name, self.accumulate)

    def _ahead(self, source: int | None) -> None:
        """The gradients of unseen data set `source`, made where its data is (a draw before its own: fresh.py
        `_kept`) into tensors kept for them, so that the unseen draw makes and frees nothing before its call."""
        kept, made_for = self.unseen_grads
        if source is None or source == made_for or not has_backward(self.grads):
            return
        made = seeded_like(self.grads, seed=source)
        with torch.no_grad():
            kept = kept or tuple(None if g is None else torch.empty_like(g) for g in made)
            for into, g in zip(kept, made):
                if g is not None:
                    into.copy_(g)
        self.unseen_grads = (kept, source)

    def sampling(self) -> None:
        """The pass's first sample is taken: the pool's unseen draws start (fresh.InputPool.sampling)."""
        if self.pool is not None:
            self.pool.sampling()

    def probing(self) -> bool:
        """Whether the last draw's call was the audit's own (fresh.Draw.probe): its sample leaves the statistics."""
        last = self.pool.last if self.pool is not None else None
        return last is not None and last.probe

    def written(self) -> str:
        """Why the timed calls cannot be trusted where an input the draws do not refresh has changed since before
        the first call (tamper.Marks), or ''."""
        refreshed = self.pool.refreshed() if self.pool else ()
        return tamper.in_place(self.marks.changed(self.inputs, (*refreshed, *self.resolved.target.writes)))

    def untimed(self, setup: Callable[[], Thunk]) -> Callable[[], Thunk]:
        """`setup` for a call not timed, whose draw spends no unseen data set (fresh.InputPool.seen)."""
        pool = self.pool
        return setup if pool is None else lambda: pool.seen(setup)


def prepare(resolved: Resolved) -> Prepared:
    cell, target, impl = resolved.cell, resolved.target, resolved.impl
    raw = target.make_inputs(Case(cell.params.to_dict(), cell.torch_dtype, cell.device, cell.seed))
    inputs = impl.prepare(dict(raw)) if impl.prepare is not None else dict(raw)

    def call_on(args: Inputs) -> Any:
        return target.call(impl.fn, args)

    marks = tamper.Marks(inputs)

    start = time.perf_counter()
    outs = as_tuple(call_on(inputs))  # first call: builds, JIT-compiles, fills caches; never a timed sample
    grads = grad_outputs(outs)
    accumulate = has_own_leaves(outs, inputs)
    if has_backward(grads):
        backward_from(inputs, grads, accumulate)(outs)
    if cell.device == Device.CUDA:
        torch.cuda.synchronize()
    compile_s = time.perf_counter() - start
    return Prepared(resolved, call_on, inputs, raw, grads, compile_s, marks, accumulate,
                    best_config=best_config(impl.kernels))

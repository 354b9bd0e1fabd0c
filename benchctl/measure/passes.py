"""Forward, backward and forward+backward as (untimed setup -> timed thunk) pairs for the timing loop.

Forward: the call with autograd recording. Backward: the graph is built in setup, only the
backward from `grad_out` (a fixed seeded tensor; a new one with a call on data never drawn before,
fresh.py) is timed. Forward+backward: both.

The backward returns the gradients of the inputs that require grad (`torch.autograd.grad`) rather
than accumulating them into `.grad`. Accumulation would add work that belongs to the harness: a
gradient that reaches an input unchanged (out = x + f(...) passes grad_out through to x) cannot be
moved into `x.grad` while the harness holds grad_out, so autograd copies it, a full-size copy every
repetition that a model never pays (there x comes from an earlier layer, not a leaf).

An implementation whose graph has leaves of its own (parameters it holds, or a tensor it makes
require grad) would have their gradients skipped by `autograd.grad`, so for it the backward is
`backward(grad_out)`, accumulating into every leaf as training does, with the inputs' `.grad` set
to None before each repetition. `has_own_leaves` tells the two apart once, on the warm-up call.

An output autograd cannot carry a gradient back through (top-k's indices, a mask, every output of an operator
whose inputs require no grad) gets no gradient: `grad_outputs` gives it None, and the backward starts from the
others alone. Where no output carries one, there is no backward to time (NO_BACKWARD).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Callable, Sequence

import torch

from benchctl.ops.registry import Inputs, Output
from benchctl.measure.clocks import Thunk

from benchctl.vocab import PASSES, Pass


def as_tuple(out: Output) -> tuple[torch.Tensor, ...]:
    """The call's outputs: a tensor, or a tuple or list of them (`[out, loss]`); anything else is refused, in words."""
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    others = sorted({type(o).__name__ for o in outs if not isinstance(o, torch.Tensor)})
    if others or not outs:
        raise TypeError(f"an implementation returns a tensor or a tuple of tensors, not {_returned(out, others)}")
    return outs


def _returned(out: object, others: list[str]) -> str:
    if isinstance(out, (tuple, list)):
        return f"a {type(out).__name__} holding {', '.join(others)}" if out else f"an empty {type(out).__name__}"
    return f"a {type(out).__name__}"


NO_BACKWARD = "no output carries a gradient (none requires grad): no backward to time"

Grads = tuple[torch.Tensor | None, ...]  # a gradient per output; None for one that carries none


def grad_outputs(outputs: Sequence[torch.Tensor], seed: int = 1234) -> Grads:
    """A seeded gradient for each output that requires grad, None for the others."""
    return seeded_like(tuple(o if o.requires_grad else None for o in outputs), seed)


def seeded_like(templates: Sequence[torch.Tensor | None], seed: int) -> Grads:
    """Seeded normal values in the shape, dtype and device of each template (None stays None): drawn in float64
    on the CPU, so every dtype and device sees the same numbers."""
    gen = torch.Generator().manual_seed(seed)
    drawn = (None if t is None else torch.randn(t.shape, generator=gen, dtype=torch.float64) for t in templates)
    return tuple(None if d is None else d.to(t.dtype).to(t.device) for d, t in zip(drawn, templates))


def has_backward(grads: Grads) -> bool:
    return any(g is not None for g in grads)


def grad_inputs(inputs: Inputs) -> list[torch.Tensor]:
    return [t for t in inputs.values() if isinstance(t, torch.Tensor) and t.requires_grad]


def has_own_leaves(out: Output, inputs: Inputs) -> bool:
    """Whether the graph behind `out` has a leaf that is not one of `inputs`."""
    known = {id(t) for t in grad_inputs(inputs)}
    stack = [o.grad_fn for o in as_tuple(out) if o.grad_fn is not None]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        leaf = getattr(node, "variable", None)  # an AccumulateGrad node
        if leaf is not None and id(leaf) not in known:
            return True
        stack.extend(next_node for next_node, _ in node.next_functions)
    return False


def backward_from(inputs: Inputs, grads: Grads, accumulate: bool,
                  retain_graph: bool = False) -> Callable[[Output], object]:
    """The timed backward of one output (a tensor or a tuple of them, as the call returned it: both
    autograd functions take either, so nothing else runs inside the clock but one `itemgetter` where some
    outputs carry no gradient): the inputs' gradients, or `backward` when `accumulate`."""
    kept = [i for i, g in enumerate(grads) if g is not None]
    if not kept:
        raise ValueError(NO_BACKWARD)
    if len(kept) < len(grads):
        pick = itemgetter(*kept)
        carried = backward_from(inputs, tuple(grads[i] for i in kept), accumulate, retain_graph)
        return lambda out: carried(pick(out))
    leaves = grad_inputs(inputs)
    if leaves and not accumulate:
        return lambda out: torch.autograd.grad(out, leaves, grads, retain_graph=retain_graph, allow_unused=True)
    return lambda out: torch.autograd.backward(out, grads, retain_graph=retain_graph)


def make_setup(call: Callable[[], Output], inputs: Inputs, grads: Grads,
               pass_name: str, accumulate: bool = False) -> Callable[[], Thunk]:
    """Returns `setup()`; each call prepares one repetition of `call` on `inputs` and returns the thunk
    to time."""
    return drawn_setup(lambda: (call, inputs, grads), pass_name, accumulate)


Drawn = tuple[Callable[[], Output], Inputs, Grads]  # a call, its inputs, its outputs' gradients


def drawn_setup(draw: Callable[[], Drawn], pass_name: str, accumulate: bool = False) -> Callable[[], Thunk]:
    """Returns `setup()`; each call takes the next (call, its inputs, the gradients of its outputs) from `draw`
    (fresh inputs per repetition: fresh.py), prepares one repetition and returns the thunk to time."""

    def drawn() -> tuple[Callable[[], Output], Callable[[Output], object]]:
        call, inputs, grads = draw()
        if accumulate:
            for t in grad_inputs(inputs):
                t.grad = None
        return call, backward_from(inputs, grads, accumulate)

    def forward() -> Thunk:
        return draw()[0]

    def backward() -> Thunk:
        call, run_backward = drawn()
        out = call()
        return lambda: run_backward(out)

    def forward_backward() -> Thunk:
        call, run_backward = drawn()

        def thunk() -> object:
            out = call()
            return out, run_backward(out)  # the output too: the clock stops before either is freed

        return thunk

    setups = {Pass.FORWARD: forward, Pass.BACKWARD: backward, Pass.FORWARD_BACKWARD: forward_backward}
    if pass_name not in setups:
        raise ValueError(f"unknown pass {pass_name!r}; choose from {', '.join(PASSES)}")
    return setups[pass_name]

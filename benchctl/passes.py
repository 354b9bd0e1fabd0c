"""Forward, backward and forward+backward as (untimed setup -> timed thunk) pairs for the timing loop.

Forward: the call with autograd recording. Backward: the graph is built in setup, only the
backward from `grad_out` (a fixed seeded tensor) is timed. Forward+backward: both.

The backward returns the gradients of the inputs that require grad (`torch.autograd.grad`) rather
than accumulating them into `.grad`. Accumulation would add work that belongs to the harness: a
gradient that reaches an input unchanged (out = x + f(...) passes grad_out through to x) cannot be
moved into `x.grad` while the harness holds grad_out, so autograd copies it, a full-size copy every
repetition that a model never pays (there x comes from an earlier layer, not a leaf). Only when no
input requires grad (the graph's leaves are parameters the implementation holds) does it call
`backward`, accumulating into those parameters' `.grad` as training would.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch

from benchctl.registry import Inputs, Output
from benchctl.timing import Thunk

PASSES = ("forward", "backward", "forward_backward")


def as_tuple(out: Output) -> tuple[torch.Tensor, ...]:
    return out if isinstance(out, tuple) else (out,)


def grad_outputs(outputs: Sequence[torch.Tensor], seed: int = 1234) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    return tuple(
        torch.randn(o.shape, generator=gen, dtype=torch.float64).to(o.dtype).to(o.device) for o in outputs
    )


def grad_inputs(inputs: Inputs) -> list[torch.Tensor]:
    return [t for t in inputs.values() if isinstance(t, torch.Tensor) and t.requires_grad]


def backward_from(leaves: list[torch.Tensor], grads: Sequence[torch.Tensor]) -> Callable[[Output], object]:
    """The timed backward of one output: the leaves' gradients, or `.grad` accumulation without leaves."""
    if leaves:
        return lambda out: torch.autograd.grad(as_tuple(out), leaves, grads, allow_unused=True)
    return lambda out: torch.autograd.backward(as_tuple(out), grads)


def make_setup(call: Callable[[], Output], inputs: Inputs, grads: Sequence[torch.Tensor],
               pass_name: str) -> Callable[[], Thunk]:
    """Returns `setup()`; each call prepares one repetition and returns the thunk to time."""
    leaves = grad_inputs(inputs)
    run_backward = backward_from(leaves, grads)

    def forward() -> Thunk:
        return call

    def backward() -> Thunk:
        out = call()
        return lambda: run_backward(out)

    def forward_backward() -> Thunk:
        def thunk() -> object:
            out = call()
            return out, run_backward(out)  # the output too: the clock stops before either is freed

        return thunk

    setups = {"forward": forward, "backward": backward, "forward_backward": forward_backward}
    if pass_name not in setups:
        raise ValueError(f"unknown pass {pass_name!r}; choose from {', '.join(PASSES)}")
    return setups[pass_name]

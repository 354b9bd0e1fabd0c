"""Forward, backward and forward+backward as (untimed setup -> timed thunk) pairs for the timing loop.

Forward: the call with autograd recording. Backward: the graph is built in setup, only
`backward(grad_out)` is timed. Forward+backward: both. Gradients are set to None before every
repetition so accumulation never adds work, and `grad_out` is a fixed seeded tensor.
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


def _clear(leaves: list[torch.Tensor]) -> None:
    for t in leaves:
        t.grad = None


def make_setup(call: Callable[[], Output], inputs: Inputs, grads: Sequence[torch.Tensor],
               pass_name: str) -> Callable[[], Thunk]:
    """Returns `setup()`; each call prepares one repetition and returns the thunk to time."""
    leaves = grad_inputs(inputs)

    def forward() -> Thunk:
        _clear(leaves)
        return call

    def backward() -> Thunk:
        _clear(leaves)
        outs = as_tuple(call())
        return lambda: torch.autograd.backward(outs, grads)

    def forward_backward() -> Thunk:
        _clear(leaves)
        return lambda: torch.autograd.backward(as_tuple(call()), grads)

    setups = {"forward": forward, "backward": backward, "forward_backward": forward_backward}
    if pass_name not in setups:
        raise ValueError(f"unknown pass {pass_name!r}; choose from {', '.join(PASSES)}")
    return setups[pass_name]

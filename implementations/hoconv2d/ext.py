"""The hoconv2d C++/CUDA extension: loading, autograd and fake kernels, opcheck.

`benchctl::hoconv2d_filter(x, weights)` is the per-pixel filter; its backward calls
`benchctl::hoconv2d_filter_backward(grad_out, x, weights)`, which returns (grad_x, grad_weights)
from one fused pass.
"""

from __future__ import annotations

from typing import Any

import torch

from benchctl.ops.extension import Extension
from benchctl.ops.registry import Case, randn

OP_NAME = "hoconv2d"
FORWARD = "benchctl::hoconv2d_filter"
BACKWARD = "benchctl::hoconv2d_filter_backward"
# opcheck runs the op a dozen ways (fake tensors, AOT autograd, dynamic shapes): small inputs suffice.
OPCHECK_MAX = {"batch_size": 2, "C": 3, "H": 7, "W": 9}


def _register() -> None:
    torch.library.register_fake(FORWARD)(_forward_fake)
    torch.library.register_fake(BACKWARD)(_backward_fake)
    torch.library.register_autograd(FORWARD, _backward, setup_context=_setup_context)


def _check_shapes(x: torch.Tensor, weights: torch.Tensor) -> None:
    torch._check(x.dim() == 4 and weights.dim() == 4, lambda: "hoconv2d: x and weights must be 4-D")
    torch._check(weights.shape[0] == x.shape[0], lambda: "hoconv2d: batch sizes differ")
    torch._check(weights.shape[2:] == x.shape[2:], lambda: "hoconv2d: image sizes differ")
    torch._check(x.dtype == weights.dtype, lambda: "hoconv2d: x and weights dtypes differ")


def _forward_fake(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    _check_shapes(x, weights)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _backward_fake(
    grad_out: torch.Tensor, x: torch.Tensor, weights: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    _check_shapes(x, weights)
    torch._check(grad_out.shape == x.shape, lambda: "hoconv2d: grad_out must match x")
    fmt = torch.contiguous_format
    return torch.empty_like(x, memory_format=fmt), torch.empty_like(weights, memory_format=fmt)


def _setup_context(ctx: Any, inputs: tuple[torch.Tensor, torch.Tensor], output: torch.Tensor) -> None:
    ctx.save_for_backward(*inputs)


def _backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    x, weights = ctx.saved_tensors
    grad_x, grad_weights = torch.ops.benchctl.hoconv2d_filter_backward.default(grad_out, x, weights)
    return (
        grad_x if ctx.needs_input_grad[0] else None,
        grad_weights if ctx.needs_input_grad[1] else None,
    )


def prepare(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Loads (building the first time) the libraries the inputs' device needs; outside the timed loop."""
    load(inputs["x"].device.type)
    return inputs


def hoconv2d_filter(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """The per-pixel filter through the custom op (autograd goes through the fused backward op)."""
    return torch.ops.benchctl.hoconv2d_filter.default(x, weights)


def opcheck_inputs(case: Case) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x, weights, grad_out) for the case's C and k, with the batch and image cut down to OPCHECK_MAX."""
    p = {name: min(int(case.params.get(name, limit)), limit) for name, limit in OPCHECK_MAX.items()}
    k = int(case.params.get("k", 3))
    gen = case.generator()
    shape = (p["batch_size"], p["C"], p["H"], p["W"])
    x = randn(case, gen, *shape)
    weights = randn(case, gen, p["batch_size"], k * k, p["H"], p["W"])
    return x, weights, randn(case, gen, *shape, grad=False)


def opcheck(case: Case) -> None:
    """torch.library.opcheck on both ops for a small version of `case`; raises on failure."""
    load(case.device)
    x, weights, grad_out = opcheck_inputs(case)
    torch.library.opcheck(torch.ops.benchctl.hoconv2d_filter.default, (x, weights))
    inputs = (grad_out, x.detach(), weights.detach())
    torch.library.opcheck(torch.ops.benchctl.hoconv2d_filter_backward.default, inputs)


EXT = Extension(OP_NAME, register=_register, anchor="hoconv2d_filter")
load = EXT.load
requires = EXT.requires

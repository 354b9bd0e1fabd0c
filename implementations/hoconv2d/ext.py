"""The hoconv2d C++/CUDA extension: loading, autograd and fake kernels, opcheck.

`hoconv2d::hoconv2d_filter(x, weights)` is the per-pixel filter; its backward calls
`hoconv2d::hoconv2d_filter_backward(grad_out, x, weights)`, which returns (grad_x, grad_weights)
from one fused pass.
"""

from __future__ import annotations

from typing import Any

import torch

from benchctl.ops.extension import FLOATING_TYPES, Extension
from benchctl.ops.opcheck import small_opcheck

from . import OP, OPCHECK_MAX, filter_inputs

OP_NAME = "hoconv2d"
FORWARD = "hoconv2d_filter"
BACKWARD = "hoconv2d_filter_backward"
TILED = "hoconv2d_filter_backward_tiled"  # the CUDA backward's tile math on the CPU, for the tests


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
    grad_x, grad_weights = EXT.op(BACKWARD)(grad_out, x, weights)
    return (
        grad_x if ctx.needs_input_grad[0] else None,
        grad_weights if ctx.needs_input_grad[1] else None,
    )

def opcheck(inputs: dict[str, torch.Tensor]) -> None:
    """torch.library.opcheck on both ops with (small) filter inputs; raises on failure."""
    x, weights = inputs["x"], inputs["weights"]
    load(x.device.type)
    torch.library.opcheck(EXT.op(FORWARD), (x, weights))
    gen = torch.Generator().manual_seed(0)
    grad_out = torch.randn(x.shape, generator=gen, dtype=torch.float64).to(x)
    torch.library.opcheck(EXT.op(BACKWARD), (grad_out, x.detach(), weights.detach()))


EXT = Extension(OP_NAME, namespace=OP_NAME,
                fakes={FORWARD: _forward_fake, BACKWARD: _backward_fake, TILED: _backward_fake},
                autograd={FORWARD: (_backward, _setup_context)})
load = EXT.load


# `cpp`: fused vectorised loops on the CPU; `cuda`: a thread per element for the output and both
# gradients, gather-form grad X (no atomics). One op, `hoconv2d::hoconv2d_filter`, dispatches to either.
@EXT.implementations(OP, opcheck=small_opcheck(opcheck, filter_inputs, OPCHECK_MAX), dtypes=FLOATING_TYPES)
def hoconv2d_filter(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """The per-pixel filter through the custom op (autograd goes through the fused backward op)."""
    return EXT.op(FORWARD)(x, weights)

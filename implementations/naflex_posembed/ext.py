"""The naflex_posembed C++/CUDA extension: loading, autograd and fake kernels, opcheck.

`naflex_posembed::naflex_posembed_forward(x, table, coords, sizes)` adds to each token its bilinear lookup
of the table resized to its sample's (h, w) grid, in one fused pass; the backward passes grad_out
through for x and scatter-adds it into the table's gradient with
`naflex_posembed::naflex_posembed_table_backward(grad_out, table, coords, sizes)` (the table only gives the shape).
"""

from __future__ import annotations

from typing import Any

import torch

from benchctl.ops.extension import FLOATING_TYPES, Extension
from benchctl.ops.opcheck import small_opcheck

from . import OP, OPCHECK_MAX, make_inputs

OP_NAME = "naflex_posembed"
FORWARD = "naflex_posembed_forward"
BACKWARD = "naflex_posembed_table_backward"


def _forward_fake(x: torch.Tensor, table: torch.Tensor, coords: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _backward_fake(
    grad_out: torch.Tensor, table: torch.Tensor, coords: torch.Tensor, sizes: torch.Tensor
) -> torch.Tensor:
    return grad_out.new_empty(table.shape)


def _setup_context(ctx: Any, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
    _, table, coords, sizes = inputs
    ctx.save_for_backward(table, coords, sizes)


def _backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
    table, coords, sizes = ctx.saved_tensors
    grad_x = grad_out if ctx.needs_input_grad[0] else None  # out = x + pos: x's gradient is grad_out
    grad_table = None
    if ctx.needs_input_grad[1]:
        grad_table = EXT.op(BACKWARD)(grad_out, table, coords, sizes)
    return grad_x, grad_table, None, None


def opcheck(inputs: dict[str, torch.Tensor]) -> None:
    """torch.library.opcheck on the forward (x and table needing grad) and on the table backward."""
    load(inputs["x"].device.type)
    x, table = inputs["x"].detach(), inputs["table"].detach()
    coords, sizes = inputs["coords"], inputs["sizes"]
    args = (x.clone().requires_grad_(), table.clone().requires_grad_(), coords, sizes)
    torch.library.opcheck(EXT.op(FORWARD), args)
    torch.library.opcheck(EXT.op(BACKWARD), (x, table, coords, sizes))


EXT = Extension(OP_NAME, namespace=OP_NAME, fakes={FORWARD: _forward_fake, BACKWARD: _backward_fake},
                autograd={FORWARD: (_backward, _setup_context)})
load = EXT.load


@EXT.implementations(OP, opcheck=small_opcheck(opcheck, make_inputs, OPCHECK_MAX), dtypes=FLOATING_TYPES)
def posembed(x: torch.Tensor, table: torch.Tensor, coords: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """Fused gather-interpolate-add; backward scatter-adds into the table gradient."""
    return EXT.op(FORWARD)(x, table, coords, sizes)

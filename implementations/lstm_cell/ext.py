"""The C++/CUDA LSTM cell: loads extensions/lstm_cell, adds fake (meta) kernels to the four ops
once, and checks the ops with torch.library.opcheck. The autograd kernel of `lstm_cell` is a C++
torch::autograd::Function registered by the library itself (no Python on the fwd+bwd path).

The extension defines four ops: `lstm_cell` (matmuls + fused pointwise forward, returns h', c' and
the activated gates it saves) and `lstm_cell_backward`, both composed from the device-specific
`lstm_cell_pointwise` and `lstm_cell_pointwise_backward`; on the CPU `lstm_cell` has a kernel of its
own that runs the matmuls and the pointwise pass per half of the batch in one parallel region.
"""

from __future__ import annotations

from typing import Any

import torch

from benchctl.ops.extension import FLOATING_TYPES, Extension
from benchctl.ops.opcheck import small_opcheck

from . import OP, OPCHECK_MAX, make_inputs

OP_NAME = "lstm_cell"
CELL, CELL_BACKWARD = "lstm_cell", "lstm_cell_backward"
POINTWISE, POINTWISE_BACKWARD = "lstm_cell_pointwise", "lstm_cell_pointwise_backward"

def _check_cell(x: torch.Tensor, h: torch.Tensor, w_ih: torch.Tensor) -> None:
    torch._check(x.dim() == 2 and h.dim() == 2, lambda: "lstm_cell: x and h must be 2-D")
    torch._check(w_ih.shape[0] == 4 * h.shape[1], lambda: "lstm_cell: w_ih must have 4H rows")


def _fake_cell(x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor,
               b_ih: torch.Tensor, b_hh: torch.Tensor) -> tuple[torch.Tensor, ...]:
    _check_cell(x, h, w_ih)
    return h.new_empty(h.shape), h.new_empty(h.shape), h.new_empty(h.shape[0], 4 * h.shape[1])


def _fake_cell_backward(grad_h: torch.Tensor, grad_c: torch.Tensor, x: torch.Tensor, h: torch.Tensor,
                        c: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor, c_new: torch.Tensor,
                        gates: torch.Tensor) -> tuple[torch.Tensor, ...]:
    _check_cell(x, h, w_ih)
    news = (x.new_empty(t.shape) for t in (x, h, c, w_ih, w_hh))
    return (*news, w_ih.new_empty(w_ih.shape[0]), w_ih.new_empty(w_ih.shape[0]))


def _fake_pointwise(gates: torch.Tensor, b_hh: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
    torch._check(gates.shape[1] == 4 * c.shape[1], lambda: "lstm_cell: gates must be (B, 4H)")
    return c.new_empty(c.shape), c.new_empty(c.shape), c.new_empty(gates.shape)


def _fake_pointwise_backward(grad_h: torch.Tensor, grad_c: torch.Tensor, c: torch.Tensor, c_new: torch.Tensor,
                             gates: torch.Tensor) -> tuple[torch.Tensor, ...]:
    torch._check(gates.shape[1] == 4 * c.shape[1], lambda: "lstm_cell: gates must be (B, 4H)")
    return c.new_empty(gates.shape), c.new_empty(c.shape), c.new_empty(gates.shape[1])


def opcheck(inputs: dict[str, torch.Tensor]) -> None:
    """torch.library.opcheck on all four ops with (small) cell inputs; raises on the first failure."""
    from . import ARGS  # the package imports this module, so import at call time

    args = [inputs[k] for k in ARGS]
    load(args[0].device.type)
    _check(EXT.op(CELL), args)
    with torch.no_grad():
        x, h, c, w_ih, w_hh, b_ih, b_hh = (t.detach() for t in args)
        h_new, c_new, gates = EXT.op(CELL)(x, h, c, w_ih, w_hh, b_ih, b_hh)
        pre = torch.addmm(b_ih, x, w_ih.t()) + h.mm(w_hh.t())
        gen = torch.Generator().manual_seed(1)
        grads = [torch.randn(h_new.shape, generator=gen, dtype=torch.float64).to(h_new) for _ in range(2)]
    _check(EXT.op(CELL_BACKWARD), [*grads, x, h, c, w_ih, w_hh, c_new, gates])
    _check(EXT.op(POINTWISE), [pre, b_hh, c])
    _check(EXT.op(POINTWISE_BACKWARD), [*grads, c, c_new, gates])


def _check(op: Any, args: list[torch.Tensor]) -> None:
    torch.library.opcheck(op, tuple(args))  # raises OpCheckError naming the failing test


EXT = Extension(OP_NAME, namespace=OP_NAME, fakes={CELL: _fake_cell, CELL_BACKWARD: _fake_cell_backward,
                                                  POINTWISE: _fake_pointwise,
                                                  POINTWISE_BACKWARD: _fake_pointwise_backward})
load = EXT.load


@EXT.implementations(OP, opcheck=small_opcheck(opcheck, make_inputs, OPCHECK_MAX), dtypes=FLOATING_TYPES)
def lstm_cell_ext(x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w_ih: torch.Tensor,
                  w_hh: torch.Tensor, b_ih: torch.Tensor, b_hh: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused C++/CUDA pointwise forward and backward around ATen matmuls."""
    # .default: no overload lookup per call (~4 us of a ~270 us forward+backward)
    h_new, c_new, _gates = EXT.op(CELL)(x, h, c, w_ih, w_hh, b_ih, b_hh)
    return h_new, c_new

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

from benchctl.ops.extension import Extension
from benchctl.ops.registry import Case

OP_NAME = "lstm_cell"
OPS = ("lstm_cell", "lstm_cell_backward", "lstm_cell_pointwise", "lstm_cell_pointwise_backward")


def prepare(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    load(next(iter(inputs.values())).device.type)
    return inputs


def lstm_cell_ext(x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w_ih: torch.Tensor,
                  w_hh: torch.Tensor, b_ih: torch.Tensor, b_hh: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused C++/CUDA pointwise forward and backward around ATen matmuls."""
    # .default: no overload lookup per call (~4 us of a ~270 us forward+backward)
    h_new, c_new, _gates = torch.ops.benchctl.lstm_cell.default(x, h, c, w_ih, w_hh, b_ih, b_hh)
    return h_new, c_new


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


def _register() -> None:
    fakes = (_fake_cell, _fake_cell_backward, _fake_pointwise, _fake_pointwise_backward)
    for name, fake in zip(OPS, fakes):
        torch.library.register_fake(f"benchctl::{name}")(fake)


def opcheck(case: Case) -> None:
    """torch.library.opcheck on all four ops with `case`'s inputs; raises on the first failure."""
    from . import ARGS, make_inputs  # the package imports this module, so import at call time

    load(case.device)
    # opcheck runs each op a dozen ways (fake tensors, AOT autograd, dynamic shapes): small suffices.
    p = dict(case.params)
    small = {"batch_size": min(int(p["batch_size"]), 4), "H": min(int(p["H"]), 16),
             "I": min(int(p.get("I") or p["H"]), 16)}
    inputs = make_inputs(Case(small, case.dtype, case.device, case.seed))
    args = [inputs[k] for k in ARGS]
    _check(torch.ops.benchctl.lstm_cell.default, args)
    with torch.no_grad():
        x, h, c, w_ih, w_hh, b_ih, b_hh = (t.detach() for t in args)
        h_new, c_new, gates = torch.ops.benchctl.lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh)
        pre = torch.addmm(b_ih, x, w_ih.t()) + h.mm(w_hh.t())
        gen = torch.Generator().manual_seed(case.seed + 1)
        grads = [torch.randn(h_new.shape, generator=gen, dtype=torch.float64).to(h_new) for _ in range(2)]
    _check(torch.ops.benchctl.lstm_cell_backward.default, [*grads, x, h, c, w_ih, w_hh, c_new, gates])
    _check(torch.ops.benchctl.lstm_cell_pointwise.default, [pre, b_hh, c])
    _check(torch.ops.benchctl.lstm_cell_pointwise_backward.default, [*grads, c, c_new, gates])


def _check(op: Any, args: list[torch.Tensor]) -> None:
    torch.library.opcheck(op, tuple(args))  # raises OpCheckError naming the failing test


EXT = Extension(OP_NAME, register=_register, anchor="lstm_cell")
load = EXT.load
requires = EXT.requires

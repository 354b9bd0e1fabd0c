"""The LSTM cell with its pointwise step fused by hand in Triton (what the JIT seed fused automatically).

The two matmuls stay with torch (cuBLAS); one Triton kernel adds both biases, applies the four gate
activations and writes h', c' and the activated gates it saves; one backward kernel turns grad h',
grad c' into the pre-activation gradient and grad c. Both are `torch.library.triton_op`s, so
torch.compile sees them; the forward is autotuned over two block widths.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

from . import OP

CONFIGS = [triton.Config({"BLOCK": 32}, num_warps=1), triton.Config({"BLOCK": 128}, num_warps=4)]
BWD_BLOCK = 64


def compute_type(dtype: torch.dtype) -> tl.dtype:
    """float64 stays float64 (the check's reference precision); the rest computes in float32."""
    return tl.float64 if dtype == torch.float64 else tl.float32


@triton.jit
def _tanh(x):
    return 2 * tl.sigmoid(2 * x) - 1


@triton.jit
def _row_columns(hidden, BLOCK: tl.constexpr):
    """This program's batch row (grid axis 0), its BLOCK columns of the hidden size (axis 1), their mask."""
    col = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    return tl.program_id(0), col, col < hidden


@triton.jit
def _gate(pre_ptr, bi_ptr, bh_ptr, row, k, col, m, hidden, ACC: tl.constexpr):
    """Gate k's pre-activation with both biases added."""
    z = tl.load(pre_ptr + row * 4 * hidden + k * hidden + col, mask=m).to(ACC)
    return z + tl.load(bi_ptr + k * hidden + col, mask=m).to(ACC) + tl.load(bh_ptr + k * hidden + col, mask=m).to(ACC)


@triton.autotune(configs=CONFIGS, key=["hidden"])
@triton.jit
def lstm_pointwise_fwd(pre_ptr, bi_ptr, bh_ptr, c_ptr, h_out, c_out, act_ptr, hidden,
                       ACC: tl.constexpr, BLOCK: tl.constexpr):
    row, col, m = _row_columns(hidden, BLOCK)
    i = tl.sigmoid(_gate(pre_ptr, bi_ptr, bh_ptr, row, 0, col, m, hidden, ACC))
    f = tl.sigmoid(_gate(pre_ptr, bi_ptr, bh_ptr, row, 1, col, m, hidden, ACC))
    g = _tanh(_gate(pre_ptr, bi_ptr, bh_ptr, row, 2, col, m, hidden, ACC))
    o = tl.sigmoid(_gate(pre_ptr, bi_ptr, bh_ptr, row, 3, col, m, hidden, ACC))
    base = row * 4 * hidden + col
    tl.store(act_ptr + base, i, mask=m)
    tl.store(act_ptr + base + hidden, f, mask=m)
    tl.store(act_ptr + base + 2 * hidden, g, mask=m)
    tl.store(act_ptr + base + 3 * hidden, o, mask=m)
    c_new = f * tl.load(c_ptr + row * hidden + col, mask=m).to(ACC) + i * g
    tl.store(c_out + row * hidden + col, c_new, mask=m)
    tl.store(h_out + row * hidden + col, o * _tanh(c_new), mask=m)


@triton.jit
def lstm_pointwise_bwd(gh_ptr, gc_ptr, c_ptr, cn_ptr, act_ptr, dpre_ptr, dc_ptr, hidden,
                       ACC: tl.constexpr, BLOCK: tl.constexpr):
    row, col, m = _row_columns(hidden, BLOCK)
    at = row * hidden + col
    base = row * 4 * hidden + col
    i = tl.load(act_ptr + base, mask=m).to(ACC)
    f = tl.load(act_ptr + base + hidden, mask=m).to(ACC)
    g = tl.load(act_ptr + base + 2 * hidden, mask=m).to(ACC)
    o = tl.load(act_ptr + base + 3 * hidden, mask=m).to(ACC)
    gh = tl.load(gh_ptr + at, mask=m).to(ACC)
    tc = _tanh(tl.load(cn_ptr + at, mask=m).to(ACC))
    dc = tl.load(gc_ptr + at, mask=m).to(ACC) + gh * o * (1 - tc * tc)
    tl.store(dpre_ptr + base, dc * g * i * (1 - i), mask=m)
    tl.store(dpre_ptr + base + hidden, dc * tl.load(c_ptr + at, mask=m).to(ACC) * f * (1 - f), mask=m)
    tl.store(dpre_ptr + base + 2 * hidden, dc * i * (1 - g * g), mask=m)
    tl.store(dpre_ptr + base + 3 * hidden, gh * tc * o * (1 - o), mask=m)
    tl.store(dc_ptr + at, dc * f, mask=m)


KERNELS = (lstm_pointwise_fwd, lstm_pointwise_bwd)


@triton_op("benchctl_triton::lstm_pointwise", mutates_args=())
def lstm_pointwise(pre: torch.Tensor, b_ih: torch.Tensor, b_hh: torch.Tensor,
                   c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    pre, c = pre.contiguous(), c.contiguous()
    rows, hidden = c.shape
    h_new, c_new, act = torch.empty_like(c), torch.empty_like(c), torch.empty_like(pre)
    grid = lambda meta: (rows, triton.cdiv(hidden, meta["BLOCK"]))  # noqa: E731
    wrap_triton(lstm_pointwise_fwd)[grid](pre, b_ih.contiguous(), b_hh.contiguous(), c, h_new, c_new, act,
                                          hidden, ACC=compute_type(c.dtype))
    return h_new, c_new, act


@triton_op("benchctl_triton::lstm_pointwise_backward", mutates_args=())
def lstm_pointwise_backward(grad_h: torch.Tensor, grad_c: torch.Tensor, c: torch.Tensor, c_new: torch.Tensor,
                            act: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    rows, hidden = c.shape
    d_pre, d_c = torch.empty_like(act), torch.empty_like(c)
    grid = (rows, triton.cdiv(hidden, BWD_BLOCK))
    wrap_triton(lstm_pointwise_bwd)[grid](grad_h.contiguous(), grad_c.contiguous(), c.contiguous(), c_new, act,
                                          d_pre, d_c, hidden, ACC=compute_type(c.dtype), BLOCK=BWD_BLOCK)
    return d_pre, d_c


def _setup(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[3], output[1], output[2])


def _backward(ctx, grad_h, grad_c, _grad_act):
    c, c_new, act = ctx.saved_tensors
    grad_h = torch.zeros_like(c) if grad_h is None else grad_h
    grad_c = torch.zeros_like(c) if grad_c is None else grad_c
    d_pre, d_c = lstm_pointwise_backward(grad_h, grad_c, c, c_new, act)
    d_bias = d_pre.sum(0)
    return d_pre, d_bias, d_bias, d_c


lstm_pointwise.register_autograd(_backward, setup_context=_setup)


@OP.implementation("triton", kernels=KERNELS)
def lstm_cell_triton(x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w_ih: torch.Tensor,
                     w_hh: torch.Tensor, b_ih: torch.Tensor, b_hh: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Torch matmuls + one fused Triton pointwise kernel each way (autotuned forward)."""
    h_new, c_new, _act = lstm_pointwise(x.mm(w_ih.t()) + h.mm(w_hh.t()), b_ih, b_hh, c)
    return h_new, c_new

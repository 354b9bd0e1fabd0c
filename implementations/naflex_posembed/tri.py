"""The NaFlex fused gather-add in Triton: each token looks its four table taps up itself.

Forward: one program per (block of tokens, block of D) computes each token's bilinear taps (torch's upsample
arithmetic: scale = in/out, src = scale * (dst + 0.5) - 0.5 clamped at 0), reads the four table rows
and writes x + pos; padding tokens (coords -1) get nothing. Backward: grad x is grad_out itself, and
the table's gradient is a scatter-add of the four weighted taps (atomic adds, accumulated in float32,
or float64 for float64). Both are `torch.library.triton_op`s.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from torch.library import triton_op, wrap_triton

from . import OP

BLOCK_T, BLOCK_D = 16, 64  # tokens x channels per program


def compute_type(dtype: torch.dtype) -> tl.dtype:
    return tl.float64 if dtype == torch.float64 else tl.float32


@triton.jit
def _taps(dst, out_size, in_size, ACC: tl.constexpr):
    """Source rows i0 <= i1 and the weight of i1 for output index dst (align_corners=False)."""
    src = (in_size.to(ACC) / out_size.to(ACC)) * (dst.to(ACC) + 0.5) - 0.5
    src = tl.maximum(src, 0.0)
    i0 = tl.minimum(src.to(tl.int64), in_size - 1)
    i1 = tl.minimum(i0 + 1, in_size - 1)
    return i0, i1, tl.minimum(src - i0.to(ACC), 1.0)


@triton.jit
def _corners(coords_ptr, sizes_ptr, tok, tokens, seq_len, grid_h, grid_w, ACC: tl.constexpr):
    """Per token of the block: whether it is valid, its four table rows and their weights."""
    inside = tok < tokens
    b = tok // seq_len
    y = tl.load(coords_ptr + tok * 2, mask=inside, other=-1)
    x = tl.load(coords_ptr + tok * 2 + 1, mask=inside, other=-1)
    h = tl.load(sizes_ptr + b * 2, mask=inside, other=1)
    w = tl.load(sizes_ptr + b * 2 + 1, mask=inside, other=1)
    valid = (y >= 0) & (x >= 0) & (y < h) & (x < w)
    y0, y1, ly = _taps(tl.maximum(y, 0), h, grid_h, ACC)
    x0, x1, lx = _taps(tl.maximum(x, 0), w, grid_w, ACC)
    return valid, y0 * grid_w + x0, y0 * grid_w + x1, y1 * grid_w + x0, y1 * grid_w + x1, \
        (1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx


@triton.jit
def posembed_fwd(x_ptr, table_ptr, coords_ptr, sizes_ptr, out_ptr, tokens, seq_len, dim, grid_h, grid_w,
                 ACC: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK: tl.constexpr):
    tok = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    d = (tl.program_id(1) * BLOCK + tl.arange(0, BLOCK))[None, :]
    valid, r0, r1, r2, r3, w0, w1, w2, w3 = _corners(coords_ptr, sizes_ptr, tok, tokens, seq_len, grid_h,
                                                     grid_w, ACC)
    dm = (d < dim) & (tok < tokens)[:, None]
    m = dm & valid[:, None]
    pos = w0[:, None] * tl.load(table_ptr + r0[:, None] * dim + d, mask=m, other=0.0).to(ACC)
    pos += w1[:, None] * tl.load(table_ptr + r1[:, None] * dim + d, mask=m, other=0.0).to(ACC)
    pos += w2[:, None] * tl.load(table_ptr + r2[:, None] * dim + d, mask=m, other=0.0).to(ACC)
    pos += w3[:, None] * tl.load(table_ptr + r3[:, None] * dim + d, mask=m, other=0.0).to(ACC)
    at = tok[:, None] * dim + d
    tl.store(out_ptr + at, tl.load(x_ptr + at, mask=dm).to(ACC) + pos, mask=dm)


@triton.jit
def posembed_table_bwd(grad_ptr, coords_ptr, sizes_ptr, gtable_ptr, tokens, seq_len, dim, grid_h, grid_w,
                       ACC: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK: tl.constexpr):
    tok = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    d = (tl.program_id(1) * BLOCK + tl.arange(0, BLOCK))[None, :]
    valid, r0, r1, r2, r3, w0, w1, w2, w3 = _corners(coords_ptr, sizes_ptr, tok, tokens, seq_len, grid_h,
                                                     grid_w, ACC)
    m = (d < dim) & valid[:, None]
    g = tl.load(grad_ptr + tok[:, None] * dim + d, mask=m, other=0.0).to(ACC)
    tl.atomic_add(gtable_ptr + r0[:, None] * dim + d, w0[:, None] * g, mask=m)
    tl.atomic_add(gtable_ptr + r1[:, None] * dim + d, w1[:, None] * g, mask=m)
    tl.atomic_add(gtable_ptr + r2[:, None] * dim + d, w2[:, None] * g, mask=m)
    tl.atomic_add(gtable_ptr + r3[:, None] * dim + d, w3[:, None] * g, mask=m)


KERNELS = (posembed_fwd, posembed_table_bwd)


@triton_op("benchctl_triton::naflex_posembed", mutates_args=())
def posembed(x: torch.Tensor, table: torch.Tensor, coords: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    x, table = x.contiguous(), table.contiguous()
    batch, seq_len, dim = x.shape
    out = torch.empty_like(x)
    grid = (triton.cdiv(batch * seq_len, BLOCK_T), triton.cdiv(dim, BLOCK_D))
    wrap_triton(posembed_fwd)[grid](x, table, coords.contiguous(), sizes.contiguous(), out, batch * seq_len,
                                    seq_len, dim, table.shape[0], table.shape[1], ACC=compute_type(x.dtype),
                                    BLOCK_T=BLOCK_T, BLOCK=BLOCK_D)
    return out


@triton_op("benchctl_triton::naflex_posembed_table_backward", mutates_args=())
def table_backward(grad_out: torch.Tensor, table: torch.Tensor, coords: torch.Tensor,
                   sizes: torch.Tensor) -> torch.Tensor:
    grad_out = grad_out.contiguous()
    batch, seq_len, dim = grad_out.shape
    acc = torch.float64 if table.dtype == torch.float64 else torch.float32
    grad_table = torch.zeros(table.shape, dtype=acc, device=table.device)
    grid = (triton.cdiv(batch * seq_len, BLOCK_T), triton.cdiv(dim, BLOCK_D))
    wrap_triton(posembed_table_bwd)[grid](grad_out, coords.contiguous(), sizes.contiguous(), grad_table,
                                          batch * seq_len, seq_len, dim, table.shape[0], table.shape[1],
                                          ACC=compute_type(table.dtype), BLOCK_T=BLOCK_T, BLOCK=BLOCK_D)
    return grad_table.to(table.dtype)


def _setup(ctx, inputs, output) -> None:
    _, table, coords, sizes = inputs
    ctx.save_for_backward(table, coords, sizes)


def _backward(ctx, grad_out):
    table, coords, sizes = ctx.saved_tensors
    grad_table = table_backward(grad_out, table, coords, sizes) if ctx.needs_input_grad[1] else None
    return grad_out, grad_table, None, None


posembed.register_autograd(_backward, setup_context=_setup)


@OP.implementation("triton", kernels=KERNELS)
def posembed_triton(x: torch.Tensor, table: torch.Tensor, coords: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """Triton fused gather-interpolate-add; backward scatter-adds (atomics) into the table gradient."""
    return posembed(x, table, coords, sizes)

"""The hoconv2d per-pixel filter in Triton, forward and backward.

out[b,c,h,w] = sum_{i,j<k} Wt[b,i*k+j,h,w] * X[b,c,h+i-k//2,w+j-k//2] (zeros outside the image).
Forward: one program per (sample and channel, block of pixels) walks the k*k taps. Backward: grad Wt
per (sample, block of pixels) sums over channels; grad X in gather form (each input pixel reads the
outputs it fed), so no atomics. All are `torch.library.triton_op`s.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from torch.library import triton_op, wrap_triton

from . import OP

BLOCK = 128  # pixels per program


def compute_type(dtype: torch.dtype) -> tl.dtype:
    return tl.float64 if dtype == torch.float64 else tl.float32


@triton.jit
def _shifted(ptr, y, x, dy, dx, height, width, m):
    """ptr[y + dy, x + dx] of one (H, W) plane, zero outside it."""
    yy, xx = y + dy, x + dx
    inside = m & (yy >= 0) & (yy < height) & (xx >= 0) & (xx < width)
    return tl.load(ptr + yy * width + xx, mask=inside, other=0.0)


@triton.jit
def _pixels(height, width, BLOCK: tl.constexpr):
    """This program's BLOCK pixels of an (H, W) plane (grid axis 1): flat index, mask, row, column, and
    the plane's size."""
    pix = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    return pix, pix < height * width, pix // width, pix % width, height * width


@triton.jit
def _plane_pixels(channels, height, width, BLOCK: tl.constexpr):
    """This program's plane of the (B * C) planes (grid axis 0), its batch, and its pixels (`_pixels`)."""
    bc = tl.program_id(0).to(tl.int64)  # 64-bit offsets: the weights of B=2048 at 224x224, k=5, pass 2^31
    pix, m, y, x, plane = _pixels(height, width, BLOCK)
    return bc, bc // channels, pix, m, y, x, plane


@triton.jit
def hoconv_fwd(x_ptr, w_ptr, out_ptr, channels, height, width, k, ACC: tl.constexpr, BLOCK: tl.constexpr):
    bc, b, pix, m, y, x, plane = _plane_pixels(channels, height, width, BLOCK)
    acc = tl.zeros([BLOCK], dtype=ACC)
    for t in range(k * k):
        wt = tl.load(w_ptr + (b * k * k + t) * plane + pix, mask=m, other=0.0).to(ACC)
        xv = _shifted(x_ptr + bc * plane, y, x, t // k - k // 2, t % k - k // 2, height, width, m).to(ACC)
        acc += wt * xv
    tl.store(out_ptr + bc * plane + pix, acc, mask=m)


@triton.jit
def hoconv_bwd_weights(g_ptr, x_ptr, gw_ptr, channels, height, width, k, ACC: tl.constexpr, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    pix, m, y, x, plane = _pixels(height, width, BLOCK)
    for t in range(k * k):
        acc = tl.zeros([BLOCK], dtype=ACC)
        for c in range(channels):
            g = tl.load(g_ptr + (b * channels + c) * plane + pix, mask=m, other=0.0).to(ACC)
            xv = _shifted(x_ptr + (b * channels + c) * plane, y, x, t // k - k // 2, t % k - k // 2,
                          height, width, m).to(ACC)
            acc += g * xv
        tl.store(gw_ptr + (b * k * k + t) * plane + pix, acc, mask=m)


@triton.jit
def hoconv_bwd_x(g_ptr, w_ptr, gx_ptr, channels, height, width, k, ACC: tl.constexpr, BLOCK: tl.constexpr):
    bc, b, pix, m, y, x, plane = _plane_pixels(channels, height, width, BLOCK)
    acc = tl.zeros([BLOCK], dtype=ACC)
    for t in range(k * k):
        # X[y, x] fed out[y - (i - k//2), x - (j - k//2)] through tap t = i*k + j of that pixel.
        dy, dx = k // 2 - t // k, k // 2 - t % k
        g = _shifted(g_ptr + bc * plane, y, x, dy, dx, height, width, m).to(ACC)
        wt = _shifted(w_ptr + (b * k * k + t) * plane, y, x, dy, dx, height, width, m).to(ACC)
        acc += g * wt
    tl.store(gx_ptr + bc * plane + pix, acc, mask=m)


KERNELS = (hoconv_fwd, hoconv_bwd_weights, hoconv_bwd_x)


def _k(weights: torch.Tensor) -> int:
    k = int(round(weights.shape[1] ** 0.5))
    if k * k != weights.shape[1]:
        raise ValueError(f"hoconv2d (triton): weights must have k*k channels, got {weights.shape[1]}")
    return k


@triton_op("benchctl_triton::hoconv2d_filter", mutates_args=())
def hoconv_filter(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    x, weights = x.contiguous(), weights.contiguous()
    batch, channels, height, width = x.shape
    out = torch.empty_like(x)
    grid = (batch * channels, triton.cdiv(height * width, BLOCK))
    wrap_triton(hoconv_fwd)[grid](x, weights, out, channels, height, width, _k(weights),
                                  ACC=compute_type(x.dtype), BLOCK=BLOCK)
    return out


@triton_op("benchctl_triton::hoconv2d_filter_backward", mutates_args=())
def hoconv_filter_backward(grad_out: torch.Tensor, x: torch.Tensor,
                           weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    grad_out, x, weights = grad_out.contiguous(), x.contiguous(), weights.contiguous()
    batch, channels, height, width = x.shape
    grad_x, grad_w = torch.empty_like(x), torch.empty_like(weights)
    blocks, k, acc = triton.cdiv(height * width, BLOCK), _k(weights), compute_type(x.dtype)
    wrap_triton(hoconv_bwd_weights)[(batch, blocks)](grad_out, x, grad_w, channels, height, width, k,
                                                     ACC=acc, BLOCK=BLOCK)
    wrap_triton(hoconv_bwd_x)[(batch * channels, blocks)](grad_out, weights, grad_x, channels, height, width, k,
                                                          ACC=acc, BLOCK=BLOCK)
    return grad_x, grad_w


def with_backward(filter_op, backward_op) -> None:
    """`backward_op(grad_out, x, weights)` as the autograd of the triton_op `filter_op(x, weights)`."""
    def setup(ctx, inputs, output) -> None:
        ctx.save_for_backward(*inputs)

    def backward(ctx, grad_out):
        x, weights = ctx.saved_tensors
        return backward_op(grad_out, x, weights)

    filter_op.register_autograd(backward, setup_context=setup)


with_backward(hoconv_filter, hoconv_filter_backward)


@OP.implementation("triton", kernels=KERNELS)
def filter_triton(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Triton per-pixel filter: tap loop forward, grad Wt and gather-form grad X backward."""
    return hoconv_filter(x, weights)

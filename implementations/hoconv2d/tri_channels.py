"""hoconv2d's filter in Triton with all of a sample's channels in one program (`triton-channels`).

`triton` (tri.py) runs one program per (sample and channel, block of pixels), so each program reads the
k*k weight planes, most of a pass's bytes, and the sample's C programs read them C times (from L2 when
they run close together). Here one program per (sample, block of pixels) holds a [C_BLOCK, BLOCK] tile
of every channel, as the CUDA kernels loop over channels with the weights in registers: each weight is
loaded once for all channels. grad Wt loads the block's G once for all taps and sums G * shifted X over
the channels tap by tap (a reduction across the tile); grad X is the gather form, so no atomics. Offsets
are 64-bit, as in tri.py.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from torch.library import triton_op, wrap_triton

from . import OP
from .tri import _k, _shifted, compute_type, with_backward

TILE = 512  # elements of a program's [C_BLOCK, BLOCK] tile, at most: 128 pixels up to four channels


def tile(channels: int) -> tuple[int, int]:
    """C_BLOCK (the channels, padded to a power of two) and BLOCK (pixels) of each program."""
    c_block = triton.next_power_of_2(max(channels, 1))
    return c_block, max(16, min(128, TILE // c_block))


@triton.jit
def _tile(channels, height, width, BLOCK: tl.constexpr, C_BLOCK: tl.constexpr):
    """This program's sample b (grid axis 0) and BLOCK pixels (axis 1): flat index, mask, row, column and
    the plane's size; and its channels' plane offsets ([C_BLOCK, 1]) with the tile's mask."""
    b = tl.program_id(0).to(tl.int64)
    pix = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    plane = height * width
    m = pix < plane
    c = tl.arange(0, C_BLOCK)
    planes = ((b * channels + c) * plane)[:, None]
    return b, pix, m, pix // width, pix % width, plane, planes, (c < channels)[:, None] & m[None, :]


@triton.jit
def hoconv_fwd_channels(x_ptr, w_ptr, out_ptr, channels, height, width, k, ACC: tl.constexpr,
                        BLOCK: tl.constexpr, C_BLOCK: tl.constexpr):
    b, pix, m, y, x, plane, planes, cm = _tile(channels, height, width, BLOCK, C_BLOCK)
    acc = tl.zeros([C_BLOCK, BLOCK], dtype=ACC)
    for t in range(k * k):
        wt = tl.load(w_ptr + (b * k * k + t) * plane + pix, mask=m, other=0.0).to(ACC)
        xv = _shifted(x_ptr + planes, y, x, t // k - k // 2, t % k - k // 2, height, width, cm).to(ACC)
        acc += wt[None, :] * xv
    tl.store(out_ptr + planes + pix[None, :], acc, mask=cm)


@triton.jit
def hoconv_bwd_weights_channels(g_ptr, x_ptr, gw_ptr, channels, height, width, k, ACC: tl.constexpr,
                                BLOCK: tl.constexpr, C_BLOCK: tl.constexpr):
    b, pix, m, y, x, plane, planes, cm = _tile(channels, height, width, BLOCK, C_BLOCK)
    g = tl.load(g_ptr + planes + pix[None, :], mask=cm, other=0.0).to(ACC)
    for t in range(k * k):
        xv = _shifted(x_ptr + planes, y, x, t // k - k // 2, t % k - k // 2, height, width, cm).to(ACC)
        tl.store(gw_ptr + (b * k * k + t) * plane + pix, tl.sum(g * xv, axis=0), mask=m)


@triton.jit
def hoconv_bwd_x_channels(g_ptr, w_ptr, gx_ptr, channels, height, width, k, ACC: tl.constexpr,
                          BLOCK: tl.constexpr, C_BLOCK: tl.constexpr):
    b, pix, m, y, x, plane, planes, cm = _tile(channels, height, width, BLOCK, C_BLOCK)
    acc = tl.zeros([C_BLOCK, BLOCK], dtype=ACC)
    for t in range(k * k):
        # X[y, x] fed out[y - (i - k//2), x - (j - k//2)] through tap t = i*k + j of that pixel.
        dy, dx = k // 2 - t // k, k // 2 - t % k
        wt = _shifted(w_ptr + (b * k * k + t) * plane, y, x, dy, dx, height, width, m).to(ACC)
        g = _shifted(g_ptr + planes, y, x, dy, dx, height, width, cm).to(ACC)
        acc += g * wt[None, :]
    tl.store(gx_ptr + planes + pix[None, :], acc, mask=cm)


KERNELS = (hoconv_fwd_channels, hoconv_bwd_weights_channels, hoconv_bwd_x_channels)


@triton_op("benchctl_triton::hoconv2d_filter_channels", mutates_args=())
def filter_channels(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    x, weights = x.contiguous(), weights.contiguous()
    batch, channels, height, width = x.shape
    out = torch.empty_like(x)
    c_block, block = tile(channels)
    wrap_triton(hoconv_fwd_channels)[(batch, triton.cdiv(height * width, block))](
        x, weights, out, channels, height, width, _k(weights), ACC=compute_type(x.dtype), BLOCK=block,
        C_BLOCK=c_block)
    return out


@triton_op("benchctl_triton::hoconv2d_filter_channels_backward", mutates_args=())
def filter_channels_backward(grad_out: torch.Tensor, x: torch.Tensor,
                             weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    grad_out, x, weights = grad_out.contiguous(), x.contiguous(), weights.contiguous()
    batch, channels, height, width = x.shape
    grad_x, grad_w = torch.empty_like(x), torch.empty_like(weights)
    (c_block, block), k, acc = tile(channels), _k(weights), compute_type(x.dtype)
    grid = (batch, triton.cdiv(height * width, block))
    wrap_triton(hoconv_bwd_weights_channels)[grid](grad_out, x, grad_w, channels, height, width, k, ACC=acc,
                                                   BLOCK=block, C_BLOCK=c_block)
    wrap_triton(hoconv_bwd_x_channels)[grid](grad_out, weights, grad_x, channels, height, width, k, ACC=acc,
                                             BLOCK=block, C_BLOCK=c_block)
    return grad_x, grad_w


with_backward(filter_channels, filter_channels_backward)


@OP.implementation("triton-channels", kernels=KERNELS)
def filter_triton_channels(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Triton per-pixel filter, all of a sample's channels in one program (each weight loaded once for
    all channels): tap loop forward, grad Wt and gather-form grad X backward. Not yet timed on a GPU."""
    return filter_channels(x, weights)

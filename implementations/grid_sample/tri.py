"""Bilinear grid_sample in Triton with the seed's fix: a backward that computes the grid gradient only.

Zeros padding, align_corners=False. One program per (sample, block of points) walks the channels:
the forward sums the four in-image taps; the backward reads grad_out and the same taps and writes
d out / d grid, never forming an image gradient, so its time does not grow with the image. Both are
`torch.library.triton_op`s; the image must not require grad.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from torch.library import triton_op, wrap_triton

from . import OP

BLOCK_P = 64


def compute_type(dtype: torch.dtype) -> tl.dtype:
    return tl.float64 if dtype == torch.float64 else tl.float32


@triton.jit
def _pixel(coord, size, ACC: tl.constexpr):
    """align_corners=False unnormalisation, clamped just outside the padding band (keeps floor defined)."""
    v = ((coord.to(ACC) + 1) * size - 1) / 2
    return tl.minimum(tl.maximum(v, -3.0), size + 2.0)


@triton.jit
def _tap(img, x, y, width, height, m):
    inside = m & (x >= 0) & (x < width) & (y >= 0) & (y < height)
    return tl.load(img + y * width + x, mask=inside, other=0.0)


@triton.jit
def _setup(grid_ptr, n, points, width, height, ACC: tl.constexpr, BLOCK: tl.constexpr):
    p = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = p < points
    ix = _pixel(tl.load(grid_ptr + (n * points + p) * 2, mask=m, other=0.0), width, ACC)
    iy = _pixel(tl.load(grid_ptr + (n * points + p) * 2 + 1, mask=m, other=0.0), height, ACC)
    x0, y0 = tl.floor(ix).to(tl.int64), tl.floor(iy).to(tl.int64)
    return p, m, x0, y0, ix - x0.to(ACC), iy - y0.to(ACC)


@triton.jit
def grid_sample_fwd(img_ptr, grid_ptr, out_ptr, channels, height, width, points,
                    ACC: tl.constexpr, BLOCK: tl.constexpr):
    n = tl.program_id(0)
    p, m, x0, y0, tx, ty = _setup(grid_ptr, n, points, width, height, ACC, BLOCK)
    for c in range(channels):
        img = img_ptr + (n * channels + c) * height * width
        top = _tap(img, x0, y0, width, height, m).to(ACC) * (1 - tx) \
            + _tap(img, x0 + 1, y0, width, height, m).to(ACC) * tx
        bottom = _tap(img, x0, y0 + 1, width, height, m).to(ACC) * (1 - tx) \
            + _tap(img, x0 + 1, y0 + 1, width, height, m).to(ACC) * tx
        tl.store(out_ptr + (n * channels + c) * points + p, top * (1 - ty) + bottom * ty, mask=m)


@triton.jit
def grid_sample_grid_bwd(grad_ptr, img_ptr, grid_ptr, dgrid_ptr, channels, height, width, points,
                         ACC: tl.constexpr, BLOCK: tl.constexpr):
    n = tl.program_id(0)
    p, m, x0, y0, tx, ty = _setup(grid_ptr, n, points, width, height, ACC, BLOCK)
    gx = tl.zeros([BLOCK], dtype=ACC)
    gy = tl.zeros([BLOCK], dtype=ACC)
    for c in range(channels):
        img = img_ptr + (n * channels + c) * height * width
        g = tl.load(grad_ptr + (n * channels + c) * points + p, mask=m, other=0.0).to(ACC)
        nw = _tap(img, x0, y0, width, height, m).to(ACC)
        ne = _tap(img, x0 + 1, y0, width, height, m).to(ACC)
        sw = _tap(img, x0, y0 + 1, width, height, m).to(ACC)
        se = _tap(img, x0 + 1, y0 + 1, width, height, m).to(ACC)
        gx += g * ((ne - nw) * (1 - ty) + (se - sw) * ty)
        gy += g * ((sw - nw) * (1 - tx) + (se - ne) * tx)
    # d pixel / d normalised coordinate = size / 2 (align_corners=False)
    tl.store(dgrid_ptr + (n * points + p) * 2, gx * width / 2, mask=m)
    tl.store(dgrid_ptr + (n * points + p) * 2 + 1, gy * height / 2, mask=m)


KERNELS = (grid_sample_fwd, grid_sample_grid_bwd)


@triton_op("benchctl_triton::grid_sample", mutates_args=())
def sample(image: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    image, grid = image.contiguous(), grid.contiguous()
    batch, channels, height, width = image.shape
    points = grid.shape[1] * grid.shape[2]
    out = image.new_empty((batch, channels, grid.shape[1], grid.shape[2]))
    wrap_triton(grid_sample_fwd)[(batch, triton.cdiv(points, BLOCK_P))](
        image, grid, out, channels, height, width, points, ACC=compute_type(image.dtype), BLOCK=BLOCK_P)
    return out


@triton_op("benchctl_triton::grid_sample_grid_backward", mutates_args=())
def grid_backward(grad_out: torch.Tensor, image: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    image, grid = image.contiguous(), grid.contiguous()
    batch, channels, height, width = image.shape
    points = grid.shape[1] * grid.shape[2]
    dgrid = torch.empty_like(grid)
    wrap_triton(grid_sample_grid_bwd)[(batch, triton.cdiv(points, BLOCK_P))](
        grad_out.contiguous(), image, grid, dgrid, channels, height, width, points,
        ACC=compute_type(image.dtype), BLOCK=BLOCK_P)
    return dgrid


def _setup_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs)


def _backward(ctx, grad_out):
    image, grid = ctx.saved_tensors
    return None, grid_backward(grad_out, image, grid)


sample.register_autograd(_backward, setup_context=_setup_context)


@OP.implementation("triton", kernels=KERNELS)
def grid_sample_triton(image: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """Triton bilinear sampling with the grid-only backward (no image gradient is ever formed)."""
    if image.requires_grad and torch.is_grad_enabled():
        raise ValueError("grid_sample (triton): the image must not require grad; it has no gradient here")
    return sample(image, grid)

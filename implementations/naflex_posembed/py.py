"""The seed's two Python versions: a per-sample F.interpolate loop, and one vectorized grid_sample."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import OP


def _resize(table_nchw: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    return F.interpolate(table_nchw, size=size, mode="bilinear", align_corners=False, antialias=False)[0]


@OP.implementation("loop", devices=("cpu", "cuda"))
def posembed_loop(x: torch.Tensor, table: torch.Tensor, coords: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """Per-sample F.interpolate of the table in a Python loop, one resize per distinct size."""
    table_nchw = table.permute(2, 0, 1).unsqueeze(0)  # (1, D, Gh, Gw)
    seq_len = x.shape[1]
    resized: dict[tuple[int, int], torch.Tensor] = {}
    rows = []
    for i, (h, w) in enumerate(sizes.tolist()):  # one host sync for all sizes
        if (h, w) not in resized:
            resized[(h, w)] = _resize(table_nchw, (h, w))  # (D, h, w)
        # Valid tokens come first (padding at the end, as pad_sequence leaves it).
        n = h * w
        pos = resized[(h, w)][:, coords[i, :n, 0], coords[i, :n, 1]].t()  # (n, D)
        rows.append(F.pad(pos, (0, 0, 0, seq_len - n)))
    return x + torch.stack(rows)


def _affine(sizes: torch.Tensor, out_h: int, out_w: int, dtype: torch.dtype) -> torch.Tensor:
    """Per-sample theta mapping the (out_h, out_w) output grid onto that sample's (h, w) corner."""
    sy = out_h / sizes[:, 0].to(dtype)
    sx = out_w / sizes[:, 1].to(dtype)
    zero = torch.zeros_like(sx)
    return torch.stack([torch.stack([sx, zero, sx - 1], -1), torch.stack([zero, sy, sy - 1], -1)], 1)


@OP.implementation("gridsample", devices=("cpu", "cuda"))
def posembed_gridsample(
    x: torch.Tensor, table: torch.Tensor, coords: torch.Tensor, sizes: torch.Tensor
) -> torch.Tensor:
    """One affine_grid + grid_sample resizing the table for the whole batch, then one gather.

    On the CPU in float16 and bfloat16, torch's grid_sample returns NaN for many points of this image, a permuted
    view with its channels innermost (strides (0, 1, G*D, D)), and is right for a contiguous one: such cells are
    `incorrect`, torch's doing, not this code's; float32 and float64 are right."""
    batch, _, dim = x.shape
    out_h, out_w = (int(v) for v in sizes.amax(0).tolist())
    theta = _affine(sizes, out_h, out_w, x.dtype)
    grid = F.affine_grid(theta, [batch, dim, out_h, out_w], align_corners=False)
    image = table.permute(2, 0, 1).unsqueeze(0).expand(batch, -1, -1, -1)  # (B, D, Gh, Gw), a view
    pos = F.grid_sample(image, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    valid = (coords[..., 0] >= 0).unsqueeze(-1).to(x.dtype)
    cy, cx = coords[..., 0].clamp(min=0), coords[..., 1].clamp(min=0)
    rows = torch.arange(batch, device=x.device).unsqueeze(1)
    return x + pos[rows, :, cy, cx] * valid  # (B, L, D): padding tokens get nothing

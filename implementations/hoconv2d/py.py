"""The seed's pad-slice-multiply filter: k*k shifted views of the padded input, autograd for backward."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import OP


@OP.implementation("py", devices=("cpu", "cuda"))
def filter_py(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Pad-slice-multiply with autograd (the seed's Python version)."""
    k = math.isqrt(weights.shape[1])
    pad = k // 2
    height, width = x.shape[-2:]
    xp = F.pad(x, (pad, pad, pad, pad))
    out = torch.zeros_like(x)
    for i in range(k):
        for j in range(k):
            out = out + weights[:, i * k + j : i * k + j + 1] * xp[:, :, i : i + height, j : j + width]
    return out

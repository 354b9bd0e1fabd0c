"""grid_sample: bilinear sampling of a static image at grid points that need gradients.

image (N, C, Hin, Win), no grad; grid (N, Hout, Wout, 2) in [-1, 1], requires grad; zeros padding,
align_corners=False. The seed's slow backward zero-filled an image gradient nobody needed, so it grew
with the image; the right backward computes only the grid gradient and barely grows (random points in
a large image stay bound by memory latency).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import torch

from benchctl.ops import triton_support
from benchctl.ops.param_rules import sizes
from benchctl.ops.registry import Case, Inputs, Operator, Target, randn, register


# Points sit at least this far (in pixels) from a cell edge, where the bilinear gradient jumps:
# float32 rounding of a point must not move it to another cell than the float64 reference uses.
EDGE_MARGIN = 0.05


def random_grid(gen: torch.Generator, n: int, points: int, height: int, width: int) -> torch.Tensor:
    """Normalised (x, y) points, float64, covering the image and a two-pixel band of zero padding."""
    shape = (n, points, points)
    cells = torch.stack([torch.randint(-2, width + 1, shape, generator=gen),
                         torch.randint(-2, height + 1, shape, generator=gen)], -1).double()
    frac = EDGE_MARGIN + (1 - 2 * EDGE_MARGIN) * torch.rand(*shape, 2, generator=gen, dtype=torch.float64)
    size = torch.tensor([width, height], dtype=torch.float64)
    return (2 * (cells + frac) + 1) / size - 1  # inverse of align_corners=False unnormalisation


def make_inputs(case: Case) -> Inputs:
    p = case.params
    gen = case.generator()
    image = randn(case, gen, p["batch_size"], p["C"], p["image_size"], p["image_size"], grad=False)
    grid = random_grid(gen, p["batch_size"], p["points"], p["image_size"], p["image_size"])
    return {"image": image, "grid": grid.to(device=case.device, dtype=case.dtype).requires_grad_()}


def call(fn: Callable[..., torch.Tensor], inputs: Inputs) -> torch.Tensor:
    return fn(inputs["image"], inputs["grid"])


def _points(p: Mapping[str, Any]) -> int:
    return p["batch_size"] * p["points"] ** 2


def fwd_flops(p: Mapping[str, Any]) -> float:  # 4 multiply-adds per channel, ~10 for the taps
    return float(_points(p) * (8 * p["C"] + 10))


def fwd_bytes(p: Mapping[str, Any], itemsize: int) -> float:  # grid, 4 taps per channel, output
    return float(_points(p) * (2 + 5 * p["C"]) * itemsize)


def bwd_flops(p: Mapping[str, Any]) -> float:
    return float(_points(p) * (14 * p["C"] + 14))


def bwd_bytes(p: Mapping[str, Any], itemsize: int) -> float:  # grid, grad_out, 4 taps, grad grid
    return float(_points(p) * (4 + 5 * p["C"]) * itemsize)


# opcheck runs the op a dozen ways (fake tensors, AOT autograd, dynamic shapes): small inputs suffice.
OPCHECK_MAX = {"batch_size": 2, "C": 3, "image_size": 12, "points": 5}


OP = register(
    Operator(
        name="grid_sample",
        description="bilinear grid_sample of a static image; gradients for the grid only",
        params={"batch_size": 4, "C": 3, "image_size": 256, "points": 64},
        quick={"image_size": [256, 1024, 4096]},
        axis="image_size",
        rules=sizes("C", "image_size", "points"),
        reference="py",
        targets=(Target("sample", make_inputs, call, flops=fwd_flops, bytes=fwd_bytes,
                        bwd_flops=bwd_flops, bwd_bytes=bwd_bytes),),
        check_params=lambda p: {**p, "image_size": min(p["image_size"], 512), "points": min(p["points"], 32)},
        check_cases=(
            {"batch_size": 1, "C": 1, "image_size": 5, "points": 7},
            {"batch_size": 2, "C": 4, "image_size": 9, "points": 6},
            {"batch_size": 3, "C": 3, "image_size": 16, "points": 5},
        ),
        source=__file__,
    )
)

# The implementations register themselves with the decorator, as an operator file does: the pure-PyTorch
# ones (py.py), the C++/CUDA extension's (ext.py), and Triton's where triton imports (tri.py).
from . import py, ext  # noqa: E402,F401

if triton_support.missing():
    triton_support.placeholder(OP)
else:
    from . import tri  # noqa: E402,F401

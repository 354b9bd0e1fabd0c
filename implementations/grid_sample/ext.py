"""The grid_sample C++/CUDA extension: loading, autograd and fake kernels, opcheck.

`benchctl::grid_sample_forward(image, grid)` samples bilinearly (zeros padding, align_corners=False);
its backward calls `benchctl::grid_sample_grid_backward(grad_out, image, grid)`, which computes only
the grid gradient. The image must not require grad: a gradient for it is never formed.
"""

from __future__ import annotations

from typing import Any

import torch

from benchctl import customops

OP_NAME = "grid_sample"
FORWARD = "benchctl::grid_sample_forward"
BACKWARD = "benchctl::grid_sample_grid_backward"


def load(device: str) -> float:
    """Build if needed and load the libraries for `device`, then register the Python kernels once."""
    return customops.load(OP_NAME, device, lambda: customops.register_once("grid_sample_forward", _register))


def _register() -> None:
    torch.library.register_fake(FORWARD)(_forward_fake)
    torch.library.register_fake(BACKWARD)(_backward_fake)
    torch.library.register_autograd(FORWARD, _backward, setup_context=_setup_context)


def _forward_fake(image: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    return image.new_empty((image.shape[0], image.shape[1], grid.shape[1], grid.shape[2]))


def _backward_fake(grad_out: torch.Tensor, image: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(grid, memory_format=torch.contiguous_format)


def _setup_context(ctx: Any, inputs: tuple[torch.Tensor, torch.Tensor], output: torch.Tensor) -> None:
    ctx.save_for_backward(*inputs)


def _backward(ctx: Any, grad_out: torch.Tensor) -> tuple[None, torch.Tensor | None]:
    image, grid = ctx.saved_tensors
    if ctx.needs_input_grad[0]:
        raise RuntimeError(f"{FORWARD} computes only the grid gradient; the image must not require grad")
    if not ctx.needs_input_grad[1]:
        return None, None
    return None, torch.ops.benchctl.grid_sample_grid_backward.default(grad_out, image, grid)


def grid_sample(image: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """Our bilinear sampling: own forward, grid-only backward (the image is static)."""
    if image.requires_grad and torch.is_grad_enabled():
        raise ValueError("grid_sample (extension): the image must not require grad; it has no gradient here")
    return torch.ops.benchctl.grid_sample_forward.default(image, grid)  # .default: no overload lookup per call


def prepare(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Load the extension and give the static image a channels-last copy, made once, untimed.

    With channels-last a point's C values share a cache line, so one random point costs two or
    three cache misses instead of 2*C; fair because the image is static across calls.
    """
    load(inputs["image"].device.type)
    image = inputs["image"].contiguous(memory_format=torch.channels_last)
    return {**inputs, "image": image}


def opcheck(inputs: dict[str, torch.Tensor]) -> None:
    """torch.library.opcheck on the forward (grid needing grad) and on the grid backward."""
    load(inputs["image"].device.type)
    image, grid = inputs["image"].detach(), inputs["grid"].detach()
    torch.library.opcheck(torch.ops.benchctl.grid_sample_forward.default, (image, grid.requires_grad_()))
    grad_out = torch.ops.benchctl.grid_sample_forward(image, grid.detach())
    torch.library.opcheck(torch.ops.benchctl.grid_sample_grid_backward.default, (grad_out, image, grid.detach()))

"""Torch's own bilinear grid_sample, with and without the image gradient nobody needs."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import OP


@OP.implementation("py", devices=("cpu", "cuda"))
def grid_sample_py(image: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """F.grid_sample with a static image: torch skips the image gradient."""
    return F.grid_sample(image, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def _drop_grad(leaf: torch.Tensor) -> None:
    # Repeated backward passes would otherwise add each new image gradient into the old one,
    # timing an extra full-image addition the seed's slow path never paid.
    leaf.grad = None


@OP.implementation("py-imagegrad", devices=("cpu", "cuda"))
def grid_sample_imagegrad(image: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """F.grid_sample with the image requiring grad: backward allocates and fills a full image gradient."""
    # A fresh leaf, so only the grid gradient reaches the caller and is compared.
    image = image.detach().requires_grad_()
    image.register_post_accumulate_grad_hook(_drop_grad)
    return F.grid_sample(image, grid, mode="bilinear", padding_mode="zeros", align_corners=False)

"""`cuda`: the CUDA extension, one thread per output element, gather-form backward (no atomics)."""

from __future__ import annotations

import torch

from benchctl import build
from benchctl.registry import Inputs

from . import OP, ext


def _requires(device: str) -> str | None:
    return build.availability(ext.OP_NAME, "cuda")  # cheap: never compiles


def _prepare(inputs: Inputs) -> Inputs:
    ext.load("cuda")
    return inputs


@OP.implementation("cuda", devices=("cuda",), requires=_requires, prepare=_prepare, opcheck=ext.opcheck,
                   build=ext.load)
def filter_cuda(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """CUDA extension: a thread per element for the output and both gradients, no atomics."""
    return torch.ops.benchctl.hoconv2d_filter(x, weights)

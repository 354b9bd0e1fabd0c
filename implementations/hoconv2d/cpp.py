"""`cpp`: the ATen C++ extension, fused forward and backward loops on the CPU."""

from __future__ import annotations

import torch

from benchctl import build
from benchctl.registry import Inputs

from . import OP, ext


def _requires(device: str) -> str | None:
    return build.availability(ext.OP_NAME, "cpu")  # cheap: never compiles


def _prepare(inputs: Inputs) -> Inputs:
    ext.load("cpu")
    return inputs


@OP.implementation("cpp", devices=("cpu",), requires=_requires, prepare=_prepare, opcheck=ext.opcheck,
                   build=ext.load)
def filter_cpp(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """ATen C++ extension: fused, vectorised forward and one-pass backward on the CPU."""
    return torch.ops.benchctl.hoconv2d_filter(x, weights)

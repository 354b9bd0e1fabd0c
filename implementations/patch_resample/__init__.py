"""patch_resample: resample a patch-embedding kernel (Co, Ci, old, old) to (Co, Ci, new, new).

The resampling matrix is the pseudo-inverse of bilinear resizing new -> old (align_corners=False),
i.e. the least-squares inverse of that resize, computed once per (old, new) and cached; it takes no
gradient. `vmap` applies it with two nested torch.vmap (as the seed found it), `bmm` with one
reshape and matmul.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Mapping

import torch
import torch.nn.functional as F

from benchctl.ops.param_rules import sizes
from benchctl.ops.registry import Case, Inputs, Operator, Target, randn, register


@functools.lru_cache(maxsize=16)
def resample_matrix(old: int, new: int) -> torch.Tensor:
    """pinv of the bilinear resize new -> old as a matrix: (new*new, old*old), float64, CPU."""
    basis = torch.eye(new * new, dtype=torch.float64).reshape(new * new, 1, new, new)
    resized = F.interpolate(basis, size=(old, old), mode="bilinear", align_corners=False, antialias=False)
    resize = resized.reshape(new * new, old * old).T  # resize(v) == resize @ v for flattened v
    return torch.linalg.pinv(resize)


def make_inputs(case: Case) -> Inputs:
    p = case.params
    gen = case.generator()
    kernel = randn(case, gen, p["out_channels"], p["in_channels"], p["old_size"], p["old_size"])
    # A copy, so nothing a caller does to its inputs can touch the cached matrix.
    pinv = resample_matrix(p["old_size"], p["new_size"]).to(device=case.device, dtype=case.dtype, copy=True)
    return {"kernel": kernel, "pinv": pinv}


def call(fn: Callable[..., torch.Tensor], inputs: Inputs) -> torch.Tensor:
    return fn(inputs["kernel"], inputs["pinv"])


def _sizes(p: Mapping[str, Any]) -> tuple[int, int, int]:
    """(kernels, old*old, new*new)."""
    return p["out_channels"] * p["in_channels"], p["old_size"] ** 2, p["new_size"] ** 2


def flops(p: Mapping[str, Any]) -> float:  # one (old², new²) matrix-vector product per kernel
    k, old, new = _sizes(p)
    return 2.0 * k * old * new


def fwd_bytes(p: Mapping[str, Any], itemsize: int) -> float:  # read kernel and matrix, write out
    k, old, new = _sizes(p)
    return float(k * old + old * new + k * new) * itemsize


def bwd_bytes(p: Mapping[str, Any], itemsize: int) -> float:  # read grad_out and matrix, write grad kernel
    return fwd_bytes(p, itemsize)


OP = register(
    Operator(
        name="patch_resample",
        description="pinv resampling of a patch-embedding kernel: nested vmap vs one matmul",
        params={"out_channels": 768, "in_channels": 3, "old_size": 32, "new_size": 16},
        quick={"new_size": [8, 12, 16, 24]},
        axis="new_size",
        rules=sizes("out_channels", "in_channels", "old_size", "new_size"),
        reference="bmm",
        targets=(Target("resample", make_inputs, call, flops=flops, bytes=fwd_bytes,
                        bwd_flops=flops, bwd_bytes=bwd_bytes),),
        check_params=lambda p: {**p, "out_channels": min(p["out_channels"], 64)},
        check_cases=(
            {"out_channels": 4, "in_channels": 1, "old_size": 8, "new_size": 5},
            {"out_channels": 6, "in_channels": 3, "old_size": 16, "new_size": 12},
        ),
        source=__file__,
    )
)


@OP.implementation("vmap", devices=("cpu", "cuda"))
def resample_vmap(kernel: torch.Tensor, pinv: torch.Tensor) -> torch.Tensor:
    """Nested torch.vmap over (Co, Ci) of a matrix-vector product per 2-D kernel (the seed's version)."""
    new = math.isqrt(pinv.shape[0])

    def one(k: torch.Tensor) -> torch.Tensor:
        return (pinv @ k.reshape(-1)).reshape(new, new)

    return torch.vmap(torch.vmap(one))(kernel)


@OP.implementation("bmm", devices=("cpu", "cuda"))
def resample_bmm(kernel: torch.Tensor, pinv: torch.Tensor) -> torch.Tensor:
    """One reshape and one matmul: (Co, Ci, old*old) @ pinv.T."""
    co, ci = kernel.shape[:2]
    new = math.isqrt(pinv.shape[0])
    return (kernel.reshape(co, ci, -1) @ pinv.T).reshape(co, ci, new, new)

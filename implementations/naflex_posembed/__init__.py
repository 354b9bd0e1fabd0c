"""naflex_posembed: a learned (G, G, D) position table resized per sample and added to its tokens.

Sample i has an (h_i, w_i) patch grid, 4 <= h, w < G; its tokens x[i] (padded to the longest
sample) get the table, resized bilinearly to (h_i, w_i) (align_corners=False, no antialias), added
at their patch coordinates; padding tokens (coords -1) get nothing. Gradients for x and the table.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import torch

from benchctl.ops import triton_support
from benchctl.ops.param_rules import sizes
from benchctl.ops.registry import Case, Inputs, Operator, Target, randn, register


MIN_SIDE = 4


def patch_coords(sizes: torch.Tensor) -> torch.Tensor:
    """(B, L, 2) int64 (y, x) in row-major order per sample, padded at the end with -1."""
    per_sample = []
    for h, w in sizes.tolist():
        ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        per_sample.append(torch.stack([ys.flatten(), xs.flatten()], 1))
    return torch.nn.utils.rnn.pad_sequence(per_sample, batch_first=True, padding_value=-1)


def make_inputs(case: Case) -> Inputs:
    p = case.params
    gen = case.generator()
    sizes = torch.randint(MIN_SIDE, p["grid"], (p["batch_size"], 2), generator=gen)
    coords = patch_coords(sizes)
    return {
        "x": randn(case, gen, p["batch_size"], coords.shape[1], p["D"]),
        "table": randn(case, gen, p["grid"], p["grid"], p["D"]),
        "coords": coords.to(case.device),
        "sizes": sizes.to(case.device),
    }


def call(fn: Callable[..., torch.Tensor], inputs: Inputs) -> torch.Tensor:
    return fn(inputs["x"], inputs["table"], inputs["coords"], inputs["sizes"])


# Sizes are random per case, so the counts use expectations: sides uniform on [4, G-1] give a
# mean of ((G+3)/2)^2 valid tokens per sample, and the padded length is close to (G-1)^2.
def _valid_tokens(p: Mapping[str, Any]) -> float:
    return p["batch_size"] * ((p["grid"] + MIN_SIDE - 1) / 2) ** 2


def _padded_tokens(p: Mapping[str, Any]) -> float:
    return p["batch_size"] * (p["grid"] - 1) ** 2


def flops(p: Mapping[str, Any]) -> float:  # 4 multiply-adds and the add to x per valid channel
    return _valid_tokens(p) * p["D"] * 9


def fwd_bytes(p: Mapping[str, Any], itemsize: int) -> float:  # read x and table, write out
    return (2 * _padded_tokens(p) + p["grid"] ** 2) * p["D"] * itemsize


def bwd_bytes(p: Mapping[str, Any], itemsize: int) -> float:
    """Read grad_out at the valid tokens, write the table gradient. x's gradient is grad_out itself
    (out = x + pos), which autograd passes on without writing anything."""
    return (_valid_tokens(p) + p["grid"] ** 2) * p["D"] * itemsize


# opcheck runs the op a dozen ways (fake tensors, AOT autograd, dynamic shapes): small inputs suffice.
OPCHECK_MAX = {"batch_size": 3, "D": 8, "grid": 12}


OP = register(
    Operator(
        name="naflex_posembed",
        description="per-sample resize of a learned position table, added to each sample's tokens",
        params={"batch_size": 64, "D": 768, "grid": 32},
        quick={"batch_size": [8, 16, 32]},
        axis="batch_size",
        rules=sizes("D", "grid"),
        reference="loop",
        targets=(Target("add", make_inputs, call, flops=flops, bytes=fwd_bytes,
                        bwd_flops=lambda p: _valid_tokens(p) * p["D"] * 8, bwd_bytes=bwd_bytes),),
        check_params=lambda p: {**p, "batch_size": min(p["batch_size"], 16), "D": min(p["D"], 96)},
        check_cases=(
            {"batch_size": 1, "D": 5, "grid": 8},
            {"batch_size": 7, "D": 33, "grid": 12},
            {"batch_size": 16, "D": 64, "grid": 32},
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

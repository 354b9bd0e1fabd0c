"""A complete operator of your own, in one file: y = x * scale + shift, with two implementations.

Run it with:  benchctl run all cpu --ops-dir examples/ops --op scale_shift
"""

import torch

from benchctl.ops.param_rules import sizes
from benchctl.ops.registry import Case, Operator, Target, randn, register


def make_inputs(case: Case) -> dict[str, torch.Tensor]:
    gen = case.generator()
    n, d = case.params["batch_size"], case.params["dim"]
    return {"x": randn(case, gen, n, d), "scale": randn(case, gen, d), "shift": randn(case, gen, d)}


OP = register(Operator(
    name="scale_shift",
    description="y = x * scale + shift, scale and shift broadcast over the batch",
    params={"batch_size": 64, "dim": 1024},
    quick={"batch_size": [16, 64]},
    targets=(Target(
        "op", make_inputs,
        flops=lambda p: 2.0 * p["batch_size"] * p["dim"],
        bytes=lambda p, size: (2 * p["batch_size"] * p["dim"] + 2 * p["dim"]) * size,
    ),),
    reference="py",
    check_cases=({"batch_size": 3, "dim": 5},),
    rules=sizes("dim"),
))


@OP.implementation("py", devices=("cpu", "cuda"))
def py(x, scale, shift):
    """Two broadcast ops with autograd."""
    return x * scale + shift


@OP.implementation("addcmul", devices=("cpu", "cuda"))
def fused(x, scale, shift):
    """One fused addcmul."""
    return torch.addcmul(shift, x, scale)

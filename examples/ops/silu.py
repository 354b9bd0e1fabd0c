import torch

from benchctl.ops.param_rules import sizes
from benchctl.ops.registry import Operator, Target, randn, register


def make_inputs(case):
    return {"x": randn(case, case.generator(), case.params["batch_size"], case.params["dim"])}


OP = register(Operator(
    name="silu", description="x * sigmoid(x)", params={"batch_size": 64, "dim": 4096},
    targets=(Target("op", make_inputs, bytes=lambda p, size: 2 * p["batch_size"] * p["dim"] * size),),
    quick={"batch_size": [8, 64]}, check_cases=({"batch_size": 3, "dim": 5},), rules=sizes("dim"),
))


@OP.implementation("py")
def py(x):
    return x * torch.sigmoid(x)


@OP.implementation("fused")
def fused(x):
    return torch.nn.functional.silu(x)

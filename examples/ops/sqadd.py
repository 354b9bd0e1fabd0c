"""An operator with a C++ extension of your own: out = x * x + y, in Python and in C++.

The C++ sources sit in sqadd/ beside this file. `Extension` declares them as benchctl's own operators
declare theirs: `benchctl build sqadd --ops-dir examples/ops` compiles them into benchctl's cache (keyed
by the sources, torch version, CUDA arch and compiler; compiler errors are shown as such), and `run` and
`check` build them first when needed.

Run it with:  benchctl run all cpu --ops-dir examples/ops --op sqadd
"""

from pathlib import Path

import torch

from benchctl.ops.extension import FLOATING_TYPES, Extension
from benchctl.ops.param_rules import sizes
from benchctl.ops.registry import Case, Operator, Target, randn, register


# The Python side of the custom op: its fake kernel (shapes only) and its autograd formula.
def _fake(x, y):
    return torch.empty_like(x)


def _setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return 2 * x * grad, grad


EXT = Extension("sqadd", namespace="sqadd_ext", sources=Path(__file__).parent / "sqadd",
                fakes={"sqadd": _fake}, autograd={"sqadd": (_backward, _setup_context)})


def make_inputs(case: Case) -> dict[str, torch.Tensor]:
    gen = case.generator()
    shape = (case.params["batch_size"], case.params["dim"])
    return {"x": randn(case, gen, *shape), "y": randn(case, gen, *shape)}


def opcheck(case: Case) -> None:
    """torch.library.opcheck: schema, fake kernel and autograd registration agree with the kernel."""
    EXT.load(case.device)
    inputs = make_inputs(case)
    torch.library.opcheck(EXT.op("sqadd"), (inputs["x"].requires_grad_(), inputs["y"]))


OP = register(Operator(
    name="sqadd",
    description="out = x * x + y, elementwise",
    params={"batch_size": 64, "dim": 4096},
    quick={"batch_size": [16, 64]},
    targets=(Target(
        "op", make_inputs,
        flops=lambda p: 2.0 * p["batch_size"] * p["dim"],
        bytes=lambda p, size: 3 * p["batch_size"] * p["dim"] * size,
    ),),
    reference="py",
    check_cases=({"batch_size": 3, "dim": 5},),
    rules=sizes("dim"),
))


@OP.implementation("py", devices=("cpu", "cuda"))
def py(x, y):
    """Two elementwise ops with autograd."""
    return x * x + y


@OP.implementation("cpp", devices=("cpu",), requires=EXT.requires, build=EXT.build, prepare=EXT.prepare,
                   opcheck=opcheck, dtypes=FLOATING_TYPES)  # sqadd.cpp's AT_DISPATCH_FLOATING_TYPES
def cpp(x, y):
    """The C++ kernel in sqadd/sqadd.cpp, one pass over x and y."""
    return EXT.op("sqadd")(x, y)

"""A/A benchmark operator `slowed`: a chain of small matmuls whose length grows by AA_SLOWDOWN (e.g. 1.2),
so one run can be made slower on purpose by a known share, with real work."""

import os

import torch

from benchctl.ops.registry import Case, Operator, Target, randn, register

LINKS = 20  # matmuls in the chain at AA_SLOWDOWN=1


def make_inputs(case: Case) -> dict:
    gen = case.generator()
    n = case.params["n"]
    return {"a": randn(case, gen, n, n), "b": randn(case, gen, n, n)}


OP = register(Operator(
    name="slowed",
    description="a chain of n x n matmuls, AA_SLOWDOWN times longer (the A/A benchmark's planted change)",
    params={"n": 64},
    targets=(Target("op", make_inputs),),
    check_cases=({"n": 8},),
))


@OP.implementation("py", devices=("cpu",))
def chain(a, b):
    """LINKS * AA_SLOWDOWN links of tanh(out @ b / sqrt(n))."""
    out = a
    for _ in range(round(LINKS * float(os.environ.get("AA_SLOWDOWN", "1")))):
        out = torch.tanh(out @ b / b.shape[0] ** 0.5)
    return out

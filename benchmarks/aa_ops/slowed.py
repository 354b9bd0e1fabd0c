"""A/A benchmark operator `slowed`: a chain of small matmuls. Its `planted` implementation's chain grows by
AA_SLOWDOWN (e.g. 1.2), so one run can be made slower on purpose by a known share, with real work; its
reference `py`, which `run` times in alternation with it, keeps its length."""

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


def _chain(a, b, links: int):
    """`links` links of tanh(out @ b / sqrt(n))."""
    out = a
    for _ in range(links):
        out = torch.tanh(out @ b / b.shape[0] ** 0.5)
    return out


@OP.implementation("py", devices=("cpu",))
def steady(a, b):
    """LINKS links, whatever AA_SLOWDOWN says."""
    return _chain(a, b, LINKS)


@OP.implementation("planted", devices=("cpu",))
def planted(a, b):
    """LINKS * AA_SLOWDOWN links: the extra ones' result enters the output times zero, so the backward pass
    goes through them too and the output stays `py`'s."""
    extra = round(LINKS * float(os.environ.get("AA_SLOWDOWN", "1"))) - LINKS
    return _chain(a, b, LINKS) + 0.0 * _chain(a, b, extra)

"""`benchctl check`'s library over every built-in operator: each implementation that runs on the CPU
(the ones with a C++ extension in a child process, as `check` runs them) agrees with the float64
reference at every check case, dtype and seed, passes gradcheck and opcheck where it has them, and
reports real errors within the harness's tolerance. The operators' own test files keep only what is
specific to each operator."""

from __future__ import annotations

import math

import pytest
import torch

from benchctl.measure import checks, correctness
from benchctl.measure.check_child import run_checks_isolated
from benchctl.ops import registry
from benchctl.ops.registry import Operator, dtype_name

BUILTINS = registry.discover()


def cpu_implementations(op: Operator) -> list[str]:
    """Every implementation for the CPU; a Triton one only where Triton's interpreter runs here. Any other
    reason one cannot run (a failed build) is left for the test to fail on."""
    return [name for name, impl in op.implementations.items() if "cpu" in impl.devices
            and not (impl.kernels and impl.unavailable_reason("cpu", timed=False))]


def expected_reference_rows(op: Operator, name: str) -> set[tuple[str, str, str]]:
    """(target, dtype, case) of every reference comparison `check` owes this implementation."""
    impl = op.implementations[name]
    dtypes = [d for d in checks.DTYPES if impl.dtype_reason(d) is None]
    shapes = checks.cases(op, interpreted=bool(impl.kernels))
    return {(t.name, dtype_name(d), checks._case_label(p, s))
            for t in op.targets for p in shapes for d in dtypes for s in checks.SEEDS}


def assert_real_pass(row: checks.CheckRow) -> None:
    """A reference row passed with finite errors inside its dtype's tolerance, on a nonzero scale."""
    tol = correctness.tolerance(getattr(torch, row.dtype), "cpu")
    assert row.passed is True, f"{row.name()}: {row.detail}"
    assert row.tolerance == tol, row.name()
    assert math.isfinite(row.max_abs_err) and math.isfinite(row.max_rel_err), row.name()
    assert 0 <= row.max_rel_err <= tol, f"{row.name()}: error {row.max_rel_err:.3g} > {tol:.3g}"


@pytest.mark.parametrize("op_name", sorted(BUILTINS))
def test_check_passes_every_cpu_implementation(op_name: str) -> None:
    op = BUILTINS[op_name]
    names = cpu_implementations(op)
    assert names, f"{op_name} has no CPU implementation"
    rows = list(run_checks_isolated([(op, op.implementations[n], "cpu") for n in names], [], None))
    for name in names:
        mine = [r for r in rows if r.impl == name]
        assert not [r for r in mine if r.kind == "unavailable" and not r.dtype], [r.detail for r in mine]
        reference = [r for r in mine if r.kind == "reference"]
        assert {(r.target, r.dtype, r.case) for r in reference} == expected_reference_rows(op, name)
        for row in reference:
            assert_real_pass(row)
        grads = [r for r in mine if r.kind == "gradcheck"]
        assert len(grads) == len(op.targets), name
        for row in grads:  # only Triton's interpreter may skip it, saying so
            assert row.passed is True or row.detail == checks.GRADCHECK_NOT_INTERPRETED, f"{row.name()}: {row.detail}"
        opcheck = [r for r in mine if r.kind == "opcheck"]
        assert len(opcheck) == (op.implementations[name].opcheck is not None), name
        assert all(r.passed is True for r in opcheck), [r.detail for r in opcheck]
    assert all(r.passed is not False for r in rows), [f"{r.name()}: {r.detail}" for r in rows if r.passed is False]


def test_given_params_reach_the_check_child_of_an_extension() -> None:
    op = BUILTINS["lstm_cell"]
    given = {"lstm_cell": [{"batch_size": 2, "H": 40, "I": None}]}  # a width none of its own cases has
    rows = list(run_checks_isolated([(op, op.implementations["cpp"], "cpu")], [], None, given))
    reference = [r for r in rows if r.kind == "reference"]
    assert {r.case.split(" seed=")[0] for r in reference} == {"H=40 I=None batch_size=2"}
    for row in reference:
        assert_real_pass(row)
    assert {r.case for r in rows if r.kind == "gradcheck"} == {checks._case_label(checks.cases(op)[0])}


@pytest.mark.parametrize("op_name", ["grid_sample", "hoconv2d", "lstm_cell", "naflex_posembed"])
def test_each_extension_declares_the_dtypes_its_kernels_dispatch_for(op_name):
    """Kernels written with AT_DISPATCH_FLOATING_TYPES run float32 and float64 only: a bfloat16 cell of `cpp` or
    `cuda` is `unavailable` with that reason, not an `error` from the dispatcher ("not implemented for
    'BFloat16'")."""
    from pathlib import Path

    from benchctl.ops.extension import FLOATING_TYPES

    op = BUILTINS[op_name]
    sources = Path(__file__).parents[2] / "extensions" / op_name
    dispatches = {line.split("(")[0].strip() for f in sources.iterdir() if f.suffix in (".cpp", ".cu")
                  for line in f.read_text().splitlines() if "AT_DISPATCH_" in line}
    assert dispatches == {"AT_DISPATCH_FLOATING_TYPES"}
    for name in ("cpp", "cuda"):
        assert op.implementations[name].dtypes == FLOATING_TYPES
        assert op.implementations[name].dtype_reason(torch.bfloat16) == f"{name} supports float32, float64 only, " \
                                                                        "not bfloat16"

"""What `benchctl check` says when a check fails: opcheck's explanation whole, and a dtype error from a
kernel written for one dtype pointing at `dtypes=`."""

import torch

from benchctl.measure import checks
from benchctl.ops import registry
from benchctl.ops.registry import Case, Operator, Target, randn

OPCHECK_TEXT = ("Failed to find the fake impl for mylib::op: it must be found in 'mylib.ops'.\n"
                "Please either move the fake impl or correct the m.set_python_module call (registered at x.cpp:9).")


def make_op(name: str) -> Operator:
    def inputs(case: Case):
        return {"x": randn(case, case.generator(), 2, 3)}

    op = Operator(name, "d", {"batch_size": 2}, (Target("op", inputs),), check_cases=({"batch_size": 2},))
    op.implementation("py")(lambda x: x * 2)
    return registry.register(op)


def test_an_opcheck_failure_is_shown_whole():
    op = make_op("msg_opcheck")

    def opcheck(case: Case) -> None:
        raise RuntimeError(OPCHECK_TEXT)

    op.implementation("ext", opcheck=opcheck)(lambda x: x * 2)
    [row] = [r for r in checks.check_impl(op, op.implementations["ext"], "cpu") if r.kind == "opcheck"]
    assert row.passed is False
    assert row.detail.startswith("RuntimeError: Failed to find the fake impl")
    assert "correct the m.set_python_module call (registered at x.cpp:9)." in row.detail


def test_a_float32_kernel_checked_at_float64_suggests_dtypes():
    op = make_op("msg_dtype")

    def f32_kernel(x):
        if x.dtype != torch.float32:
            raise RuntimeError(f"expected scalar type Float but found {x.dtype}")
        return x * 2

    op.implementation("ext")(f32_kernel)
    rows = list(checks.check_impl(op, op.implementations["ext"], "cpu"))
    failed = [r for r in rows if r.passed is False]
    assert {(r.kind, r.dtype) for r in failed} == {("reference", "float64"), ("gradcheck", "float64")}
    assert all('dtypes=("float32",)' in r.detail and "hint: ext fails at float64" in r.detail for r in failed)
    passed = [r for r in rows if r.kind == "reference" and r.dtype == "float32"]
    assert len(passed) == 2 and all(r.passed and "hint" not in r.detail for r in passed)


def test_other_errors_get_no_dtype_hint():
    op = make_op("msg_other")
    op.implementation("ext")(lambda x: x.view(7))
    failed = [r for r in checks.check_impl(op, op.implementations["ext"], "cpu") if r.passed is False]
    assert failed and not any("dtypes=" in r.detail for r in failed)


def test_a_wrong_gradient_gets_no_dtype_hint_for_the_jacobians_it_prints():
    """gradcheck's message prints the Jacobians as tensors (`dtype=torch.float64`), which is no dtype error."""
    op = make_op("msg_jacobian")
    op.implementation("ext")(lambda x: x * 2 + (x * x).detach())  # the detached term's gradient is missing
    [row] = [r for r in checks.check_impl(op, op.implementations["ext"], "cpu") if r.kind == "gradcheck"]
    assert row.passed is False and row.detail.startswith("GradcheckError: Jacobian mismatch")
    assert "hint" not in row.detail

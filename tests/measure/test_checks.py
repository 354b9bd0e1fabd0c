"""`benchctl check` rows: the gate's checks over seeds, shapes and dtypes."""

from benchctl.measure import checks
from benchctl.ops import registry


def test_check_fails_an_implementation_that_changes_its_input_in_place(fixture_ops):
    op = registry.get("faulty")
    rows = [r for r in checks.check_impl(op, op.implementations["scribble"], "cpu") if r.kind == "reference"]
    assert len(rows) == 4 and not any(r.passed for r in rows)  # 2 dtypes x 2 seeds
    assert {r.detail for r in rows} == {"modified input x in place"}
    good = [r for r in checks.check_impl(op, op.implementations["py"], "cpu") if r.kind == "reference"]
    assert len(good) == 4 and all(r.passed for r in good)


def test_a_float32_only_kernel_is_checked_at_float32_and_unavailable_at_float64(fixture_ops):
    op = registry.get("faulty")
    rows = list(checks.check_impl(op, op.implementations["f32only"], "cpu"))
    reference = [r for r in rows if r.kind == "reference"]
    assert {r.dtype for r in reference} == {"float32"} and all(r.passed for r in reference)
    [unsupported] = [r for r in rows if r.kind == "unavailable"]
    assert unsupported.dtype == "float64" and unsupported.passed is None
    assert unsupported.detail == "f32only supports float32 only, not float64"
    [gradcheck] = [r for r in rows if r.kind == "gradcheck"]
    assert gradcheck.passed is None and gradcheck.detail.startswith("gradcheck needs float64")
    assert not any(r.passed is False for r in rows)


def test_a_number_among_the_inputs_reaches_the_implementation(fixture_ops):
    from benchctl.measure.execute import run_cell
    from benchctl.ops.cells import Cell

    op = registry.get("axpy")
    rows = list(checks.check_impl(op, op.implementations["fused"], "cpu"))
    assert rows and all(r.passed for r in rows), [r for r in rows if not r.passed]
    cell = Cell.make("axpy", "op", "fused", "cpu", "float32", {"batch_size": 4, "dim": 8, "alpha": 2.0})
    assert {r["status"] for r in run_cell(cell)} == {"ok"}


def test_given_params_replace_the_check_cases_for_the_reference_only(fixture_ops):
    op = registry.get("faulty")
    tail = op.implementations["tail"]
    own = list(checks.check_impl(op, tail, "cpu"))
    assert own and all(r.passed for r in own if r.kind == "reference")  # dim 3: the scalar path
    given = [{"batch_size": 2, "dim": 8}, {"batch_size": 2, "dim": 10}]
    rows = list(checks.check_impl(op, tail, "cpu", given))
    reference = [r for r in rows if r.kind == "reference"]
    assert {r.case.split(" seed=")[0] for r in reference} == {"batch_size=2 dim=8", "batch_size=2 dim=10"}
    assert {r.case.split(" seed=")[0] for r in reference if not r.passed} == {"batch_size=2 dim=10"}
    assert all(0.9 < r.max_rel_err <= 1.0 for r in reference if not r.passed)  # whole columns left at zero
    [gradcheck] = [r for r in rows if r.kind == "gradcheck"]
    assert gradcheck.case == "batch_size=2 dim=3" and gradcheck.passed  # the operator's own, small case


def test_the_dtypes_asked_for_are_compared_with_the_reference_and_gradcheck_stays_in_float64(fixture_ops):
    import torch

    op = registry.get("faulty")
    rows = list(checks.check_impl(op, op.implementations["py"], "cpu", dtypes=(torch.bfloat16,)))
    reference = [r for r in rows if r.kind == "reference"]
    assert len(reference) == 2 and {r.dtype for r in reference} == {"bfloat16"} and all(r.passed for r in reference)
    assert all(r.tolerance == 5e-2 for r in reference)  # bfloat16's bar, not float32's
    [gradcheck] = [r for r in rows if r.kind == "gradcheck"]
    assert gradcheck.dtype == "float64" and gradcheck.passed
    f32 = list(checks.check_impl(op, op.implementations["f32only"], "cpu", dtypes=(torch.bfloat16,)))
    assert [(r.kind, r.dtype) for r in f32 if r.kind in ("reference", "unavailable")] == [("unavailable", "bfloat16")]


def test_an_operator_with_no_input_that_requires_grad_is_checked_without_gradcheck(output_ops):
    op = registry.get("rowmax")
    rows = list(checks.check_impl(op, op.implementations["sort"], "cpu"))
    assert [r.passed for r in rows if r.kind == "reference"] == [True] * 4
    [gradcheck] = [r for r in rows if r.kind == "gradcheck"]
    assert gradcheck.passed is None and gradcheck.detail == "no input requires grad: nothing to gradcheck"


def test_a_router_s_indices_are_compared_exactly_and_its_weights_gradcheck(output_ops):
    op = registry.get("router")
    for impl in ("topk_first", "listed"):  # a list of outputs as a tuple
        good = list(checks.check_impl(op, op.implementations[impl], "cpu"))
        assert len(good) == 5 and all(r.passed for r in good)
    bad = [r for r in checks.check_impl(op, op.implementations["swapped"], "cpu") if r.kind == "reference"]
    assert len(bad) == 4 and not any(r.passed for r in bad)
    assert all(r.detail.startswith("output1: 6 of 6 elements differ") for r in bad)


def test_a_forward_only_implementation_is_checked_on_its_outputs_alone(output_ops):
    """Its outputs carry no gradient where the reference's do: the outputs are compared, and gradcheck says why it
    has nothing to check (a wrong gradient is still a failure: the reference's compare them where it has some)."""
    op = registry.get("router")
    rows = list(checks.check_impl(op, op.implementations["inference"], "cpu"))
    assert [r.passed for r in rows if r.kind == "reference"] == [True] * 4
    [gradcheck] = [r for r in rows if r.kind == "gradcheck"]
    assert gradcheck.passed is None and gradcheck.detail.startswith("its outputs carry no gradient")


def test_a_backward_the_reference_has_none_of_is_not_passed_unchecked(output_ops):
    op = registry.get("rowmax")
    rows = [r for r in checks.check_impl(op, op.implementations["grad"], "cpu") if r.kind == "reference"]
    assert len(rows) == 4 and not any(r.passed for r in rows)
    assert all("grad: the reference's outputs carry no gradient, and this implementation's do" in r.detail
               for r in rows)

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

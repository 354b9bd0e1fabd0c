"""Inputs changed in place: the marks taken before a cell's first call, read again after its passes."""

import pytest
import torch

from benchctl.measure import tamper
from benchctl.measure.prepared import prepare
from benchctl.ops.cells import Cell


def test_marks_find_an_input_zeroed_or_rescaled_and_nothing_in_one_left_alone():
    inputs = {"x": torch.randn(64, 100), "w": torch.randn(100), "n": torch.arange(5), "empty": torch.empty(0),
              "scale": 0.5, "nan": torch.tensor([float("nan"), 1.0])}
    marks = tamper.Marks(inputs)
    assert len(marks.kept["x"][1]) == tamper.MARKS and len(marks.kept["w"][1]) == 100  # all of a small input
    assert marks.changed(inputs) == []  # a NaN reads as itself
    inputs["x"].zero_()
    inputs["w"].mul_(2.0)
    inputs["n"][3] = 7  # a small input is kept whole: one element is enough
    assert marks.changed(inputs) == ["x", "w", "n"]
    assert marks.changed(inputs, skip=("x", "n")) == ["w"]
    assert tamper.in_place(["x"]) == ("its calls modified input x in place: the timed calls, and the reference that "
                                      "checks them, had other data than the cell's")
    assert tamper.in_place([]) == ""


def test_marks_of_a_transposed_an_expanded_and_a_0_dim_input_read_their_own_values():
    base, row = torch.randn(300, 200), torch.randn(1, 500)
    inputs = {"xt": base.t(), "row": row.expand(400, 500), "s": torch.tensor(2.0)}
    marks = tamper.Marks(inputs)
    (i, j), values = marks.kept["xt"]
    assert torch.equal(values, base[j, i])  # positions of the transposed view, not of its storage
    assert marks.changed(inputs) == []
    base[:, :100].zero_()  # half of xt's rows
    row.mul_(-1.0)  # the one stored row, seen by every row of the view
    inputs["s"].fill_(3.0)
    assert marks.changed(inputs) == ["xt", "row", "s"]


def test_a_cell_whose_draws_refresh_an_input_is_judged_on_the_others(fixture_ops):
    """The key holds the rotation's data (fresh.py), and the others an unseen draw's until the next draw: neither
    is a change the implementation made."""
    cell = Cell.make("axpy", "op", "py", "cpu", "float32", {"batch_size": 4, "dim": 8, "alpha": 0.5})
    prepared = prepare(cell.resolve())
    setup = prepared.setup("forward")
    for _ in range(4):
        setup()
    pool = prepared.pool
    (other,) = pool.others
    assert prepared.written() == "" and pool.refreshed() == (pool.key,)
    with torch.no_grad():
        prepared.inputs[other].add_(1.0)  # what a call could do
    assert prepared.written() == tamper.in_place([other])
    pool.restore = True  # as after an unseen draw: the others hold its data
    assert prepared.written() == "" and set(pool.refreshed()) == {pool.key, other}


def test_an_input_the_target_writes_may_change_and_be_returned_and_the_others_may_not():
    x, out = torch.randn(4), torch.zeros(4)
    inputs = {"x": x, "out": out}
    before = tamper.snapshot(inputs)
    torch.mul(x, 2, out=out)
    assert tamper.problems(inputs, before, (out,)) == ["modified input out in place",
                                                      "output 0 shares storage with input out"]
    assert tamper.problems(inputs, before, (out,), writes=("out",)) == []
    x.add_(1)
    assert tamper.problems(inputs, before, (out,), writes=("out",)) == ["modified input x in place"]
    typo = r"the target writes outt, which its make_inputs does not make \(it makes x, out\)"
    with pytest.raises(ValueError, match=typo):
        tamper.problems(inputs, before, (out,), writes=("outt",))

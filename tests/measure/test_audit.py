"""The audit of a pass's timed outputs, driven by hand: spot checks, kept calls, and a static output buffer."""

import torch

from benchctl.measure import fresh
from benchctl.measure.audit import Audit
from benchctl.ops.cells import Cell

PARAMS = {"batch_size": 4, "dim": 8, "alpha": 0.5}


def drive(returns, calls=40):
    """An Audit of axpy's `fused` forward whose calls return `returns(raw_inputs, buffer)`."""
    resolved = Cell.make("axpy", "op", "fused", "cpu", "float32", PARAMS).resolve()
    box = []
    audit = Audit(resolved, "forward", take=lambda: box.pop())
    buf = torch.empty(4, 8)
    for i in range(calls):
        raw = fresh.inputs_of(resolved, fresh.Draw({}, i % 3, "x"))  # as a pool refreshing x draws them
        audit.drawn(fresh.Draw(raw, i % 3, "x"))
        box.append(returns(raw, buf))
    return audit.verdict()


def right(raw, buf):
    return torch.add(raw["y"], raw["x"], alpha=0.5)


def in_one_buffer(raw, buf):  # as a CUDA graph does: the same storage every call, rewritten
    with torch.no_grad():
        return torch.add(raw["y"], raw["x"], alpha=0.5, out=buf)


def stale(raw, buf):  # the first call's data set every time
    resolved = Cell.make("axpy", "op", "fused", "cpu", "float32", PARAMS).resolve()
    return right(fresh.inputs_of(resolved, fresh.Draw({}, 0, "x")), buf)


def test_right_outputs_pass_and_a_static_buffer_is_not_judged_changed(fixture_ops):
    assert drive(right) == ""
    assert drive(in_one_buffer) == ""


def test_a_stale_output_is_caught_by_the_first_spot_check_on_other_data(fixture_ops):
    said = drive(stale)
    assert said.startswith("timed call 2: output 0, at 4 random points, is not the reference's on the same inputs")

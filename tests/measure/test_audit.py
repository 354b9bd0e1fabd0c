"""The audit of a pass's timed outputs, driven by hand: spot checks, kept calls, and a static output buffer."""

import re
from dataclasses import replace

import torch

from benchctl.measure import fresh
from benchctl.measure.audit import Audit
from benchctl.measure.references import reference_run
from benchctl.ops.cells import Cell

PARAMS = {"batch_size": 4, "dim": 8, "alpha": 0.5}


def watched(returns, calls=40):
    """An Audit of axpy's `fused` forward, after `calls` calls that returned `returns(raw_inputs, buffer)`."""
    resolved = Cell.make("axpy", "op", "fused", "cpu", "float32", PARAMS).resolve()
    box = []
    audit = Audit(resolved, "forward", take=lambda: box.pop())
    buf = torch.empty(4, 8)
    for i in range(calls):
        raw = fresh.inputs_of(resolved, fresh.Draw({}, i % 3, "x"))  # as a pool refreshing x draws them
        audit.drawn(fresh.Draw(raw, i % 3, "x"))
        box.append(returns(raw, buf))
    return audit


def drive(returns, calls=40):
    """What the audit says of those calls."""
    return watched(returns, calls).verdict()


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


def test_prime_runs_every_data_sets_reference_before_the_clock_and_matches_a_late_run(fixture_ops):
    resolved = Cell.make("axpy", "op", "fused", "cpu", "float32", PARAMS).resolve()
    store = resolved.target.make_inputs(fresh.Case(resolved.cell.params, torch.float32, "cpu", resolved.cell.seed))
    pool = fresh.InputPool(resolved, store, dict(store))
    audit = Audit(resolved, "forward", take=lambda: None)
    audit.prime(pool)
    assert sorted(audit.references) == pool.sources() == [0, 1, 2]
    assert sorted(audit.expected) == [0, 1, 2]  # nothing is left for a spot check to compute mid-pass
    for source in pool.sources():  # the pool's data set, as the reference saw it, is the one a late run makes
        late = reference_run(resolved, fresh.Draw({}, source, pool.key))
        torch.testing.assert_close(audit.references[source].outs[0], late.outs[0], rtol=0, atol=0)



def reference_out_of_memory(monkeypatch, fixture_ops):
    """axpy's reference (py) fails as a reference too large for the device does."""
    op = fixture_ops["axpy"]

    def too_large(x, y, alpha):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 19.14 GiB")

    monkeypatch.setitem(op.implementations, op.reference, replace(op.implementations[op.reference], fn=too_large))


def test_a_reference_that_cannot_run_at_the_timed_size_is_not_the_implementations_failure(monkeypatch, fixture_ops):
    reference_out_of_memory(monkeypatch, fixture_ops)
    params = {**PARAMS, "alpha": 0.25}  # a point of its own: a point's references are shared (point_data.py)
    resolved = Cell.make("axpy", "op", "fused", "cpu", "float32", params).resolve()
    store = resolved.target.make_inputs(fresh.Case(resolved.cell.params, torch.float32, "cpu", resolved.cell.seed))
    primed = Audit(resolved, "forward", take=lambda: None)
    primed.prime(fresh.InputPool(resolved, store, dict(store)))  # before the clock, as a small cell's is
    for said in (primed.unchecked, drive_unchecked(right)):
        assert said.startswith("timed outputs not compared with the reference, which failed at this size: "
                               "OutOfMemoryError: CUDA out of memory. Tried to allocate 19.14 GiB (test_audit.py:")


def test_without_the_reference_a_kept_output_is_still_held_to_finite_values(monkeypatch, fixture_ops):
    reference_out_of_memory(monkeypatch, fixture_ops)
    said = drive(lambda raw, buf: right(raw, buf) / 0.0)  # the kept calls are drawn at random
    assert re.fullmatch(r"timed call \d+ of 40: tensor 0 of what it returned: non-finite values \(at the timed size\)",
                        said), said


def drive_unchecked(returns):
    """What the audit says it could not check, where its verdict found nothing wrong."""
    audit = watched(returns, 8)
    assert audit.verdict() == ""
    return audit.unchecked


def test_calls_on_unseen_data_are_judged_by_their_times_not_checked_against_a_reference(fixture_ops):
    """An unseen draw's output is neither spot-checked nor kept (no reference ran on its data); the verdict
    sets its time against its neighbours', after the warm-up calls."""
    resolved = Cell.make("axpy", "op", "fused", "cpu", "float32", PARAMS).resolve()
    box = []
    audit = Audit(resolved, "forward", take=lambda: box.pop())
    unseen_at = {3, 10, 17, 24}
    for i in range(30):
        source = fresh.SOURCES + 7 + i if i in unseen_at else i % 3
        raw = fresh.inputs_of(resolved, fresh.Draw({}, source, "x"))
        audit.drawn(fresh.Draw(raw, source, "x"))
        box.append(torch.zeros(4, 8) if i in unseen_at else right(raw, None))  # wrong where unseen: unchecked
    assert all(k.source < fresh.SOURCES for k in audit.kept)
    warm, times = 2, [1e-3 if i in unseen_at else 1e-5 for i in range(30)]
    said = audit.verdict(times[warm:], (), warm)
    assert said.startswith("its 4 timed calls on data never given to it before took 100.0-100.0x as long")
    assert Audit(resolved, "forward", take=lambda: None).verdict([1e-5] * 5, (), 0) == ""

"""What a point's cells share in a worker: the data sets and the reference's runs on them, made once."""

from dataclasses import replace

import torch

from benchctl.measure import audit, correctness, fresh
from benchctl.measure.audit import Audit
from benchctl.measure.prepared import prepare
from benchctl.ops.cells import Cell

PARAMS = {"batch_size": 4, "dim": 8, "alpha": 0.5}


def primed_pool(cell: Cell) -> fresh.InputPool:
    prepared = prepare(cell.resolve())
    pool = fresh.InputPool(prepared.resolved, prepared.inputs, prepared.raw)
    Audit(prepared.resolved, "forward", take=lambda: None).prime(pool)
    return pool


def test_a_points_cells_share_its_data_sets_and_references_and_another_point_does_not(fixture_ops, monkeypatch):
    runs = []
    real = correctness.run_on
    monkeypatch.setattr(correctness, "run_on", lambda *a, **k: runs.append(a[1].name) or real(*a, **k))
    fused = Cell.make("axpy", "op", "fused", "cpu", "float32", PARAMS)
    first = primed_pool(fused)
    assert runs == ["py"] * 3  # the reference, once on each data set
    py = primed_pool(replace(fused, impl="py"))
    again = primed_pool(replace(fused, strict=True))  # a re-check of the same point
    assert first.data is py.data is again.data and first.references is again.references
    assert runs == ["py"] * 3  # nothing run again
    other = primed_pool(Cell.make("axpy", "op", "fused", "cpu", "float32", {**PARAMS, "batch_size": 8}))
    assert other.data is not first.data and len(runs) == 6
    assert other.data[0].shape == (8, 8)


def test_the_references_run_on_the_inputs_the_target_made_with_each_data_set(fixture_ops):
    cell = Cell.make("axpy", "op", "fused", "cpu", "float32", {**PARAMS, "batch_size": 5})
    pool = primed_pool(cell)
    for source in pool.sources():
        drawn = fresh.inputs_of(cell.resolve(), fresh.Draw({}, source, pool.key))  # made anew, from the seeds
        got = pool.references[source].outs[0]
        assert got.dtype == torch.float32
        torch.testing.assert_close(got, (0.5 * drawn["x"] + drawn["y"]).detach(), rtol=0, atol=0)


def test_a_kept_output_larger_than_the_checked_elements_is_judged_on_a_sample(fixture_ops, monkeypatch):
    monkeypatch.setattr(audit, "CHECKED_ELEMENTS", 8)  # axpy's 4x8 output: 8 of its 32 elements at random
    resolved = Cell.make("axpy", "op", "fused", "cpu", "float32", PARAMS).resolve()
    judge = Audit(resolved, "forward", take=lambda: None)
    ref = torch.randn(4, 8)
    mine, theirs = judge._sampled(ref.clone(), ref)
    assert mine.shape == theirs.shape == (8,) and torch.equal(mine, theirs)
    halved = ref.clone()
    halved[:2] = 0  # half the work skipped: 8 random elements all miss it with odds 1 in 256
    failing = [not correctness.agree("output 0", *judge._sampled(halved, ref), 1e-2, True, judge._scale(ref)).passed
               for _ in range(20)]
    assert sum(failing) >= 18

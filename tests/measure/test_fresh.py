"""Fresh inputs per timed call: new objects over the cell's storage, the data changed between calls."""

import torch

from benchctl.measure import fresh
from benchctl.measure.prepared import prepare
from benchctl.ops.cells import Cell


def test_each_draw_is_new_objects_over_one_storage_with_new_data(fixture_ops):
    resolved = Cell.make("axpy", "op", "py", "cpu", "float32", {"batch_size": 4, "dim": 8, "alpha": 0.5}).resolve()
    prepared = prepare(resolved)
    pool = fresh.InputPool(resolved, prepared.inputs)
    draws = [pool.draw() for _ in range(7)]
    xs = [d.inputs["x"] for d in draws]
    assert len({id(x) for x in xs}) == 7  # held here, so no id is reused: seven objects
    assert {x.data_ptr() for x in xs} == {prepared.inputs["x"].data_ptr()}
    assert [d.source for d in draws] == [0, 1, 2, 0, 1, 2, 0]
    first = pool.draw()
    seen = first.inputs["x"].clone()
    second = pool.draw()
    assert not torch.equal(seen, second.inputs["x"])  # consecutive calls never see the same data
    expected = fresh.raw_inputs(resolved, second.source)["x"]
    assert torch.equal(second.inputs["x"], expected)  # data set `source` as the target makes it


def test_a_cell_too_large_for_three_data_sets_keeps_fewer():
    assert fresh.sources_for(1000) == fresh.SOURCES
    assert fresh.sources_for(fresh.POOL_BYTES // 2) == 2
    assert fresh.sources_for(fresh.POOL_BYTES * 2) == 1

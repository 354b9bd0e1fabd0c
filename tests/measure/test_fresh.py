"""Fresh inputs per timed call: new objects over the cell's storage, one small input's data changed."""

import torch

from benchctl.measure import fresh
from benchctl.measure.prepared import prepare
from benchctl.ops.cells import Cell

PARAMS = {"batch_size": 4, "dim": 8, "alpha": 0.5}


def test_each_draw_is_new_objects_over_one_storage_with_new_data(fixture_ops):
    resolved = Cell.make("axpy", "op", "py", "cpu", "float32", PARAMS).resolve()
    prepared = prepare(resolved)
    pool = fresh.InputPool(resolved, prepared.inputs, prepared.raw)
    assert pool.key in ("x", "y")  # a floating input passed through prepare as it is
    draws = [pool.draw() for _ in range(7)]
    xs = [d.inputs["x"] for d in draws]
    assert len({id(x) for x in xs}) == 7  # held here, so no id is reused: seven objects
    assert {x.data_ptr() for x in xs} == {prepared.inputs["x"].data_ptr()}
    assert [d.source for d in draws] == [0, 1, 2, 0, 1, 2, 0]
    first = pool.draw()
    seen = first.inputs[pool.key].clone()
    second = pool.draw()
    assert not torch.equal(seen, second.inputs[pool.key])  # consecutive calls never see the same data
    rebuilt = fresh.inputs_of(resolved, second)
    for name, t in second.inputs.items():  # what the call had, rebuilt for the reference
        if isinstance(t, torch.Tensor):
            assert torch.equal(t, rebuilt[name])

"""Fresh inputs per timed call: new objects over the cell's storage, one small input's data changed."""

import torch

from benchctl.measure import fresh
from benchctl.measure.unseen import UNSEEN_MAX
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


def test_a_pass_begun_with_unseen_draws_gives_a_few_of_its_samples_data_never_drawn_before(fixture_ops):
    resolved = Cell.make("axpy", "op", "py", "cpu", "float32", PARAMS).resolve()
    prepared = prepare(resolved)
    pool = fresh.InputPool(resolved, prepared.inputs, prepared.raw)
    pool.begin(2)
    draws, data, untimed = [], [], []
    for i in range(40):
        if i == 5:
            pool.sampling()  # the first sample taken (after five warm-up calls): the windows begin
        if i in (9, 13, 17):  # an untimed call's draw (a paired turn's first) spends no unseen data
            untimed.append(pool.seen(pool.draw))
        draws.append(pool.draw())
        data.append(draws[-1].inputs[pool.key].clone())  # every draw's data goes into the one storage
    unseen = [i for i, d in enumerate(draws) if d.unseen]
    assert len(unseen) == UNSEEN_MAX and min(unseen) >= 6  # the draw after the next once sampling began
    assert not any(d.unseen for d in untimed)
    for i in unseen:
        assert not any(torch.equal(data[i], d) for d in pool.data)  # none of the rotation's data sets
        assert sum(torch.equal(data[i], d) for d in data) == 1  # nor any other call's
        assert torch.equal(data[i], fresh.inputs_of(resolved, draws[i])[pool.key])  # rebuilt from its seed
    pool.begin(0)
    pool.sampling()
    assert not any(pool.draw().unseen for _ in range(20))

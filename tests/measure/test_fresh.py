"""Fresh inputs per timed call: new objects over the cell's storage, one small input's data changed."""

import weakref

import pytest
import torch

from benchctl.measure import fresh, passes
from benchctl.measure import prepared as prepared_module
from benchctl.measure.audit import Audit
from benchctl.measure.unseen import STRICT_EVERY, UNSEEN_MAX
from benchctl.measure.prepared import prepare
from benchctl.ops.cells import Cell

PARAMS = {"batch_size": 4, "dim": 8, "alpha": 0.5}
DRAWS = STRICT_EVERY * UNSEEN_MAX + 2  # every window of a strict pass's, and the draw after the last


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
    pool.begin(STRICT_EVERY)
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


def test_an_unseen_draw_refreshes_every_input_the_pool_can_and_the_next_puts_their_own_data_back(fixture_ops):
    resolved = Cell.make("axpy", "op", "py", "cpu", "float32", PARAMS).resolve()
    prepared = prepare(resolved)
    pool = fresh.InputPool(resolved, prepared.inputs, prepared.raw)
    (other,) = pool.others  # x and y both pass through prepare: the key and one more
    own = prepared.inputs[other].clone()
    pool.begin(STRICT_EVERY)
    pool.sampling()
    data = []
    for _ in range(DRAWS):
        drawn = pool.draw()
        data.append((drawn, drawn.inputs[other].clone()))
    assert sum(d.unseen for d, _ in data) == UNSEEN_MAX
    for drawn, held in data:
        if drawn.unseen:  # made whole from its own seed: the other input too
            assert not torch.equal(held, own) and torch.equal(held, fresh.inputs_of(resolved, drawn)[other])
        else:
            assert torch.equal(held, own)


def test_the_audits_draws_and_those_its_makings_and_copies_went_before_are_probes_the_rest_not(fixture_ops):
    resolved = Cell.make("axpy", "op", "py", "cpu", "float32", PARAMS).resolve()
    prepared = prepare(resolved)
    pool = fresh.InputPool(resolved, prepared.inputs, prepared.raw)
    pool.begin(STRICT_EVERY)
    assert not any(pool.draw().probe for _ in range(3))  # warm-up: nothing made, nothing copied
    pool.sampling()
    draws = [pool.draw() for _ in range(DRAWS)]
    assert draws[0].stirred and not (draws[0].unseen or draws[0].control)  # it made the first unseen data set
    for i, d in enumerate(draws[:-1]):
        if d.unseen:  # the next puts the others' own data back and makes the next unseen set
            assert draws[i + 1].stirred and draws[i + 1].probe
    probes = [d.probe for d in draws]
    assert sum(d.unseen for d in draws) == sum(d.control for d in draws) == UNSEEN_MAX
    assert sum(probes) == 1 + 3 * UNSEEN_MAX  # the first making, and each unseen draw, its control and the next
    assert [d.probe for d in (pool.draw() for _ in range(10))] == [False] * 10  # the windows over: steady again


def test_a_control_copies_the_others_own_data_in_as_an_unseen_draw_copies_its_data(fixture_ops, monkeypatch):
    resolved = Cell.make("axpy", "op", "py", "cpu", "float32", PARAMS).resolve()
    prepared = prepare(resolved)
    pool = fresh.InputPool(resolved, prepared.inputs, prepared.raw)
    (other,) = pool.others
    own = prepared.inputs[other].clone()
    copied = []  # by draw: whether the other input was written before its call
    real_copy = torch.Tensor.copy_
    monkeypatch.setattr(torch.Tensor, "copy_", lambda t, src: copied.append(t.data_ptr()) or real_copy(t, src))
    pool.begin(STRICT_EVERY)
    pool.sampling()
    draws, wrote = [], []
    for _ in range(DRAWS):
        copied.clear()
        draws.append(pool.draw())
        wrote.append(prepared.inputs[other].data_ptr() in copied)
    controls = [i for i, d in enumerate(draws) if d.control]
    unseen = [i for i, d in enumerate(draws) if d.unseen]
    assert len(controls) == UNSEEN_MAX and not set(controls) & ({*unseen} | {i + 1 for i in unseen})
    for i in controls:  # seen data: the key from the rotation, the other its own, copied in all the same
        assert draws[i].source in range(fresh.SOURCES) and wrote[i]
        assert torch.equal(draws[i].inputs[other], own) and not draws[i].others
    assert all(wrote[i] for i in unseen) and all(wrote[i + 1] for i in unseen if i + 1 < len(draws))
    assert not any(wrote[i] for i in range(len(draws)) if i not in {*controls, *unseen, *(j + 1 for j in unseen)})


def test_a_backward_on_unseen_data_starts_from_a_gradient_of_its_own(fixture_ops):
    prepared = prepare(Cell.make("axpy", "op", "py", "cpu", "float32", PARAMS).resolve())
    grads_seen = []
    setup = prepared.setup("backward", on_draw=lambda d: grads_seen.append(d.unseen))
    prepared.sampling()
    got = []
    for _ in range(8 * UNSEEN_MAX + 1):  # windows of 8 (unseen.UNSEEN_EVERY) where not strict
        got.append(setup()())  # the gradients of x and y (the op is linear in y: dy is the gradient given)
    assert sum(grads_seen) == UNSEEN_MAX
    given = prepared.grads[0]
    for unseen, (dx, dy) in zip(grads_seen, got):
        assert torch.equal(dy, given) != unseen


def test_an_unseen_draw_makes_and_frees_nothing_before_its_call(fixture_ops, monkeypatch):
    """Its data set and gradients are made a draw or more before it, copied into tensors kept for them and let go
    of there: freed right before the call, they left honest calls 1.2-9x as long as their neighbours."""
    prepared = prepare(Cell.make("axpy", "op", "py", "cpu", "float32", PARAMS).resolve())
    made = []  # weak references to everything a making returned

    def noted(making):
        def wrapped(*args, **kwargs):
            out = making(*args, **kwargs)
            made.extend(weakref.ref(t) for t in (out.values() if isinstance(out, dict) else out)
                        if isinstance(t, torch.Tensor))
            return out
        return wrapped

    monkeypatch.setattr(fresh, "raw_inputs", noted(fresh.raw_inputs))
    monkeypatch.setattr(prepared_module, "seeded_like", noted(passes.seeded_like))
    draws = []
    setup = prepared.setup("backward", on_draw=draws.append)
    prepared.sampling()
    for _ in range(8 * UNSEEN_MAX + 1):
        before = len(made)
        _, dy = setup()()
        assert all(ref() is None for ref in made)  # each making let go of within its own draw
        if draws[-1].unseen:
            assert len(made) == before  # nothing made for it in its own draw
            assert torch.equal(dy, passes.seeded_like(prepared.grads, seed=draws[-1].source)[0])
    assert sum(d.unseen for d in draws) == UNSEEN_MAX and len(made) >= 2 * UNSEEN_MAX  # data and gradients


def test_where_prepare_made_every_input_the_unseen_draws_hold_its_making_of_new_data():
    from pathlib import Path

    from benchctl.ops import registry

    registry.discover([Path(__file__).parent.parent / "fixtures" / "exploits"])
    resolved = Cell.make("victim", "op", "prepares_every_input", "cpu", "float32",
                         {"batch_size": 4, "dim": 8}).resolve()
    prepared = prepare(resolved)
    pool = fresh.InputPool(resolved, prepared.inputs, prepared.raw)
    assert pool.key is None and set(pool.others) == {"x", "w"}  # both made anew in float64: no rotation
    own = {k: t.clone() for k, t in prepared.inputs.items()}
    pool.begin(STRICT_EVERY)
    pool.sampling()
    draws = [(d, {k: t.clone() for k, t in d.inputs.items()}) for d in (pool.draw() for _ in range(DRAWS))]
    assert sum(d.unseen for d, _ in draws) == UNSEEN_MAX
    for drawn, held in draws:
        assert held["x"].dtype == torch.float64  # prepare's making
        if drawn.unseen:
            assert not torch.equal(held["x"], own["x"])
            assert torch.equal(held["x"], fresh.inputs_of(resolved, drawn)["x"].double())
        else:
            assert drawn.source == -1 and all(torch.equal(held[k], own[k]) for k in own)


def test_an_input_whose_shape_follows_the_seed_keeps_its_own_data_in_an_unseen_draw(builtin_ops):
    resolved = Cell.make("naflex_posembed", "add", "loop", "cpu", "float32",
                         {"batch_size": 8, "D": 16, "grid": 8}).resolve()
    prepared = prepare(resolved)
    pool = fresh.InputPool(resolved, prepared.inputs, prepared.raw)
    pool.begin(STRICT_EVERY)
    pool.sampling()
    draws = [pool.draw() for _ in range(DRAWS)]  # the sequence lengths differ between seeds: nothing to copy them into
    unseen = [d for d in draws if d.unseen]
    assert len(unseen) == UNSEEN_MAX
    for drawn in draws:
        assert all(drawn.inputs[k].shape == t.shape for k, t in prepared.inputs.items() if isinstance(t, torch.Tensor))


def test_a_cell_of_large_inputs_rotates_the_data_of_those_that_fit_and_has_no_unseen_draws(monkeypatch, fixture_ops):
    """Over POOL_BYTES the inputs still rotate, those that take POOL_BYTES in all (smallest first; here one of
    two 128-byte inputs under a bar of 200); unseen draws, each a making of the whole inputs, are left out."""
    monkeypatch.setattr(fresh, "POOL_BYTES", 200)
    resolved = Cell.make("axpy", "op", "py", "cpu", "float32", {**PARAMS, "alpha": 0.75}).resolve()
    prepared = prepare(resolved)
    pool = fresh.InputPool(resolved, prepared.inputs, prepared.raw)
    assert pool.key in ("x", "y") and not pool.others
    pool.begin(STRICT_EVERY)
    pool.sampling()
    draws, data = [], []
    for _ in range(12):
        draws.append(pool.draw())
        data.append(draws[-1].inputs[pool.key].clone())
    assert [d.source for d in draws] == [0, 1, 2] * 4 and not any(d.unseen for d in draws)
    assert all(not torch.equal(a, b) for a, b in zip(data, data[1:]))  # consecutive calls never see the same data


def test_without_memory_for_the_data_sets_the_inputs_are_not_rotated_and_the_row_says_so(monkeypatch, fixture_ops):
    def out_of_memory(*args, **kwargs):
        raise MemoryError("no room")

    monkeypatch.setattr(fresh, "raw_inputs", out_of_memory)
    resolved = Cell.make("axpy", "op", "fused", "cpu", "float32", {**PARAMS, "alpha": 0.125}).resolve()
    prepared = prepare(resolved)
    pool = fresh.InputPool(resolved, prepared.inputs, prepared.raw)
    assert pool.key is None and pool.sources() == [-1] and pool.note == fresh.NOT_ROTATED
    audit = Audit(resolved, "forward", take=lambda: None)
    audit.prime(pool)
    assert fresh.NOT_ROTATED in audit.notes()
    monkeypatch.setattr(fresh, "raw_inputs", lambda *a, **k: 1 / 0)  # any other failure is the cell's error
    with pytest.raises(ZeroDivisionError):
        fresh.InputPool(resolved, prepared.inputs, prepared.raw)

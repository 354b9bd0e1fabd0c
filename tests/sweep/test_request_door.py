"""One door from command-line words to cells: run, check, profile and maxbatch get the same cells for
the same words."""

import pytest

from benchctl.cli.profile import build_cell
from benchctl.errors import UsageError
from benchctl.maxbatch.probe import Prober
from benchctl.ops import lookup, registry
from benchctl.sweep.request import SweepRequest, cells, expand, gate_cases, one_cell, selection


def run_words(**kwargs) -> list:
    return expand(SweepRequest(**{"impls": "py", "devices": "cpu", "ops": ("axpy",), **kwargs}))


def test_profile_times_the_cell_run_would_for_the_same_words(fixture_ops, fixture_ops_dir):
    profiled = build_cell("axpy", "py", "cpu", None, "float64", 2, ("dim=3", "alpha=-1.5"), (str(fixture_ops_dir),))
    ran = run_words(dtypes=("float64",), batch_sizes=(2,), params={"dim": 3, "alpha": -1.5})
    assert [profiled] == ran and profiled.identity == ran[0].identity
    assert profiled.params.to_dict() == {"batch_size": 2, "dim": 3, "alpha": -1.5}
    assert type(profiled.params["dim"]) is int


def test_maxbatch_probes_the_cell_run_would_at_each_batch_size(fixture_ops):
    prober = Prober.create("axpy", "py", "cpu", "forward", None, {"dim": 3}, "float32", 1 << 30, 60.0, ())
    for batch in (1, 16):
        assert [prober._cell(batch)] == run_words(passes=("forward",), batch_sizes=(batch,), params={"dim": 3})
    with pytest.raises(UsageError, match="axpy has no param 'width'"):
        Prober.create("axpy", "py", "cpu", "forward", None, {"width": 3}, "float32", 1 << 30, 60.0, ())


def test_check_checks_what_run_would_run_in_the_order_the_words_gave(fixture_ops):
    op = registry.get("faulty")
    found = cells(SweepRequest("all", "all", ops=("faulty",), batch_sizes=(1, 2)))
    expected = [(op, lookup.find(op, i), d) for i in op.implementations for d in ("cpu", "cuda")
                if d in lookup.find(op, i).devices]
    assert [(o.name, i.name, d) for o, i, d in selection(found)] == [(o.name, i.name, d) for o, i, d in expected]
    assert cells(SweepRequest("py", "cuda", ops=("axpy",))) == []


def test_one_cell_refuses_words_that_name_several(fixture_ops):
    assert one_cell(SweepRequest("py", "cpu", ops=("axpy",))) == run_words()[0]
    with pytest.raises(UsageError, match="name 2 cells, not one"):
        one_cell(SweepRequest("py", "cpu", ops=("axpy",), batch_sizes=(1, 2)))


def test_check_param_compares_at_the_params_the_gate_of_run_checks(builtin_ops):
    words = SweepRequest("py,cpp", "cpu", ops=("lstm_cell", "grid_sample"), params={"H": [40, 48]})
    # lstm_cell's gate keeps at most 16 rows of run's 64, and its width H; grid_sample has no H: its own cases
    assert gate_cases(cells(words), words.params) == {"lstm_cell": [{"batch_size": 16, "H": 40, "I": None},
                                                                   {"batch_size": 16, "H": 48, "I": None}]}
    assert gate_cases(cells(SweepRequest("py", "cpu", ops=("lstm_cell",))), {}) == {}

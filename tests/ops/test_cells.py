"""A cell knows itself: typed params that cross to a worker unchanged, and its identity, point, axis and
series looked up once."""

import json
import pickle
from dataclasses import replace

from benchctl.ops import registry
from benchctl.ops.cells import Cell
from benchctl.ops.params import Params

PARAMS = {"batch_size": 2, "dim": 3, "alpha": 0.5}


def axpy(impl="py", **params) -> Cell:
    return Cell.make("axpy", "op", impl, "cpu", "float32", {**PARAMS, **params}, ("forward",))


def test_params_are_typed_values_not_text(fixture_ops):
    cell = axpy(shape=[4, 4])
    assert isinstance(cell.params, Params)
    assert type(cell.params["batch_size"]) is int and type(cell.params["alpha"]) is float
    assert cell.params["shape"] == [4, 4] and type(cell.params["shape"]) is list


def test_a_cell_crosses_to_a_worker_and_back_equal(fixture_ops):
    cell = replace(axpy(shape=[4, 4]), checked=True, paired_with="fused", strict=True)
    again = Cell.from_json(cell.to_json())
    assert again == cell and hash(again) == hash(cell)
    assert again.params.to_dict() == {**PARAMS, "shape": [4, 4]} and type(again.params["batch_size"]) is int
    assert json.loads(cell.to_json())["params"] == {**PARAMS, "shape": [4, 4]}


def test_the_identity_is_the_same_for_the_same_cell_built_two_ways(fixture_ops):
    made = axpy()
    built = Cell("axpy", "op", "py", "cpu", "float32", dict(reversed(list(PARAMS.items()))), ["forward"])
    assert built == made and built.identity == made.identity
    assert made.identity == ("axpy", "op", "py", "cpu", "float32", json.dumps(PARAMS, sort_keys=True))
    assert made.params_json == json.dumps(PARAMS, sort_keys=True)  # the row's params column, as before
    assert axpy("fused").point == made.point and axpy("fused").identity != made.identity


def test_its_rows_name_it_by_the_schemas_cell_columns(fixture_ops):
    from benchctl.measure.execute import base_result
    from benchctl.results.schema import CELL_COLUMNS

    row = base_result(axpy().resolve()).to_row()
    assert tuple(row[c] for c in CELL_COLUMNS) == axpy().identity


def test_axis_and_series_come_from_one_look_up(fixture_ops, monkeypatch):
    larger, wider, fused = axpy(batch_size=8), axpy(dim=5), axpy("fused", batch_size=8)
    keys = (larger.series_key, wider.series_key, fused.point_series_key)
    asked = []
    real = registry.get
    monkeypatch.setattr("benchctl.ops.registry.get", lambda name: asked.append(name) or real(name))
    cell = axpy(batch_size=4)
    assert cell.axis == real("axpy").axis == "batch_size" and cell.axis_value == 4.0
    assert cell.series_key == keys[0] != keys[1] and cell.point_series_key == keys[2]
    assert cell.is_reference == (real("axpy").reference == "py")
    assert cell.resolve() is cell.resolve() and cell.resolve().impl.name == "py"
    assert asked == ["axpy"]


def test_what_it_looked_up_stays_behind_when_it_is_pickled(fixture_ops):
    cell = axpy()
    cell.resolve()
    assert "operator" in vars(cell)
    again = pickle.loads(pickle.dumps(cell))
    assert again == cell and "operator" not in vars(again) and again.axis == cell.axis

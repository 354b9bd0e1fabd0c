"""A cell's params: typed values in a frozen, hashable mapping whose text is the row's params column."""

import json
import pickle

import pytest

from benchctl.ops.params import Params

GIVEN = {"dim": 8, "batch_size": 2, "alpha": 0.5, "shape": [3, 4], "mode": "bilinear", "bias": None,
         "fused": True, "extra": {"k": [1, 2]}}


def test_values_keep_their_types():
    p = Params(GIVEN)
    assert type(p["dim"]) is int and type(p["alpha"]) is float and type(p["fused"]) is bool
    assert p["shape"] == [3, 4] and type(p["shape"]) is list
    assert p["extra"] == {"k": [1, 2]} and type(p["extra"]) is dict
    assert p["bias"] is None and p.to_dict() == GIVEN


def test_the_text_is_sorted_json_as_rows_have_always_held_it():
    assert Params(GIVEN).text == json.dumps(GIVEN, sort_keys=True)
    assert list(Params(GIVEN)) == sorted(GIVEN)


def test_nothing_handed_out_changes_the_params():
    p = Params(GIVEN)
    p["shape"].append(5)
    p.to_dict()["extra"]["k"].append(3)
    assert p["shape"] == [3, 4] and p["extra"] == {"k": [1, 2]}
    with pytest.raises(TypeError):
        p["dim"] = 9  # type: ignore[index]


def test_equal_params_hash_alike_whatever_order_they_came_in():
    a, b = Params(GIVEN), Params(dict(reversed(list(GIVEN.items()))))
    assert a == b and hash(a) == hash(b) and a == GIVEN
    assert Params({"x": 1}) != Params({"x": 1.0})  # the text of the row differs, so the cell does
    assert a.with_(dim=16)["dim"] == 16 and a["dim"] == 8


def test_params_pickle_and_refuse_what_json_cannot_hold():
    p = Params(GIVEN)
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(TypeError, match="not object"):
        Params({"x": object()})
    with pytest.raises(TypeError, match="name is text"):
        Params({1: 2})

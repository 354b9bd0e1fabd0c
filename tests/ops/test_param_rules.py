"""The values a param takes: the type its default gives it, a batch size's sign, and an operator's own rules."""

from pathlib import Path

import pytest

from benchctl.ops import param_rules
from benchctl.ops.param_rules import at_least, integer, odd, positive, sizes
from benchctl.ops.registry import BUILTIN_OPS_DIR, Operator, register

DEFAULTS = {"batch_size": 4, "k": 5, "alpha": 0.5, "I": None, "mode": "fast"}
RULES = {"k": (positive, odd), "I": sizes("I")["I"]}


@pytest.mark.parametrize("key, value, reason", [
    ("k", 1.5, "takes integers"),
    ("k", "big", "takes numbers"),
    ("k", True, "takes numbers"),  # a bool is not a size, though Python counts it an int
    ("k", 0, "must be at least 1"),
    ("k", 4, "must be odd"),
    ("batch_size", 0, "must be a positive integer"),
    ("batch_size", 2.0, "must be a positive integer"),
    ("alpha", "x", "takes numbers"),
    ("I", 0, "must be at least 1"),
    ("I", "x", "takes integers"),
    ("I", 2.5, "takes integers"),  # no default to give its type: the size rule does
    ("k", 2**63 + 1, "must fit in a signed 64-bit integer"),  # torch could take no such size
    ("batch_size", 10**20, "must fit in a signed 64-bit integer"),
    ("alpha", -(2**63) - 1, "must fit in a signed 64-bit integer"),
    ("k", None, "cannot be null (only a param whose default is null can be unset)"),  # null would reach the code
    ("batch_size", None, "cannot be null (only a param whose default is null can be unset)"),
    ("mode", None, "cannot be null (only a param whose default is null can be unset)"),
])
def test_a_value_that_breaks_a_rule_says_which(key, value, reason):
    assert param_rules.broken(key, DEFAULTS[key], RULES.get(key, ()), value) == reason


@pytest.mark.parametrize("key, value", [
    ("k", 7), ("k", [3]), ("batch_size", 1), ("alpha", -1.5), ("alpha", 2), ("I", None), ("I", 9), ("mode", "x"),
    ("I", 2**63 - 1), ("alpha", -(2**63)),
])
def test_a_value_that_keeps_the_rules_passes(key, value):
    value = value[0] if isinstance(value, list) else value
    assert param_rules.broken(key, DEFAULTS[key], RULES.get(key, ()), value) is None


def test_check_names_the_operator_the_param_and_the_first_bad_value():
    line = param_rules.check("op", DEFAULTS, RULES, {"batch_size": [1, 2], "k": [3, 5, 6, 8]})
    assert line == "op: param k must be odd, got 6"
    assert param_rules.check("op", DEFAULTS, RULES, {"k": [3, 5]}) is None
    assert param_rules.check("op", DEFAULTS, {"I": sizes("I")["I"]}, {"I": ["None"]}) == (
        "op: param I takes integers, got 'None'; null leaves it unset")  # its default is None: `I=null` asks for it
    assert param_rules.check("op", DEFAULTS, RULES, {"I": [None]}) is None
    assert param_rules.check("op", DEFAULTS, RULES, {"k": [None]}) == (
        "op: param k cannot be null (only a param whose default is null can be unset), got null")


def test_sizes_and_at_least():
    assert sizes("H", "W") == {"H": (integer, positive), "W": (integer, positive)}
    assert at_least(2)(1) == "must be at least 2" and at_least(2)(2) is None
    assert odd(3) is None and odd(-2) == "must be odd"


@pytest.mark.parametrize("rules, cases, message", [
    ({"nope": (positive,)}, (), "rules for params it does not have: nope"),
    ({"dim": (odd,)}, (), "param dim must be odd, got 8 \\(its own default\\)"),
    ({"dim": (positive,)}, ({"batch_size": 1, "dim": 0},), "param dim must be at least 1, got 0 \\(a check case\\)"),
])
def test_an_operator_whose_rules_do_not_fit_its_params_is_not_registered(rules, cases, message):
    op = Operator("ruled", "x", params={"batch_size": 2, "dim": 8}, targets=(), rules=rules, check_cases=cases)
    with pytest.raises(ValueError, match=message):
        register(op)


def test_every_builtin_operator_declares_its_sizes(builtin_ops):
    """A zero-sized or odd-shaped request is refused before it makes tensors; the built-in operators say which
    of their params are sizes (every param whose default is an int)."""
    builtin = [op for op in builtin_ops.values() if Path(op.source).resolve().is_relative_to(BUILTIN_OPS_DIR)]
    assert {op.name for op in builtin} >= {"hoconv2d", "grid_sample", "lstm_cell", "naflex_posembed"}
    for op in builtin:
        ints = {k for k, v in op.params.items() if isinstance(v, int) and k != "batch_size"}
        assert ints <= set(op.rules), (op.name, ints - set(op.rules))


@pytest.mark.parametrize("key, rules, said", [
    ("k", (positive, odd), "integers, at least 1, odd"),
    ("batch_size", (), "positive integers"),
    ("I", sizes("I")["I"], "integers, at least 1 or null (unset)"),  # "integers" once, from the rule; None default
    ("alpha", (at_least(0),), "numbers, at least 0"),
    ("mode", (lambda v: None,), "<lambda>"),
])
def test_what_a_param_takes_reads_as_words(key, rules, said):
    assert param_rules.describe(key, DEFAULTS[key], rules) == said

"""What values an operator's params take. A value the operator cannot mean (a zero or negative size, an even
filter width where the filter is centred) is refused before any cell is made, with the rule it breaks.

Three rules hold for every operator: a param whose default is an integer takes integers (`H=1.5` would be timed
as whatever the input factory makes of it, under a row that says 1.5), a batch size is a positive integer, and an
integer fits in 64 bits (torch cannot take a larger one: every cell would fail at run time).
The rest an operator declares, param by param: `Operator(..., rules={"k": (positive, odd)})`, or
`rules=sizes("C", "H", "W")` for params that are all sizes. A None value (null: a default meaning "derive it")
is taken only by a param whose default is None, and never checked further.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

Rule = Callable[[Any], "str | None"]  # the rule a value breaks, in words ("must be odd"), or None


def at_least(low: float) -> Rule:
    def rule(value: Any) -> str | None:
        if not _is_number(value):
            return "takes numbers"
        return None if value >= low else f"must be at least {low}"

    rule.words = f"at least {low}"  # type: ignore[attr-defined]
    return rule


positive = at_least(1)


def odd(value: Any) -> str | None:
    """odd"""
    return None if isinstance(value, int) and value % 2 == 1 else "must be odd"


def integer(value: Any) -> str | None:
    """integers"""
    return None if _is_int(value) else "takes integers"


def sizes(*names: str) -> dict[str, tuple[Rule, ...]]:
    """Rules for params that are all sizes (positive integers, whatever their default)."""
    return {name: (integer, positive) for name in names}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _scalar(default: Any) -> Any:
    """A list default (a swept param) stands for its first element's type."""
    return (default[0] if default else None) if isinstance(default, list) else default


INT64 = (-(2**63), 2**63 - 1)  # the integers a tensor's size or a torch argument can hold


def _typed(key: str, default: Any, value: Any) -> str | None:
    """What a value of `key` must be, given its default's type."""
    default = _scalar(default)
    if _is_int(value) and not INT64[0] <= value <= INT64[1]:
        return "must fit in a signed 64-bit integer"
    if key == "batch_size" and not (_is_int(value) and value > 0):
        return "must be a positive integer"
    if _is_int(default) and not _is_int(value):
        return "takes integers" if _is_number(value) else "takes numbers"
    if _is_number(default) and not _is_number(value):
        return "takes numbers"
    return None


def _kind(key: str, default: Any) -> str:
    """What values a param takes by its default's type, in words."""
    default = _scalar(default)
    if key == "batch_size":
        return "positive integers"
    if _is_int(default):
        return "integers"
    return "numbers" if _is_number(default) else ""


def words(rule: Rule) -> str:
    """A rule in words: its `words`, else its docstring's first line, else its name."""
    doc = (getattr(rule, "__doc__", None) or "").strip().splitlines()
    return getattr(rule, "words", None) or (doc[0] if doc else getattr(rule, "__name__", "a rule"))


UNSET = "or null (unset)"  # a param whose default is None: `--param I=null` asks for the default again


def describe(key: str, default: Any, rules: Sequence[Rule]) -> str:
    """What param `key` takes, in words: "integers, at least 1, odd"."""
    said = ", ".join(dict.fromkeys(w for w in [_kind(key, default), *map(words, rules)] if w))
    return f"{said} {UNSET}" if said and default is None else said


def broken(key: str, default: Any, rules: Sequence[Rule], value: Any) -> str | None:
    """The first rule `value` of param `key` breaks, in words, or None when it keeps them all."""
    if value is None:
        return None if _scalar(default) is None else "cannot be null (only a param whose default is null can be unset)"
    return _typed(key, default, value) or next(filter(None, (rule(value) for rule in rules)), None)


def check(op_name: str, defaults: Mapping[str, Any], rules: Mapping[str, Sequence[Rule]],
          values: Mapping[str, Sequence[Any]]) -> str | None:
    """The first value of `values` (param -> its values) that breaks a rule, as an error line, or None."""
    for key, vals in values.items():
        for value in vals:
            reason = broken(key, defaults.get(key), rules.get(key, ()), value)
            if reason:
                unset = "; null leaves it unset" if key in defaults and defaults[key] is None else ""
                return f"{op_name}: param {key} {reason}, got {'null' if value is None else repr(value)}{unset}"
    return None


def check_definition(op_name: str, defaults: Mapping[str, Any], rules: Mapping[str, Sequence[Rule]],
                     cases: Sequence[Mapping[str, Any]] = ()) -> None:
    """Raises ValueError where an operator's own definition is wrong: a rule for a param it does not have, or a
    default or check case that breaks a rule."""
    unknown = set(rules) - set(defaults)
    if unknown:
        raise ValueError(f"{op_name}: rules for params it does not have: {', '.join(sorted(unknown))}")
    for where, values in [("its own default", defaults), *(("a check case", case) for case in cases)]:
        wrong = check(op_name, defaults, rules, {k: v if isinstance(v, list) else [v] for k, v in values.items()})
        if wrong:
            raise ValueError(f"{wrong} ({where})")

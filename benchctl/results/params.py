"""A row's params (the JSON text of its `params` column) as people read them: as `KEY=VALUE` text, and in order."""

from __future__ import annotations

import json
import math


def _params(text: str) -> dict | None:
    try:
        params = json.loads(text)
    except (TypeError, ValueError):
        return None
    return params if isinstance(params, dict) else None


def params_text(text: str) -> str:
    """A row's params as `batch_size=8 H=256` rather than JSON (tables have to fit a terminal); a param left unset
    (None, e.g. lstm_cell's I, which then follows H) says nothing and is left out."""
    params = _params(text)
    if params is None:
        return text
    return " ".join(f"{k}={json.dumps(v)}" for k, v in params.items() if v is not None)


def params_order(text: str) -> tuple:
    """A sort key that puts rows' params in the order people read them: each param's value by number where it is
    one (batch_size 16, 64, 256; as text, 256 came before 64), else by its text."""
    params = _params(text)
    if params is None:
        return ((str(text), (1, 0, str(text))),)
    return tuple((k, (0, v, "") if _number(v) else (1, 0, json.dumps(v))) for k, v in sorted(params.items()))


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)

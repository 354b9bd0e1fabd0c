"""A cell's params: a frozen mapping of typed values (an int stays an int, a list a list), hashable, with
its text (sorted JSON, the `params` column of a row) made once, when the params are made."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

SCALARS = (bool, int, float, str, type(None))


def _freeze(value: Any) -> Any:
    if isinstance(value, SCALARS):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, Mapping):
        return Params(value)
    raise TypeError(f"a param value is a number, text, bool, None, a list or a mapping of them, "
                    f"not {type(value).__name__} ({value!r})")


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    if isinstance(value, Params):
        return value.to_dict()
    return value


class Params(Mapping[str, Any]):
    """Read-only; a list value is handed out as a fresh list, so changing it changes nothing here."""

    __slots__ = ("_values", "_text")

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        values = dict(values or {})
        for key in values:
            if not isinstance(key, str):
                raise TypeError(f"a param's name is text, not {key!r}")
        self._values = {key: _freeze(values[key]) for key in sorted(values)}
        self._text = json.dumps(self.to_dict(), sort_keys=True)

    @property
    def text(self) -> str:
        """Sorted JSON: what a row's `params` column holds."""
        return self._text

    def to_dict(self) -> dict[str, Any]:
        return {key: _thaw(value) for key, value in self._values.items()}

    def with_(self, **changes: Any) -> "Params":
        return Params({**self.to_dict(), **changes})

    def __getitem__(self, key: str) -> Any:
        return _thaw(self._values[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Params):
            return self._text == other._text
        return Mapping.__eq__(self, other)

    def __hash__(self) -> int:
        return hash(self._text)

    def __reduce__(self):
        return Params, (self.to_dict(),)

    def __repr__(self) -> str:
        return f"Params({self.to_dict()!r})"

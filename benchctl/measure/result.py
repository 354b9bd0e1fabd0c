"""A pass's result: one object per cell and pass that owns its row. Its columns are results/schema.py's, listed
there alone; a column the schema does not know is an error where a result is made or changed, not where
parquet writes it.

It is a read-only mapping of the columns given (explicit nulls included), so whatever reads rows reads it
as one; `to_row()` gives them as the plain dict that storage and the worker's channel carry. `merge()`
pools one pass's rounds (run --rounds, --processes, a re-measurement) into one result, its statistics and
rates recomputed from the pooled samples (pooling.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Sequence

from benchctl.measure import pooling
from benchctl.measure.stats import summarize
from benchctl.results.schema import COLUMNS, clean_samples, own_aside
from benchctl.vocab import Status

PROCESS = "process"  # not a column: which of run --processes' workers measured it, until the rounds are pooled
_FIELD_OF = {"pass": "pass_"}  # columns whose name Python keeps for itself
_COLUMN_OF = {f: c for c, f in _FIELD_OF.items()}


class UnknownColumn(ValueError):
    """A result given a column results/schema.py does not list (a misspelt name)."""


class PassResult(Mapping[str, Any]):
    """One pass's result: the columns given (explicit nulls included), read as attributes by column name
    (`pass_` for the column `pass`), where a column not given reads None, or as a mapping by column name,
    where it is missing. Immutable: every change gives a new result."""

    __slots__ = ("_columns",)

    def __init__(self, **columns: Any) -> None:
        object.__setattr__(self, "_columns", _columns_of(columns))

    def __getattr__(self, name: str) -> Any:
        column = _COLUMN_OF.get(name, name)
        if column not in _KNOWN:
            raise AttributeError(f"PassResult has no column {name!r}")
        return self._columns.get(column)

    def __getitem__(self, column: str) -> Any:
        return self._columns[column]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("PassResult is immutable: use with_()")

    def __repr__(self) -> str:
        return f"PassResult({self._columns!r})"

    def __reduce__(self) -> tuple:
        return PassResult.from_row, (self._columns,)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> PassResult:
        """The result a row says (its columns by name; an unknown one raises UnknownColumn)."""
        return cls(**row)

    def with_(self, **columns: Any) -> PassResult:
        """This result with `columns` (by column or field name) set; an unknown one raises UnknownColumn."""
        return PassResult(**{**self._columns, **_columns_of(columns)}) if columns else self

    def without(self, *names: str) -> PassResult:
        """This result without `names` (by column or field name): its row does not have them."""
        dropped = _columns_of(dict.fromkeys(names))
        return PassResult(**{k: v for k, v in self._columns.items() if k not in dropped})

    def keeping(self, other: PassResult, names: Sequence[str]) -> PassResult:
        """This result with `other`'s values of `names`, those `other` has (a measurement taken again keeps
        the first one's gate and what its first call compiled)."""
        return self.with_(**{k: other._columns[k] for k in names if k in other._columns})

    def to_row(self) -> dict[str, Any]:
        """The row: each column given, by its schema name."""
        return dict(self._columns)

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    def clean(self) -> list[float]:
        """The samples its statistics are from: neither disturbed nor the audit's (all where none were flagged)."""
        return clean_samples(self.samples_s or [], own_aside(self))

    def statistics(self) -> dict[str, float]:
        """The statistics its clean samples give (the columns n ... ci_hi_s)."""
        return summarize(self.clean())

    @staticmethod
    def merge(results: Sequence[PassResult]) -> PassResult:
        """One pass's results of several rounds (in round order) as one: all ok, their samples pooled and
        the statistics and rates recomputed (pooling.py); otherwise the first that was not ok. One
        round is the result as measured. The worker each came from is left out; the rounds are counted."""
        failed = next((r for r in results if not r.ok), None)
        if failed is not None or len(results) == 1:
            return (failed or results[0]).without(PROCESS).with_(rounds=len(results))
        return results[0].with_(**pooling.pooled(results)).without(PROCESS)


Results = list[PassResult]  # a cell's results, one per pass
_KNOWN = frozenset(COLUMNS) | {PROCESS}


def _columns_of(given: Mapping[str, Any]) -> dict[str, Any]:
    """`given` keyed by column name; a name that is neither a column nor its field raises UnknownColumn."""
    named = {_COLUMN_OF.get(k, k): v for k, v in given.items()}
    unknown = [k for k in named if k not in _KNOWN]
    if unknown:
        raise UnknownColumn(f"unknown column(s) {', '.join(map(repr, unknown))}: results/schema.py's COLUMNS "
                            "does not list them")
    return named

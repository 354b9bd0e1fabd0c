"""A cell: the small, immutable spec of one unit of work (operator, target, implementation, device, dtype,
params, passes). Running a cell is a pure function of it, so it runs the same in-process, in a worker
process, under a profiler, or on another machine; it crosses to them as `to_json()` / `from_json()`.

A cell knows itself: its params are typed (`Params`, not JSON text), and what it is — its identity, its
point, its swept axis and its series — are properties, looked up in the registry once (`operator`), not
asked for again by each room it passes. `resolve()` gives a `Resolved` (the cell with its operator,
target and implementation), which everything that runs it takes."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from functools import cached_property
from typing import Any, Mapping

import torch

from benchctl.ops import lookup, registry
from benchctl.ops.params import Params
from benchctl.ops.registry import Implementation, Operator, Target
from benchctl.vocab import DTYPE_NAMES, PASSES

DTYPES = {name: getattr(torch, name) for name in DTYPE_NAMES}


@dataclass(frozen=True)
class Cell:
    op: str
    target: str
    impl: str
    device: str
    dtype: str
    params: Params  # a plain mapping given here is frozen into Params
    passes: tuple[str, ...] = PASSES
    seed: int = 0
    checked: bool = False  # its gate passed earlier in this sweep: measured again, it is not checked again
    paired_with: str | None = None  # an implementation of the same point timed in alternation with it (run --pair-with)
    strict: bool = False  # re-checked: more of its timed calls' outputs checked (measure/audit.py, sweep/recheck.py)

    def __post_init__(self) -> None:
        if not isinstance(self.params, Params):
            object.__setattr__(self, "params", Params(self.params))
        object.__setattr__(self, "passes", tuple(self.passes))

    @staticmethod
    def make(op: str, target: str, impl: str, device: str, dtype: str, params: Mapping[str, Any],
             passes: tuple[str, ...] = PASSES, seed: int = 0) -> "Cell":
        return Cell(op, target, impl, device, dtype, Params(params), tuple(passes), seed)

    def with_params(self, **changes: Any) -> "Cell":
        """The same cell at other params (maxbatch's probes: one batch size after another)."""
        return replace(self, params=self.params.with_(**changes))

    @property
    def params_json(self) -> str:
        """The params as a row's `params` column holds them (sorted JSON)."""
        return self.params.text

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @cached_property
    def identity(self) -> tuple[str, ...]:
        """What names the cell in a run's rows (results/schema.py's CELL_COLUMNS, in order): a repeated cell
        is the same cell."""
        return self.op, self.target, self.impl, self.device, self.dtype, self.params.text

    @cached_property
    def point(self) -> tuple[str, ...]:
        """Its identity without the implementation: the cells a speedup compares share a point."""
        return self.op, self.target, self.device, self.dtype, self.params.text

    @cached_property
    def operator(self) -> Operator:
        """The operator it names, asked of the registry once (KeyError if unknown)."""
        return registry.get(self.op)

    @property
    def gate_params(self) -> dict[str, Any]:
        """The params its correctness gate checks it at: its own, as its operator's `check_params` maps them
        (a smaller batch, say, so the float64 reference stays cheap)."""
        return self.operator.params_for_check(self.params)

    @property
    def axis(self) -> str:
        """The param its operator sweeps."""
        return self.operator.axis

    @property
    def axis_value(self) -> float:
        value = self.params.get(self.axis, 0)
        return float(value) if isinstance(value, (int, float)) else 0.0

    @cached_property
    def series_key(self) -> tuple[str, ...]:
        """Cells that differ only in the swept axis value form one series."""
        others = {k: v for k, v in self.params.to_dict().items() if k != self.axis}
        return (*self.identity[:5], json.dumps(others, sort_keys=True))

    @property
    def point_series_key(self) -> tuple[str, ...]:
        """Its series key without the implementation: every implementation's series of the same points."""
        op, target, _impl, *rest = self.series_key
        return op, target, *rest

    @property
    def is_reference(self) -> bool:
        return self.impl == self.operator.reference

    def label(self) -> str:
        """"op/target impl device dtype [params]"; a param left unset (None: lstm_cell's I, which then follows H)
        says nothing and is left out, as in the tables."""
        keys = ",".join(f"{k}={v}" for k, v in self.params.items() if v is not None)
        return f"{self.op}/{self.target} {self.impl} {self.device} {self.dtype} [{keys}]"

    def resolve(self) -> "Resolved":
        """The operator, target and implementation this cell names (KeyError if one is unknown)."""
        return self._resolved

    @cached_property
    def _resolved(self) -> "Resolved":
        op = self.operator
        return Resolved(self, op, op.target(self.target), lookup.find(op, self.impl))

    def _fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __getstate__(self) -> dict[str, Any]:
        return self._fields()  # what it looked up stays behind: another process looks it up in its own registry

    def to_json(self) -> str:
        return json.dumps({**self._fields(), "params": self.params.to_dict()})

    @staticmethod
    def from_json(text: str) -> "Cell":
        data = json.loads(text)
        return Cell(**{**data, "params": Params(data["params"]), "passes": tuple(data["passes"])})


@dataclass(frozen=True)
class Resolved:
    """A cell with the operator, target and implementation it names, looked up once."""

    cell: Cell
    op: Operator
    target: Target
    impl: Implementation

    def unavailable_reason(self) -> str | None:
        return self.impl.unavailable_reason(self.cell.device, self.cell.dtype)

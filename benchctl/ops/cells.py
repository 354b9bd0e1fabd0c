"""A cell: the small, serialisable spec of one unit of work (operator, target, implementation, device,
dtype, params, passes). Running a cell is a pure function of it, so it runs the same in-process, in a
worker process, under a profiler, or on another machine.

A cell names things; `Cell.resolve()` looks the names up in the registry once and gives a `Resolved`
(the cell with its operator, target and implementation), which everything that runs it takes."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Mapping

import torch

from benchctl.ops import lookup
from benchctl.ops.registry import Implementation, Operator, Target, get
from benchctl.vocab import DTYPE_NAMES, PASSES

DTYPES = {name: getattr(torch, name) for name in DTYPE_NAMES}


@dataclass(frozen=True)
class Cell:
    op: str
    target: str
    impl: str
    device: str
    dtype: str
    params_json: str  # sorted JSON, so cells hash and compare by value
    passes: tuple[str, ...] = PASSES
    seed: int = 0
    checked: bool = False  # its gate passed earlier in this sweep: measured again, it is not checked again
    paired_with: str | None = None  # an implementation of the same point timed in alternation with it (run --pair-with)
    strict: bool = False  # re-checked: more of its timed calls' outputs checked (measure/audit.py, sweep/recheck.py)

    @staticmethod
    def make(op: str, target: str, impl: str, device: str, dtype: str, params: Mapping[str, Any],
             passes: tuple[str, ...] = PASSES, seed: int = 0) -> "Cell":
        return Cell(op, target, impl, device, dtype, json.dumps(dict(params), sort_keys=True), tuple(passes), seed)

    @property
    def params(self) -> dict[str, Any]:
        return json.loads(self.params_json)

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    def label(self) -> str:
        keys = ",".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.op}/{self.target} {self.impl} {self.device} {self.dtype} [{keys}]"

    def resolve(self) -> "Resolved":
        """The operator, target and implementation this cell names (KeyError if one is unknown)."""
        op = get(self.op)
        return Resolved(self, op, op.target(self.target), lookup.find(op, self.impl))

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(text: str) -> "Cell":
        data = json.loads(text)
        data["passes"] = tuple(data["passes"])
        return Cell(**data)


@dataclass(frozen=True)
class Resolved:
    """A cell with the operator, target and implementation it names, looked up once."""

    cell: Cell
    op: Operator
    target: Target
    impl: Implementation

    def unavailable_reason(self) -> str | None:
        return self.impl.unavailable_reason(self.cell.device, self.cell.dtype)

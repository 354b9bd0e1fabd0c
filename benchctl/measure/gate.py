"""The correctness gate a cell passes before it is timed: the implementation against the float64 reference
at the operator's check params, at the cell's seed and at a second one (a result right only for the
inputs it was checked on fails). What it adds to the cell's rows is GATE_COLUMNS, and a message when it fails.
"""

from __future__ import annotations

import json
from typing import Any

from benchctl.measure import correctness
from benchctl.ops.cells import Resolved

SECOND_SEED = 1  # the gate checks at the cell's seed and at seed + SECOND_SEED
GATE_COLUMNS = ("correct", "max_abs_err", "max_rel_err", "tolerance", "check_params")


def checked(resolved: Resolved) -> dict[str, Any]:
    """The gate's columns for the cell, and "message": why it failed, or ""."""
    cell = resolved.cell
    params = cell.gate_params
    for seed in (cell.seed, cell.seed + SECOND_SEED):
        result = correctness.check(resolved.op, resolved.target, resolved.impl, cell.device, cell.torch_dtype,
                                   params, seed)
        if not result.passed:
            break
    found = (result.passed, result.max_abs_err, result.max_rel_err, result.tolerance,
             json.dumps(params, sort_keys=True))
    return {**dict(zip(GATE_COLUMNS, found)),
            "message": "" if result.passed else _incorrect(result, seed if seed != cell.seed else None)}


def _incorrect(result: correctness.CheckResult, seed: int | None) -> str:
    what = "incorrect" if result.tampered else "incorrect vs float64 reference"
    return f"{what}: {result.failures()}" + (f" (at seed {seed}; right at the check seed)" if seed is not None else "")

"""The reference implementation's runs that the audit (audit.py) holds timed outputs against: at the timed
size, on what a call drew, in float32 (float64 for a float64 cell), kept on the CPU; and what a row says
where the reference cannot run at that size.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from benchctl.errors import error_message
from benchctl.measure import correctness, fresh
from benchctl.ops.cells import Resolved


def reference_run(resolved: Resolved, draw: fresh.Draw) -> correctness.Run:
    """The reference implementation, forward and backward, on what a call drew, at the cell's size."""
    cell, op = resolved.cell, resolved.op
    dtype = torch.float64 if cell.torch_dtype == torch.float64 else torch.float32
    return correctness.run_on(resolved.target, op.implementations[op.reference], fresh.inputs_of(resolved, draw, dtype))


def reference_runs(resolved: Resolved, pool: fresh.InputPool, sources: list[int]) -> list[correctness.Run]:
    """The reference on each data set of `pool`: the cell's inputs as the target made them (`pool.raw`, in
    the reference's dtype), its `key` from the pool's copy of the data set."""
    if not sources:
        return []
    dtype = torch.float64 if resolved.cell.torch_dtype == torch.float64 else torch.float32
    ref = resolved.op.implementations[resolved.op.reference]
    out = []
    for source in sources:
        inputs = {k: _as(v, dtype) for k, v in pool.raw.items()}  # new leaves: each run's own gradients
        if pool.key is not None and source >= 0:
            inputs[pool.key] = _as(pool.data[source], dtype).requires_grad_(pool.raw[pool.key].requires_grad)
        out.append(correctness.run_on(resolved.target, ref, inputs, watched=False))
    return out


def _as(t: Any, dtype: torch.dtype) -> Any:
    """A new leaf over `t` (a copy where `dtype` is not its own), for a floating tensor; else `t`."""
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        return t
    return t.detach().to(dtype).requires_grad_(t.requires_grad)


def on_cpu(run: correctness.Run) -> correctness.Run:
    """A reference run as the checks compare with it: on the CPU, in its own dtype, made once per data set
    and point (the point's cells and passes share it)."""
    moved = lambda t: None if t is None else t.detach().to("cpu")  # noqa: E731
    return replace(run, outs=tuple(map(moved, run.outs)), grads={n: moved(g) for n, g in run.grads.items()})


def cannot_compare(exc: Exception) -> str:
    """The row's note where the reference could not run at the timed size (it is the reference's failure,
    not the implementation's: the pass keeps its other checks)."""
    return f"timed outputs not compared with the reference, which failed at this size: {error_message(exc)}"

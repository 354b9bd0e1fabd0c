"""The figures of the self-test's sweeps: how many passes ran, whether the GPU held its clock, and what
CUDA-graph replay and an L2 flush changed against eager timing, on the same cells."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from benchctl.analysis.compare import KEY
from benchctl.analysis.summary import host_bound_rows
from benchctl.results import storage
from benchctl.selftest.steps import EAGER
from benchctl.selftest.verdict import Outcome
from benchctl.vocab import Device, Status

CELL = [k for k in KEY if k != "device"]  # a cell's key within the one GPU's runs


def sweep_figures(outcomes: Sequence[Outcome]) -> list[str]:
    runs = {o.step.name: storage.load(root=o.step.results) for o in outcomes if o.step.results and o.ok}
    lines = [_run_line(name, rows) for name, rows in runs.items()]
    eager = runs.get(EAGER)
    for name, rows in runs.items():
        if eager is not None and name != EAGER:
            lines.append(_ratio_line(name, rows, eager))
    return lines


def _ok(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[(rows["status"] == Status.OK) & (rows["device"] == Device.CUDA)]


def _run_line(name: str, rows: pd.DataFrame) -> str:
    ok = _ok(rows)
    clock = ok["sm_clock_mhz"].dropna() if "sm_clock_mhz" in ok else pd.Series(dtype=float)
    throttled = int(ok["throttled"].fillna(False).astype(bool).sum()) if "throttled" in ok else 0
    said = f"median SM clock {clock.median():.0f} MHz, {throttled} throttled" if len(clock) else "no NVML clock samples"
    return (f"- {name}: {len(ok)} of {len(rows)} passes ok, {int(ok['noisy'].fillna(False).sum())} noisy, "
            f"{int(host_bound_rows(ok).sum())} host-bound; {said}")


def _ratio_line(name: str, rows: pd.DataFrame, eager: pd.DataFrame) -> str:
    both = _ok(rows).merge(_ok(eager), on=CELL, suffixes=("", "_eager"))
    if both.empty:
        return f"- {name} against eager: no cell ran in both"
    ratio = both["median_s"] / both["median_s_eager"]
    kernels = ratio[~host_bound_rows(both, "_eager")]
    # Where the host sets the pace, an L2 flush or a graph changes the host's time, not the kernels'.
    said = (f"; over the {len(kernels)} GPU-bound in eager: {kernels.median():.3f}" if len(kernels)
            else "; every pass was host-bound in eager, so this compares host overhead, not kernels")
    return (f"- {name} against eager, same cells: median time ratio {ratio.median():.3f} "
            f"({ratio.min():.3f} to {ratio.max():.3f}) over {len(ratio)} passes{said}")

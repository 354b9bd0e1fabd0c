"""Speedups for the report: each row's speedup over the baseline implementation of its cell, and the 95%
interval of the ones timed in alternation with it (run --pair-with), drawn as bars on the speedup chart."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchctl.results import storage
from benchctl.analysis.summary import speedup
from benchctl.vocab import Status

CELL_KEY = ["target", "device", "dtype", "params", "pass"]  # one cell of the sweep, across impls


def speedups(df: pd.DataFrame, baseline: str) -> pd.Series:
    """The baseline's time over this row's for the same cell (summary.speedup: the pairs' ratio where the
    row was timed in alternation with the baseline, the rounds' where both were measured in rounds); NaN
    where either did not run."""
    ok = storage.latest(df[(df["status"] == Status.OK) & (df["impl"] == baseline)], CELL_KEY)
    base = dict(zip(ok[CELL_KEY].itertuples(index=False, name=None), ok.to_dict("records")))
    keys = df[CELL_KEY].itertuples(index=False, name=None)
    values = [speedup(base[key], row) if row["status"] == Status.OK and key in base else np.nan
              for key, row in zip(keys, df.to_dict("records"))]
    return pd.Series(values, index=df.index, dtype=float)


def paired_intervals(df: pd.DataFrame, baseline: str) -> dict[str, pd.Series]:
    """`speedup_lo`/`speedup_hi`: the paired speedups' 95% intervals, on the rows timed in alternation
    with `baseline` (whose speedup is the paired one, summary.speedup); NaN elsewhere."""
    if "paired_with" not in df:
        return {}
    paired = df["paired_with"] == baseline
    return {"speedup_lo": df["paired_ci_lo"].where(paired), "speedup_hi": df["paired_ci_hi"].where(paired)}


def ci_bars(ok: pd.DataFrame) -> np.ndarray | None:
    """Distances from each speedup to its 95% interval, where the speedup is a paired one (run
    --pair-with: `speedup_lo`/`speedup_hi`, see speedup_figure); none where no row of the line has one."""
    if "speedup_lo" not in ok or ok["speedup_lo"].isna().all():
        return None
    lo = (ok["speedup"] - ok["speedup_lo"]).fillna(0.0).clip(lower=0.0)
    hi = (ok["speedup_hi"] - ok["speedup"]).fillna(0.0).clip(lower=0.0)
    return np.vstack([lo.to_numpy(dtype=float), hi.to_numpy(dtype=float)])

"""Speedups for the report: each row's speedup over the baseline implementation of its cell, and how far it
moves (the interval of one timed in alternation with it, run --pair-with; else the range of its rounds'
ratios, run --processes or --rounds), drawn as bars on the speedup chart and written in the tables."""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from benchctl.results import storage
from benchctl.analysis.speedup import a_side_disturbed, range_label, speedup, speedup_range
from benchctl.vocab import Status

CELL_KEY = ["target", "device", "dtype", "params", "pass"]  # one cell of the sweep, across impls
Row = Mapping[str, Any]


def _per_row(df: pd.DataFrame, baseline: str, of: Callable[[Row, Row], Any], missing: Any) -> list:
    """`of(base, row)` for each row, `base` the baseline's row of the same cell; `missing` where either did
    not run."""
    ok = storage.latest(df[(df["status"] == Status.OK) & (df["impl"] == baseline)], CELL_KEY)
    base = dict(zip(ok[CELL_KEY].itertuples(index=False, name=None), ok.to_dict("records")))
    keys = df[CELL_KEY].itertuples(index=False, name=None)
    return [of(base[key], row) if row["status"] == Status.OK and key in base else missing
            for key, row in zip(keys, df.to_dict("records"))]


def speedups(df: pd.DataFrame, baseline: str) -> pd.Series:
    """The baseline's time over this row's for the same cell (speedup.speedup: the pairs' ratio where the
    row was timed in alternation with the baseline, the rounds' where both were measured in rounds); NaN
    where either did not run."""
    return pd.Series(_per_row(df, baseline, speedup, np.nan), index=df.index, dtype=float)


def doubts(df: pd.DataFrame, baseline: str) -> pd.Series:
    """Whether a side of each speedup was disturbed, or, not timed in pairs, one side alone timed beside other work
    (speedup.a_side_disturbed: its time may hold a neighbour's stall); False where either did not run."""
    return pd.Series(_per_row(df, baseline, a_side_disturbed, False), index=df.index, dtype=bool)


def intervals(df: pd.DataFrame, baseline: str) -> dict[str, pd.Series]:
    """`speedup_lo`/`speedup_hi`: how far each speedup moves (speedup.speedup_range); NaN where nothing says."""
    found = [r or (np.nan, np.nan) for r in _per_row(df, baseline, speedup_range, None)]
    return {name: pd.Series([r[i] for r in found], index=df.index, dtype=float)
            for i, name in enumerate(("speedup_lo", "speedup_hi"))}


def labels(df: pd.DataFrame, baseline: str) -> pd.Series:
    """Each speedup as the tables write it, with how far it moves (summary.range_label); empty where either
    did not run."""
    return pd.Series(_per_row(df, baseline, range_label, ""), index=df.index, dtype=object)


def ci_bars(ok: pd.DataFrame) -> np.ndarray | None:
    """Distances from each speedup to the ends of its range (`speedup_lo`/`speedup_hi`, see `intervals`);
    none where no row of the line has one."""
    if "speedup_lo" not in ok or ok["speedup_lo"].isna().all():
        return None
    lo = (ok["speedup"] - ok["speedup_lo"]).fillna(0.0).clip(lower=0.0)
    hi = (ok["speedup_hi"] - ok["speedup"]).fillna(0.0).clip(lower=0.0)
    return np.vstack([lo.to_numpy(dtype=float), hi.to_numpy(dtype=float)])

"""A side of a step in a cell's history: several runs of the cell as one row that compare.compare judges.

Their samples go together, each run counted as a process (so the spread between runs stands where
`compare` holds the spread between one run's processes). Where every run was timed in alternation with one
partner whose code stayed the same (`paired_with`, `partner_code`), the pairs go together too, each run's
turn by turn beside its own partner samples, so the side is also judged by its time against the partner;
and the history's levels are then that time (`levels`), which the machine's drift moves far less.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from benchctl.analysis.history import Point
from benchctl.analysis.pairs import block_interval, pair_ratios
from benchctl.results.schema import PAIRED_COLUMNS, clean_samples, left_alone, set_aside, stored_list
from benchctl.vocab import Stop

# the machine's probes, and the canary against its calibrated time: a pooled side takes their median
POOLED = ("canary_s", "canary_ratio", "mem_gbps", "sm_clock_mhz")


def partner(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The partner every run (row) was paired with, with one code digest throughout and a paired speedup
    and interval in each; None where any run differs."""
    named = {(r.get("paired_with"), r.get("partner_code")) for r in rows}
    if len(named) != 1:
        return None
    name, code = named.pop()
    measured = all(_number(r.get(k)) for r in rows for k in ("paired_speedup", "paired_ci_lo", "paired_ci_hi"))
    return name if isinstance(name, str) and name and isinstance(code, str) and code and measured else None


def levels(points: Sequence[Point]) -> np.ndarray:
    """Each run's level with its 95% interval, (median, low, high) a row: its time against the series'
    partner (1 / paired speedup) where it has one (`partner`), else its own median."""
    if partner([p.row for p in points]):
        return np.array([[1 / float(p.row[k]) for k in ("paired_speedup", "paired_ci_hi", "paired_ci_lo")]
                         for p in points])
    return own_levels(points)


def own_levels(points: Sequence[Point]) -> np.ndarray:
    """Each run's own median with its 95% interval, (median, low, high) a row."""
    return np.array([[p.median_s, p.ci_lo_s, p.ci_hi_s] for p in points])


def pooled(points: Sequence[Point]) -> dict[str, Any]:
    """One row standing for several runs of a cell (module docstring). Runs that did not settle are left out
    where any other did: noisy ones where another was not, disturbed ones (or timed beside other work) where any
    other was not."""
    rows = [p.row for p in points]
    undisturbed = [r for r in rows if left_alone(r)]
    settled = [r for r in undisturbed if not _flag(r.get("noisy"))] or undisturbed or rows
    last = dict(settled[-1])
    if len(settled) == 1:
        return last
    samples, aside = _joined(settled, "samples_s", "disturbed")
    probe = _joined(settled, "samples_s", "probe")[1]
    medians = [float(r["median_s"]) for r in settled]
    spreads = [float(v) for v in (r.get("process_spread") for r in settled) if _number(v)]
    probes = {k: _median([r.get(k) for r in settled]) for k in POOLED}
    pairs = _pairs(settled) if partner(settled) else {}
    return {**last, **dict.fromkeys(PAIRED_COLUMNS), **pairs, **probes, "samples_s": samples, "disturbed": aside,
            "probe": probe, "mode_aside": None,  # the last run's, beside its own samples only
            "median_s": float(np.median(clean_samples(samples, set_aside(len(samples), aside, probe)))),
            "processes": sum(int(_number(r.get("processes")) or 1) for r in settled),
            "process_spread": max([max(medians) / min(medians) - 1, *spreads]),
            "noisy": all(_flag(r.get("noisy")) for r in settled),
            "stop": Stop.DISTURBED if all(r.get("stop") == Stop.DISTURBED for r in settled) else last.get("stop")}


def _pairs(rows: Sequence[pd.Series]) -> dict[str, Any]:
    """The pair columns of the runs together: each run's own and partner samples kept in turn, its paired
    speedup standing as one process's (or its processes' own, where it had several)."""
    own, own_aside = _joined(rows, "samples_s", "disturbed")
    theirs, their_aside = _joined(rows, "partner_samples_s", "partner_disturbed")
    probe = _joined(rows, "samples_s", "probe")[1]
    ratios, clean = pair_ratios(own, theirs, set_aside(len(own), own_aside, probe), their_aside)
    if not clean.any():
        return {}
    low, high = block_interval(ratios[clean])
    speedups = [s for r in rows for s in stored_list(r.get("process_paired_speedups")) or [r.get("paired_speedup")]]
    return {"paired_with": rows[-1].get("paired_with"), "partner_code": rows[-1].get("partner_code"),
            "partner_samples_s": theirs, "partner_disturbed": their_aside,
            "paired_speedup": float(np.median(ratios[clean])), "paired_ci_lo": low, "paired_ci_hi": high,
            "process_paired_speedups": [float(s) for s in speedups]}


def _joined(rows: Sequence[pd.Series], samples: str, flags: str) -> tuple[list[float], list[bool]]:
    """The rows' samples one after another, with the flags of those set aside: a row's own flags, or none
    where it has none that fit or all are set (its samples then all count, as `clean_samples` takes them)."""
    values, aside = [], []
    for r in rows:
        mine, set_aside = stored_list(r.get(samples)), [bool(f) for f in stored_list(r.get(flags))]
        fits = len(set_aside) == len(mine) and not all(set_aside)
        values += [float(v) for v in mine]
        aside += set_aside if fits else [False] * len(mine)
    return values, aside


def _flag(value: Any) -> bool:
    return bool(value) if value is not None and not (np.isscalar(value) and pd.isna(value)) else False


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float, np.floating, np.integer)) and np.isfinite(value)
    return float(value) if ok else None


def _median(values: Sequence[Any]) -> float | None:
    present = [v for v in map(_number, values) if v is not None]
    return float(np.median(present)) if present else None

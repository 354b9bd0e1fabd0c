"""Whether a run reads like the earlier runs of the same code in its folder: how many of its passes lie outside the
fastest and slowest median of their earlier runs (at_speed.earlier_times, the report's "earlier runs ms"), against
how many runs alike would leave outside.

Were the runs alike (drawn from one distribution, in any order), a pass with n earlier runs would lie outside their
range with probability 2/(n+1). Over seventeen quick sweeps of one folder on the 2-core VM, the passes with seven to
ten earlier runs lay inside 81% of the time, against 81% (benchmarks/README.md, "The earlier runs' range as a
forecast"): the folder's runs had sampled the machine's states. So a run's count outside is held against the sum
of those chances, and against its tail, the passes taken one by one (a Poisson binomial; the passes of one run
share the machine, so their counts spread wider than that, and the rule is for runs far out): a run with more
passes outside than runs alike would leave UNLIKE of the time met the machine in a state its earlier runs did not.
Of those seventeen, one did: 62 of 149 outside (61 faster), where 27.5 were expected, the canary at a median 1.03x
calibrated through it and 0.99-1.27x through the five runs before.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchctl.analysis.at_speed import EARLIER, earlier_times, timed_alone
from benchctl.analysis.repeat import where
from benchctl.analysis.summary import ms_text

MIN_EARLIER = 2  # earlier runs of a pass, at least, for a range
UNLIKE = 0.01  # runs alike would leave this many passes outside, or more, less often than this: the run is unlike


def held(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> pd.DataFrame:
    """The ok rows left alone that MIN_EARLIER earlier runs or more timed, with EARLIER's columns (those
    `with_earlier` gave them, else worked out from `earlier`)."""
    if rows.empty:
        return rows
    found = rows if set(EARLIER.values()) <= set(rows.columns) else rows.assign(**earlier_times(rows, earlier))
    alone = np.array([timed_alone(r) for r in found.to_dict("records")], dtype=bool)
    return found[alone & (found[EARLIER["count"]].fillna(0) >= MIN_EARLIER).to_numpy()]


def chance_outside(runs: int) -> float:
    """The chance that the next of `runs` + 1 alike runs lies outside the range of the `runs` before it."""
    return 2 / (runs + 1)


def forecast_text(n: int) -> str:
    """What the range of n runs says of the next: `were the runs alike, the next would land within the range of n of
    them (n-1)/(n+1) of the time (82% at 10)`."""
    return (f"were the runs alike, the next would land within the range of n of them (n-1)/(n+1) of the time "
            f"({1 - chance_outside(n):.0%} at {n})")


def tail(chances: list[float], k: int) -> float:
    """P(k or more) of independent events with these chances (the Poisson binomial)."""
    pmf = np.ones(1)
    for p in chances:
        pmf = np.convolve(pmf, [1 - p, p])
    return float(pmf[k:].sum())


def outside_line(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> str | None:
    """The line under the tables: how many of the run's passes lie outside their earlier runs' range, which way,
    against how many runs alike would leave outside, whether that is more than they would UNLIKE of the time, and
    the furthest; None where no pass has MIN_EARLIER earlier runs."""
    found = held(rows, earlier)
    if found.empty:
        return None
    low, high = found[EARLIER["min"]], found[EARLIER["max"]]
    faster, slower = found["median_s"] < low, found["median_s"] > high
    chances = [chance_outside(int(n)) for n in found[EARLIER["count"]]]
    out = int(faster.sum() + slower.sum())
    text = (f"{out} of {len(found)} passes read outside the fastest and slowest of their earlier runs of the same code "
            f"in this folder ({int(faster.sum())} faster, {int(slower.sum())} slower), where runs alike would leave "
            f"{sum(chances):.1f} outside (2 in n + 1 of a pass with n earlier runs)")
    if tail(chances, out) < UNLIKE:
        text += (f", and as many less than {UNLIKE:.0%} of the time: this run met the machine in a state its earlier "
                 "runs did not, and its times are that state's as much as the code's")
    return text + _furthest(found[faster | slower])


def _furthest(outside: pd.DataFrame) -> str:
    """`; the furthest, X: 0.0708 ms here, 0.125-0.265 ms in 10 earlier runs`, or "" where none lies outside."""
    if outside.empty:
        return ""
    beyond = np.maximum(outside[EARLIER["min"]] / outside["median_s"], outside["median_s"] / outside[EARLIER["max"]])
    row = outside.iloc[int(np.argmax(beyond.to_numpy()))]
    return (f"; the furthest, {where(row)}: {ms_text(row['median_s'])} ms here, {ms_text(row[EARLIER['min']])}-"
            f"{ms_text(row[EARLIER['max']])} ms in {int(row[EARLIER['count']])} earlier runs")

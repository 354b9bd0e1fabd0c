"""Whether a run reads like the earlier runs of the same code in its folder: how many of its passes lie outside the
fastest and slowest median of their earlier runs (at_speed.earlier_times, the report's "earlier runs ms"), against
how many runs alike would leave outside, and against how many every earlier run left outside the others'.

Were the runs alike (drawn from one distribution, in any order), a pass with n earlier runs would lie outside their
range with probability 2/(n+1). Over seventeen quick sweeps of one folder on the 2-core VM, the passes with seven to
ten earlier runs lay inside 81% of the time, against 81% (benchmarks/README.md, "The earlier runs' range as a
forecast"): the folder's runs had sampled the machine's states. So a run's count outside is held against the sum
of those chances, and against its tail, the passes taken one by one (a Poisson binomial).

The passes of one run share the machine, so a run's count spreads wider than that tail: a run in a slow minute
reads many passes slow at once. So every run, this one and the earlier, is held the same way against all the
others (`run_shares`: its share of the passes outside the others' range), and a run is said to be unlike its
earlier runs only where the tail says so and its share is above each of theirs: a run no further out than earlier
runs were is what this folder's runs do (benchmarks/README.md, "A run unlike its earlier runs").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from benchctl.analysis.at_speed import EARLIER, OWN, earlier_times, timed_alone
from benchctl.analysis.repeat import measurement, where
from benchctl.analysis.summary import ms_text

MIN_EARLIER = 2  # earlier runs of a pass, at least, for a range
UNLIKE = 0.01  # runs alike would leave this many passes outside, or more, less often than this: the run is unlike
SHARED = 0.5  # an earlier run timed this share of the line's passes, at least, to be held beside this run


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


def tail(chances: Sequence[float], k: int) -> float:
    """P(k or more) of independent events with these chances (the Poisson binomial)."""
    pmf = np.ones(1)
    for p in chances:
        pmf = np.convolve(pmf, [1 - p, p])
    return float(pmf[k:].sum())


@dataclass(frozen=True)
class Standing:
    """A run held against its earlier runs as a whole: the passes with MIN_EARLIER earlier runs (`held`), which
    read faster than their fastest and which slower than their slowest, each one's chance of lying outside were the
    runs alike (`chance_outside`), the chance of as many outside or more were the passes independent (the tail),
    and every run's share outside the others' (`run_shares`)."""

    found: pd.DataFrame
    faster: pd.Series
    slower: pd.Series
    chances: tuple[float, ...]
    chance: float
    shares: pd.Series

    @property
    def outside(self) -> int:
        return int(self.faster.sum() + self.slower.sum())

    @property
    def expected(self) -> float:
        """How many passes runs alike would leave outside."""
        return sum(self.chances)

    @property
    def by_tail(self) -> bool:
        """As many outside as runs alike would leave less than UNLIKE of the time, were the passes independent."""
        return self.chance < UNLIKE

    @property
    def unlike(self) -> bool:
        """The tail says so, and the run read more of its passes outside than each earlier run read outside the
        others' (the passes of one run move together, so the tail alone says so of runs that are not)."""
        return self.by_tail and len(self.shares) > 0 and self.shares.iloc[0] > self.shares.iloc[1:].max()


def standing(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> Standing | None:
    """The run (`rows`) held against its earlier runs; None where no pass has MIN_EARLIER earlier runs."""
    found = held(rows, earlier)
    if found.empty:
        return None
    faster, slower = found["median_s"] < found[EARLIER["min"]], found["median_s"] > found[EARLIER["max"]]
    chances = tuple(chance_outside(int(n)) for n in found[EARLIER["count"]])
    return Standing(found, faster, slower, chances, tail(chances, int(faster.sum() + slower.sum())),
                    run_shares(found, earlier))


def outside_line(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> str | None:
    """The line under the tables: how many of the run's passes lie outside their earlier runs' range, which way,
    against how many runs alike would leave outside, how far every run's share outside the others' spreads, whether
    the run is unlike its earlier runs, and the furthest; None where no pass has MIN_EARLIER earlier runs."""
    s = standing(rows, earlier)
    if s is None:
        return None
    text = (f"{s.outside} of {len(s.found)} passes read outside the fastest and slowest of their earlier runs of the "
            f"same code in this folder ({int(s.faster.sum())} faster, {int(s.slower.sum())} slower), where runs alike "
            f"would leave {s.expected:.1f} outside (2 in n + 1 of a pass with n earlier runs)")
    return text + _runs_text(s) + _furthest(s.found[s.faster | s.slower])


def run_shares(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> pd.Series:
    """Each run's share of the passes the line counts (`held(rows, earlier)`) that it read outside the fastest and
    slowest of the other runs, this one and the earlier alike (index run_id, this run's first): every run held the
    same way, so that how far the shares spread is how far the folder's runs spread, passes moving together or not.
    A run that timed fewer than SHARED of those passes is left out; empty where fewer than MIN_EARLIER earlier
    runs are left."""
    found = held(rows, earlier)
    if found.empty or earlier is None or earlier.empty:
        return pd.Series(dtype=float)
    alone = earlier[np.array([timed_alone(r) for r in earlier.to_dict("records")], dtype=bool)]
    both = pd.concat([found, alone], ignore_index=True)
    both = both.assign(_key=measurement(both, OWN).to_numpy())
    medians = both[both["_key"].isin(set(both["_key"].iloc[:len(found)]))].groupby(["_key", "run_id"])[
        "median_s"].median().unstack()
    shares = {run: _share(medians, run) for run in [*found["run_id"].unique(), *medians.columns]}
    kept = {run: share for run, share in shares.items() if not np.isnan(share)}
    return pd.Series(kept, dtype=float) if len(kept) > MIN_EARLIER else pd.Series(dtype=float)


def _share(medians: pd.DataFrame, run: str) -> float:
    """The share of the passes (rows of `medians`, a column per run) that `run` timed and MIN_EARLIER other runs
    or more timed, that it read outside the others' range; NaN where it timed fewer than SHARED of them."""
    others = medians.drop(columns=[run])
    mine, counted = medians[run], others.count(axis=1) >= MIN_EARLIER
    if mine[counted].count() < SHARED * len(medians):
        return np.nan
    outside = (mine < others.min(axis=1)) | (mine > others.max(axis=1))
    return float(outside[counted & mine.notna()].mean())


def _runs_text(s: Standing) -> str:
    """`; held the same way against the others, the 10 earlier runs read 6%-28% of these passes outside, this run
    32%`, and whether the run is unlike them; "" without earlier runs' shares."""
    if s.shares.empty:
        return ""
    mine, others = s.shares.iloc[0], s.shares.iloc[1:]
    text = (f"; held the same way against the others, the {len(others)} earlier runs read {others.min():.0%}-"
            f"{others.max():.0%} of these passes outside, this run {mine:.0%}")
    if s.unlike:
        return (f"{text}: more than each of them, and more than runs alike would leave {UNLIKE:.0%} of the time were "
                "the passes independent; this run met the machine in a state its earlier runs did not, and its "
                "times are that state's as much as the code's")
    if s.by_tail:
        return (f"{text}: runs alike would leave as many less than {UNLIKE:.0%} of the time were the passes "
                "independent, but earlier runs read as many outside: this folder's runs move their passes together")
    return text


def _furthest(outside: pd.DataFrame) -> str:
    """`; the furthest, X: 0.0708 ms here, 0.125-0.265 ms in 10 earlier runs`, or "" where none lies outside. The
    passes whose median settled come first: a noisy one (a sample or two) is named only where no other is out."""
    if outside.empty:
        return ""
    settled = outside[~outside.reindex(columns=["noisy"])["noisy"].eq(True)]
    outside = settled if len(settled) else outside
    beyond = np.maximum(outside[EARLIER["min"]] / outside["median_s"], outside["median_s"] / outside[EARLIER["max"]])
    row = outside.iloc[int(np.argmax(beyond.to_numpy()))]
    return (f"; the furthest, {where(row)}: {ms_text(row['median_s'])} ms here, {ms_text(row[EARLIER['min']])}-"
            f"{ms_text(row[EARLIER['max']])} ms in {int(row[EARLIER['count']])} earlier runs")

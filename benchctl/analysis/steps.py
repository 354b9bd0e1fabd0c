"""The steps in a cell's history, found by change-point detection (ruptures' PELT) and judged with the
verdict rules of `compare`.

Each point is a run's level on a log scale (its median; or, where every run of the cell was timed in
alternation with one partner whose code stayed the same, its time against the partner: sides.levels),
weighted by how well that run knows it: its 95% interval
(as a standard error) plus the scatter between neighbouring runs (robustly, from the median absolute
difference of successive points), so a noisy run, whose interval is wide, weighs little and makes no step,
while a clean run far from its neighbours does. A step must pay the BIC penalty (2 ln n in chi-square
units). Each step found is then a comparison: the runs since the step before it against the runs up to
the step after it, each side pooled into one row (sides.pooled), and the verdict given by compare.compare,
by the pairs where they speak, but not across a slow phase of the machine on one side only: the search puts
a step where the series moved most, which is where such a phase flips, and the phase moves a pass's time
against its partner too (docs/measuring.md, "A cell's history").
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import pandas as pd
import ruptures as rpt
from ruptures.base import BaseCost

from benchctl.analysis import compare, comparison, sides
from benchctl.analysis.history import Point, Series
from benchctl.analysis.verdict import CODE_UNCHANGED
from benchctl.results.schema import left_alone

Z95 = 1.959964  # a 95% interval's half-width in standard errors
MAD_SIGMA = 1.4826  # median absolute deviation -> standard deviation, for normal scatter


class WeightedL2(BaseCost):
    """The weighted squared error of a segment around its weighted mean: with weights 1/variance, minus
    twice a Gaussian log-likelihood (the cost PELT minimises)."""

    model = "weighted_l2"
    min_size = 1

    def __init__(self, weights: Sequence[float]):
        self.weights = np.asarray(weights, dtype=float)

    def fit(self, signal: np.ndarray) -> "WeightedL2":
        self.signal = np.asarray(signal, dtype=float).reshape(len(self.weights), -1)
        y, w = self.signal[:, 0], self.weights
        self._w, self._wy, self._wyy = (np.concatenate([[0.0], np.cumsum(v)]) for v in (w, w * y, w * y * y))
        return self

    def error(self, start: int, end: int) -> float:
        w = self._w[end] - self._w[start]
        wy = self._wy[end] - self._wy[start]
        return float(self._wyy[end] - self._wyy[start] - wy * wy / w) if w > 0 else 0.0


@dataclass(frozen=True)
class Step:
    series: Series
    index: int  # the first point after the step
    change: comparison.CellChange  # the runs after the step against the runs before it

    @property
    def before(self) -> Point:
        return self.series.points[self.index - 1]

    @property
    def after(self) -> Point:
        return self.series.points[self.index]

    @property
    def code_unchanged(self) -> bool:
        """The cell's code digest is the same on both sides of the step: the commit after it did not touch the
        cell's code (the machine, or the software around it, moved it)."""
        return self.change.code_changed is False

    def words(self) -> str:
        """The verdict as `compare` words it, with `(code unchanged)` on any verdict where the code did not
        change, not only a decisive one: a history names the commit after each step, and it did not cause this."""
        said = self.change.words()
        return f"{said} ({CODE_UNCHANGED})" if self.code_unchanged and not self.change.unexplained else said


def weights(levels: np.ndarray) -> np.ndarray:
    """1 / variance of each run's log level: its own interval's, plus the scatter between runs."""
    y = np.log(levels[:, 0])
    own = np.array([(math.log(hi) - math.log(lo)) / (2 * Z95) if lo > 0 else 0.0 for _, lo, hi in levels])
    scatter = MAD_SIGMA * float(np.median(np.abs(np.diff(y)))) / math.sqrt(2) if len(y) > 2 else 0.0
    variance = own ** 2 + scatter ** 2
    floor = max(float(np.max(variance)), 1e-12) * 1e-6  # identical medians with no interval: no zero division
    return 1 / np.maximum(variance, floor)


def searched(points: Sequence[Point]) -> list[int]:
    """The indices of the runs the search reads: all but those the harness stopped as disturbed or timed beside
    other work (a neighbour held the machine through them, so their times say nothing of the code however
    narrow their interval: one read 350x its neighbours with an interval under +-0.01%), unless fewer than two
    would be left."""
    kept = [i for i, p in enumerate(points) if left_alone(p.row)]
    return kept if len(kept) >= 2 else list(range(len(points)))


def change_points(points: Sequence[Point]) -> list[int]:
    """Indices of the points that start a new level (never 0), among the runs searched (`searched`)."""
    kept = searched(points)
    return [kept[i] for i in _change_points([points[i] for i in kept])]


def _change_points(points: Sequence[Point]) -> list[int]:
    """The search itself, always at a new commit: the runs of one commit measure the same code, so they
    are one point to it, at their weighted mean with their weights summed (which gives every segmentation
    that keeps them together the same cost, up to a constant, as the runs one by one)."""
    starts = [i for i, p in enumerate(points) if i == 0 or p.label != points[i - 1].label]
    if len(starts) < 2:
        return []
    found = sides.levels(points)
    y, w = np.log(found[:, 0]), weights(found)
    groups = [slice(a, b) for a, b in zip(starts, [*starts[1:], len(points)])]
    group_w = np.array([w[g].sum() for g in groups])
    group_y = np.array([(w[g] * y[g]).sum() for g in groups]) / group_w
    algo = rpt.Pelt(custom_cost=WeightedL2(group_w), min_size=1, jump=1).fit(group_y.reshape(-1, 1))
    return [starts[i] for i in algo.predict(pen=2 * math.log(len(points))) if 0 < i < len(groups)]


def steps(series: Series, threshold: float = 0.05, alpha: float = 0.05) -> list[Step]:
    """The series' steps, each judged against the runs on its sides."""
    found = change_points(series.points)
    bounds = [0, *found, len(series.points)]
    out = []
    for left, at, right in zip(bounds, bounds[1:], bounds[2:]):
        before, after = (pd.DataFrame([sides.pooled(series.points[a:b])]) for a, b in ((left, at), (at, right)))
        change = compare.compare(before, after, threshold, alpha, bridge_phases=False).cells[0]
        code = compare.code_changed(series.points[at - 1].row, series.points[at].row)  # at the step itself
        out.append(Step(series, at, replace(change, code_changed=code)))
    return out


def newest_first(found: Sequence[Step]) -> list[Step]:
    """Steps across series, the latest first (by the date of the commit after the step)."""
    return sorted(found, key=lambda s: (s.after.time, s.after.run_id), reverse=True)


def by_code(found: Sequence[Step]) -> tuple[list[Step], list[Step]]:
    """The steps where the cell's code changed (or a side does not record it), and those at commits that did not
    touch it (`Step.code_unchanged`: the machine's, or the software's around it)."""
    return [s for s in found if not s.code_unchanged], [s for s in found if s.code_unchanged]


def summary(found: Sequence[Step]) -> str:
    """`12 steps: 2 where the cell's code changed (1 slower, 1 unsure), 10 at commits that did not touch it`:
    what to read first in a history whose steps are mostly the machine's."""
    changed = [s for s in found if s.change.code_changed]
    verdicts = Counter(s.change.verdict for s in changed)
    said = f" ({', '.join(f'{n} {v}' for v, n in verdicts.most_common())})" if changed else ""
    unknown = sum(s.change.code_changed is None for s in found)
    return (f"{len(found)} step(s): {len(changed)} where the cell's code changed{said}, "
            f"{sum(s.code_unchanged for s in found)} at commits that did not touch it"
            + (f", {unknown} where a side does not record its code" if unknown else ""))


def all_steps(series: Sequence[Series], threshold: float = 0.05, alpha: float = 0.05) -> list[Step]:
    """Every series' steps, newest first."""
    return newest_first([step for s in series for step in steps(s, threshold, alpha)])

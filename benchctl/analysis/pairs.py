"""What samples timed in pairs say (run --pair-with, measure/paired.py): each pair's ratio, the interval of
their median inside one run, and a cell's change between two runs measured against the partner both runs
timed it beside.

A machine that changes speed moves a cell's own times between two runs far more than its samples say (on
the 2-core VM, two quiet A/A runs read lstm_cell's and grid_sample's cpp passes 0.61-1.47x apart), and the
pairs' ratios far less (0.92-1.05x in the same runs): whatever the machine does reaches both halves of a
pair. So a cell paired with the same partner in both runs is also judged by its time relative to the
partner (`relative_change`), where the partner's code did not change (verdict.py `with_pairs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np

from benchctl.results.schema import clean_samples, own_aside, stored_list

# Runs of consecutive pairs whose medians bound the paired speedup's interval (block_interval).
PAIR_BLOCKS = 6
# Runs of consecutive pairs a side's pairs are cut into to compare two runs (relative_change): their medians
# are the units compared, neighbouring pairs being too alike to count as independent. Twelve a side let the
# rank test reach p = 7e-7, which still counts after adjusting for a sweep's hundreds of cells (six: 0.002).
COMPARE_BLOCKS = 12
PAIRS_PER_BLOCK = 2  # the fewest clean pairs a block takes; a side with fewer is not compared by its pairs
CONFIDENCE = 0.95


def pair_ratios(own: Sequence[float], partner: Sequence[float], own_aside: Sequence[bool] = (),
                partner_aside: Sequence[bool] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's ratio (partner / own) and whether it is clean. A side that took k calls a turn
    (`calls_per_pair`) has k times the other's samples, and each turn gives its median. A machine that
    slows down for a moment slows both halves of the pairs it reaches, so their ratios stay put where two
    medians taken apart would move. A pair is clean where each side has a sample its watch did not set
    aside (its flags; none set where a side was not watched), and then the turn's median is theirs."""
    pairs = min(len(own), len(partner))
    own_medians, own_clean = _turns(own, own_aside, pairs)
    partner_medians, partner_clean = _turns(partner, partner_aside, pairs)
    return partner_medians / own_medians, own_clean & partner_clean


def _turns(samples: Sequence[float], aside: Sequence[bool], pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """A side's median of each turn (of its clean samples where it has any) and whether it had any."""
    calls = len(samples) // pairs if pairs else 1
    values = np.asarray(samples, dtype=np.float64)[:pairs * calls].reshape(pairs, calls)
    flags = _flags(aside, len(samples))[:pairs * calls].reshape(pairs, calls)
    clean = ~flags.all(axis=1)
    return _row_medians(values, flags & clean[:, None]), clean


def _row_medians(values: np.ndarray, left_out: np.ndarray) -> np.ndarray:
    """Each row's median of the values not left out (a row keeps at least one), as np.median takes it: the
    middle value, or the mean of the two middle ones. All rows at once: a history of 10 runs takes 130,000."""
    ordered = np.sort(np.where(left_out, np.inf, values), axis=1)
    kept = (~left_out).sum(axis=1)
    rows = np.arange(len(values))
    return (ordered[rows, (kept - 1) // 2] + ordered[rows, kept // 2]) / 2


def _flags(aside: Sequence[bool], n: int) -> np.ndarray:
    return np.asarray(aside, dtype=bool) if len(aside) == n else np.zeros(n, bool)


def partner_median(row: Mapping[str, Any]) -> float | None:
    """The median of the partner's samples in a row's pairs (those its watch kept, `clean_samples`): what the
    partner read beside this implementation, which the partner's own row, timed at another moment, need not
    match. None where the row was not timed in pairs."""
    samples = stored_list(row.get("partner_samples_s"))
    if not samples:
        return None
    return float(np.median(clean_samples(samples, stored_list(row.get("partner_disturbed")))))


def block_interval(ratios: np.ndarray) -> tuple[float, float]:
    """The lowest and the highest median of PAIR_BLOCKS runs of consecutive pairs: an interval of the
    median that holds where the pairs' ratios drift while they are taken. Each block's median falls on
    either side of the true one by even odds, so all of them miss it on one side with a chance of 2 in
    2**PAIR_BLOCKS (97% coverage). The order-statistic interval of all the pairs treats them as independent
    draws, and they are not: neighbouring pairs share the machine's state. Two quick runs on the 2-core VM
    gave intervals (+-1.2% at their median) of which 26 of 56 missed the next run's; blocks' (+-2.7%), 10."""
    medians = [float(np.median(block)) for block in np.array_split(ratios, PAIR_BLOCKS)]
    return min(medians), max(medians)


@dataclass(frozen=True)
class RelativeChange:
    """A cell's time relative to its partner in NEW over that in BASE (above 1: slower against the partner),
    its 95% interval and the rank test's p-value, from COMPARE_BLOCKS blocks of pairs a side; and the larger
    of the two sides' spreads between their worker processes' paired speedups (None: a side measured in one
    process), which a change must get past."""
    partner: str
    ratio: float
    low: float
    high: float
    p_value: float
    spread: float | None = None


def relative_change(base: Mapping[str, Any], new: Mapping[str, Any]) -> RelativeChange | None:
    """The change of a cell paired with the same partner in both rows; None where a row was not paired with
    it, or either has too few clean pairs. The ratio is of the rows' paired speedups (what `run` showed);
    the interval is the Hodges-Lehmann one of the shift between the blocks' log medians (`shift_interval`),
    and the p-value the exact two-sided Mann-Whitney test's on them."""
    from scipy.stats import mannwhitneyu

    partner = base.get("paired_with")
    if not isinstance(partner, str) or not partner or partner != new.get("paired_with"):
        return None
    a, b = block_medians(base), block_medians(new)
    speedups = base.get("paired_speedup"), new.get("paired_speedup")
    if a is None or b is None or not all(_positive(s) for s in speedups):
        return None
    low, high = shift_interval(np.log(a), np.log(b))
    p = float(mannwhitneyu(b, a, alternative="two-sided", method="exact").pvalue)
    spreads = [process_spread(row) for row in (base, new)]
    spread = None if None in spreads else max(spreads)
    return RelativeChange(partner, float(speedups[0] / speedups[1]), math.exp(low), math.exp(high), p, spread)


def process_spread(row: Mapping[str, Any]) -> float | None:
    """The fastest worker process's paired speedup over the slowest's, minus 1; None with fewer than two.
    The pairs of one process agree better than two processes do: a process can land in a mode of its own
    for its whole life, and two runs of `run all cpu --quick`, one process each, moved speedups that their
    blocks put within +-5% by up to 34%."""
    speedups = [s for s in stored_list(row.get("process_paired_speedups")) if _positive(s)]
    return max(speedups) / min(speedups) - 1 if len(speedups) >= 2 else None


def block_medians(row: Mapping[str, Any]) -> np.ndarray | None:
    """The medians of COMPARE_BLOCKS runs of a row's consecutive clean pairs, each pair's own time over its
    partner's; None with fewer than PAIRS_PER_BLOCK pairs a block. A row pooled from rounds whose turns
    took different numbers of calls is cut into turns of their mean length."""
    own, partner = stored_list(row.get("samples_s")), stored_list(row.get("partner_samples_s"))
    if not own or not partner:
        return None
    aside = own_aside(row), stored_list(row.get("partner_disturbed"))
    ratios, clean = pair_ratios(own, partner, *aside)
    times = 1 / ratios[clean]
    if times.size < COMPARE_BLOCKS * PAIRS_PER_BLOCK:
        return None
    return np.array([np.median(block) for block in np.array_split(times, COMPARE_BLOCKS)])


def shift_interval(base: np.ndarray, new: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Hodges-Lehmann interval of the shift from `base` to `new`: of the differences between every
    value of `new` and every one of `base`, sorted, the k-th from either end, with k from the exact null
    distribution of the Mann-Whitney U statistic, so that the interval covers the shift with `confidence`
    where the values of each side are independent draws of one distribution shifted: the shift lies below
    the k-th difference where fewer than k differences fall below it, and their count is U. Too few values
    for any such k: the whole line."""
    differences = np.sort(np.subtract.outer(new, base).ravel())
    k = _u_critical(len(base), len(new), (1 - confidence) / 2)
    return (float(differences[k - 1]), float(differences[-k])) if k else (-math.inf, math.inf)


def _u_critical(m: int, n: int, tail: float) -> int:
    """The largest k with P(U < k) <= tail for the U statistic of m and n values with no shift."""
    cumulative = np.cumsum(u_counts(m, n)) / math.comb(m + n, m)
    return int(np.searchsorted(cumulative, tail, side="right"))


@lru_cache(maxsize=None)
def u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the orderings of m values of one sample and n of the other give U = 0, 1, ..., m * n
    (U: the pairs whose first-sample value is the larger). The largest value of all is either a first-sample
    one, larger than all n of the other (U - n left for the rest), or a second-sample one (U left)."""
    if m == 0 or n == 0:
        return (1,)
    counts = [0] * (m * n + 1)
    for u, ways in enumerate(u_counts(m - 1, n)):
        counts[u + n] += ways
    for u, ways in enumerate(u_counts(m, n - 1)):
        counts[u] += ways
    return tuple(counts)


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0

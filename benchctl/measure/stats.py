"""The statistics of a pass's samples, and the words a row says of them: the median's confidence interval
(distribution-free: two order statistics picked with the binomial distribution), whether it settled
(`noisy`), and the messages of a noisy or disturbed pass."""

from __future__ import annotations

import statistics
from typing import Sequence

import numpy as np

from benchctl.vocab import Device

CI_LEVEL = 0.95  # the confidence interval of the median that rows record
CI_TARGET = 0.01  # converged: that interval within +-1% of the median
# how the doubts a pass's samples and its neighbours give begin (the messages below)
NOISY, DISTURBED, BUSY = "noisy: ", "disturbed: ", "busy: "


def _rank(n: int) -> int:
    """k of median_ci: the largest rank with P(Binomial(n, 1/2) < k) <= (1 - CI_LEVEL) / 2; 0 when none."""
    from scipy.stats import binom  # a second to import: commands that time nothing go without it

    return int(binom.ppf((1 - CI_LEVEL) / 2, n, 0.5))


# The fewest samples whose median has a CI_LEVEL interval at all (6 at 95%): with fewer, even their whole
# range holds the median with less than that probability, and one sample's "interval" is a point.
# `_rank(n)` is 1 or more once no sample below the median (2**-n) is rarer than the tail: written out, no scipy here.
CI_MIN_SAMPLES = next(n for n in range(1, 100) if 0.5 ** n < (1 - CI_LEVEL) / 2)


def median_ci(samples: list[float] | tuple[float, ...] | np.ndarray) -> tuple[float, float]:
    """The CI_LEVEL confidence interval of the median: the order statistics k and n-k+1, with k the
    largest rank such that a Binomial(n, 1/2) falls below it with probability at most (1-level)/2. With
    too few samples for that, their range."""
    ordered = np.sort(np.asarray(samples, dtype=np.float64))
    n = ordered.size
    k = _rank(n)
    if k < 1:
        return float(ordered[0]), float(ordered[-1])
    return float(ordered[k - 1]), float(ordered[n - k])


def ci_half_width(stats: dict[str, float]) -> float:
    """The median's interval as a fraction of it: the larger of its two sides."""
    median = stats["median_s"]
    if median <= 0:
        return float("inf")
    return max(median - stats["ci_lo_s"], stats["ci_hi_s"] - median) / median


def is_noisy(stats: dict[str, float], target: float = CI_TARGET) -> bool:
    """The median is not known to within +-target: its confidence interval is wider, or there are too few
    samples for one (a pass that ran out of time after one sample is not a settled number)."""
    return stats.get("n", CI_MIN_SAMPLES) < CI_MIN_SAMPLES or ci_half_width(stats) > target


def noisy_message(stats: dict[str, float]) -> str:
    if stats.get("n", CI_MIN_SAMPLES) < CI_MIN_SAMPLES:
        return (f"{NOISY}{stats['n']} sample(s), too few for a {CI_LEVEL:.0%} interval of the median "
                f"(it takes {CI_MIN_SAMPLES})")
    return (f"{NOISY}the median is known to +-{ci_half_width(stats):.1%} only "
            f"(IQR {stats['iqr_s'] / stats['median_s']:.0%} of it, {stats['n']} samples)")


def disturbed_message(disturbed: Sequence[bool], readings: Sequence[float], median_s: float,
                      device: str = "cpu") -> str:
    """Why a pass is `disturbed`: how many samples the machine did not give what they asked for, and by how
    much (on a CPU the wait for a core per call, on a GPU the SM clock)."""
    hit = [r for r, d in zip(readings, disturbed) if d] or [0.0]
    how = (f"ran below 90% of the SM clock (median {statistics.median(hit):.0f} MHz)" if device == Device.CUDA else
           f"waited for a CPU (median wait {statistics.median(hit) * 1e3:.3g} ms per call, the median call "
           f"{median_s * 1e3:.3g} ms)")
    return set_aside_message(disturbed, how)


def set_aside_message(disturbed: Sequence[bool], how: str) -> str:
    """`disturbed: ` and how many samples were set aside, `how`, and how many clean ones are left."""
    n, set_aside = len(disturbed), sum(disturbed)
    return f"{DISTURBED}{set_aside} of {n} samples ({set_aside / n:.0%}) {how}, {n - set_aside} clean sample(s) left"


def busy_message(other_cores: float, cores: int) -> str:
    """A pass timed while other processes kept `other_cores` of the machine's `cores` busy."""
    return (f"{BUSY}other work kept about {other_cores:.1f} of {cores} cores busy while it was timed: its time is "
            "that machine's, not a quiet one's")


def join_messages(*messages: str | None) -> str:
    """A row's messages as one, in order, the empty ones left out."""
    return "; ".join(filter(None, messages))


def notes(message: str | None) -> list[str]:
    """A row's message without the doubts its samples and neighbours give (noisy, disturbed, busy): what it says
    of the call itself (timed alone, work left on another stream, ...), which pooled rounds keep while they
    derive the doubts anew."""
    return [part for part in (message or "").split("; ") if part and not part.startswith((NOISY, DISTURBED, BUSY))]


def summarize(samples: list[float] | tuple[float, ...]) -> dict[str, float]:
    arr = np.asarray(samples, dtype=np.float64)
    q1, med, q3 = np.percentile(arr, [25, 50, 75])
    lo, hi = median_ci(arr)
    return {
        "n": int(arr.size),
        "median_s": float(med),
        "iqr_s": float(q3 - q1),
        "mean_s": float(arr.mean()),
        "std_s": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
        "min_s": float(arr.min()),
        "max_s": float(arr.max()),
        "ci_lo_s": lo,
        "ci_hi_s": hi,
    }

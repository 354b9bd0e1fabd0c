"""Two implementations timed sample by sample in alternation, and the speedup their sample pairs give.

A machine whose speed moves (a 2-core VM swings by up to 2x for a second at a time) slows both samples of
the pairs it reaches, so the pairs' own ratios stay put where two medians measured apart, even back to
back, would move. The timing policy, warm-up and stop rules are timing.py's.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from benchctl.measure.clocks import Clock, Thunk
from benchctl.measure.stats import CI_MIN_SAMPLES, median_ci
from benchctl.measure.timing import Measurement, Policy, Sampler, collector_off, sample, warm_up, watch_of


# Two calls further apart than this in their warm-up are not paired: the faster would get only as many
# samples as the slower has time for (hoconv2d's backward, 100x py's: a few pairs a round, its median
# flagged noisy), and a swing of the machine cannot carry such a ratio across a goal.
PAIRS_UP_TO = 10.0


def measure_paired(setup: Callable[[], Thunk], partner: Callable[[], Thunk], clock: Clock, partner_clock: Clock,
                   policy: Policy = Policy(), elapsed: Callable[[], float] = time.monotonic,
                   between: Callable[[], None] = lambda: None) -> tuple[Measurement, Measurement | None]:
    """Two calls measured sample by sample in alternation, in pairs (own, partner), (partner, own), ... so
    whatever the machine does meanwhile reaches both alike and the order within a pair evens out. Each
    timed call follows an untimed call of its own, so it finds the caches as a loop of that call alone
    leaves them, not full of the other's data: on the 2-core VM, lstm_cell's py call straight after cpp's
    took 3% longer than in a loop of its own (0.402 against 0.389 ms), and cpp's speedup over it came out
    1.97-2.01x; with the untimed calls, py took the same as alone and the speedup was 2.04-2.05x.

    Each side is judged by `policy` on its own samples and on the pair's shared wall clock, and sampling
    goes on until both are done: the two keep the same number of samples, sample i of one taken next to
    sample i of the other (`paired_stats` divides them pair by pair). When their warm-ups are more than
    PAIRS_UP_TO times apart (`far_apart`), the own call is sampled alone and the partner's measurement is
    None."""
    with collector_off():
        began = elapsed()
        warm = warm_up(setup, clock, policy, elapsed)
        partner_warm = warm_up(partner, partner_clock, policy, elapsed)
        if far_apart(warm, partner_warm):
            return sample(setup, clock, policy, elapsed, between).measurement(warm, elapsed() - began), None
        own, other = Sampler(policy, watch_of(clock)), Sampler(policy, watch_of(partner_clock))
        sides = [(setup, clock, own), (partner, partner_clock, other)]
        start = elapsed()
        while not all(sampler.stop for _, _, sampler in sides):
            for side_setup, side_clock, sampler in sides:
                side_setup()()
                sampler.add(side_clock.time(side_setup()))
                between()
            spent = elapsed() - start
            for _, _, sampler in sides:
                sampler.judge(spent)
            sides.reverse()
    wall = elapsed() - began
    return own.measurement(warm, wall), other.measurement(partner_warm, wall)


def paired_stats(own: Sequence[float], partner: Sequence[float], own_aside: Sequence[bool] = (),
                 partner_aside: Sequence[bool] = ()) -> dict[str, float]:
    """How many times faster `own` is than `partner`, from samples taken in pairs: the median of the
    pairs' own ratios (partner / own) and its confidence interval. A machine that slows down for a
    moment slows both samples of the pairs it reaches, so their ratios stay put where two medians
    taken apart would move. A pair with either side set aside (its watch's flags; none where a side
    was not watched) is left out, unless that leaves none. Fewer than CI_MIN_SAMPLES pairs give no
    interval (None): one pair's "interval" read as 0.29x +-0.0%."""
    ratios = np.asarray(partner, dtype=np.float64) / np.asarray(own, dtype=np.float64)
    keep = ~(_flags(own_aside, len(ratios)) | _flags(partner_aside, len(ratios)))
    ratios = ratios[keep] if keep.any() else ratios
    lo, hi = median_ci(ratios) if ratios.size >= CI_MIN_SAMPLES else (None, None)
    return {"paired_speedup": float(np.median(ratios)), "paired_ci_lo": lo, "paired_ci_hi": hi}


def _flags(aside: Sequence[bool], n: int) -> np.ndarray:
    return np.asarray(aside, dtype=bool) if len(aside) == n else np.zeros(n, bool)


def far_apart(own: Sequence[float], partner: Sequence[float]) -> bool:
    """The two warm-ups' medians more than PAIRS_UP_TO times apart, either way (no warm-up: not known)."""
    if not own or not partner:
        return False
    a, b = float(np.median(own)), float(np.median(partner))
    return min(a, b) <= 0 or max(a, b) / min(a, b) > PAIRS_UP_TO

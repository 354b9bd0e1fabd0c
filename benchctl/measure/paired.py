"""Two implementations timed sample by sample in alternation, and the speedup their sample pairs give.

A machine whose speed moves (a 2-core VM swings by up to 2x for a second at a time) slows both samples of
the pairs it reaches, so the pairs' own ratios stay put where two medians measured apart, even back to
back, would move. The timing policy, warm-up and stop rules are timing.py's.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from benchctl.analysis.pairs import block_interval, pair_ratios
from benchctl.measure.clocks import Clock, Thunk
from benchctl.measure.stats import CI_MIN_SAMPLES
from benchctl.measure.timing import Measurement, Policy, Probe, Sampler, collector_off, sample, warm_up, watch_of


# Two calls further apart than this in their warm-up are not paired: a pair would hold that many calls
# of the faster one, and the machine's swings would reach the pair's two halves apart.
PAIRS_UP_TO = 1000.0
# A side whose warm-up median is at least this long (seconds) begins its turns without the untimed call, which
# doubled its turn (hoconv2d's 167 ms py backward at 4 beside a 62 ms kernel got 3 pairs in a quick sweep, and
# no interval). Over two quick sweeps of each kind (benchmarks/primed_bench.py, 48 paired passes a sweep), the
# passes got a median 32 pairs against 20 and 74 intervals of 96 against 57, in the same time, and their
# speedups moved by a median 3.7% (signed +0.4%) against 7.0-8.4% between two runs of one kind.
PRIMED_UP_TO = 0.01
# Calls further apart than this pair in turns of k calls of the faster (calls_per_pair); closer ones one to
# one: in two quick sweeps paired in turns from 1.5x on, the speedups between 1.5x and 10x moved between the
# runs by a median 7.8%, against 3.8% paired one to one; those beyond 10x, timed alone before, by 9.6%
# against 16.5%.
TURNS_FROM = 10.0
# One side of a paired measurement: its setup, clock, sampler, timed calls a turn, and the setup of the untimed
# call that begins its turns (None: it has none, `primed`)
Side = tuple[Callable[[], Thunk], Clock, Sampler, int, Callable[[], Thunk] | None]


def measure_paired(setup: Callable[[], Thunk], partner: Callable[[], Thunk], clock: Clock, partner_clock: Clock,
                   policy: Policy = Policy(), elapsed: Callable[[], float] = time.monotonic,
                   between: Callable[[], None] = lambda: None,
                   primer: Callable[[], Thunk] | None = None,
                   probe: Probe | None = None) -> tuple[Measurement, Measurement | None]:
    """Two calls measured in alternation, in pairs (own, partner), (partner, own), ... so whatever the
    machine does meanwhile reaches both alike and the order within a pair evens out. Each side's turn
    begins with an untimed call of its own, so its timed calls find the caches as a loop of that call
    alone leaves them, not full of the other's data: on the 2-core VM, lstm_cell's py call straight after
    cpp's took 3% longer than in a loop of its own (0.402 against 0.389 ms), and cpp's speedup over it came
    out 1.97-2.01x; with the untimed calls, py took the same as alone and the speedup was 2.04-2.05x. A side
    whose call takes PRIMED_UP_TO or longer skips it (`primed`): the refill is then a small share of it. The
    own side's untimed calls take their thunks from `primer` where given (one that spends no data set kept for
    a timed call: fresh.py), else from `setup`. `probe` says of each own sample whether its call was the audit's.

    Where the warm-ups are over TURNS_FROM apart, the faster side takes as many timed calls a turn as it
    takes to match one of the slower's (`calls_per_pair`), so the two halves of a pair span about the same time: a
    pair of hoconv2d's 2 ms kernel and its 60 ms py backward would otherwise put 2 ms next to 60 ms of
    whatever the machine did, and the kernel would get a sample per 60 ms. Its series is then that many
    times as long as the other's (`pair_ratios` takes each turn's median).

    Each side is judged by `policy` on its own samples and on the pair's shared wall clock, and sampling
    goes on until both are done. When the warm-ups are more than PAIRS_UP_TO times apart (`far_apart`), the
    own call is sampled alone and the partner's measurement is None."""
    with collector_off():
        began = elapsed()
        warm = warm_up(setup, clock, policy, elapsed)
        partner_warm = warm_up(partner, partner_clock, policy, elapsed)
        if far_apart(warm, partner_warm):
            return sample(setup, clock, policy, elapsed, between, probe).measurement(warm, elapsed() - began), None
        own, other = Sampler(policy, watch_of(clock), probe), Sampler(policy, watch_of(partner_clock))
        calls, partner_calls = calls_per_pair(warm, partner_warm)
        _alternate([(setup, clock, own, calls, (primer or setup) if primed(warm) else None),
                    (partner, partner_clock, other, partner_calls, partner if primed(partner_warm) else None)],
                   elapsed, between)
    wall = elapsed() - began
    return own.measurement(warm, wall), other.measurement(partner_warm, wall)


def _alternate(sides: list[Side], elapsed: Callable[[], float], between: Callable[[], None]) -> None:
    """Turns of each side, in the order A B, B A, ..., until both samplers stop; before them, an opening turn of
    untimed calls of each side that has such a call (`opening`)."""
    opening(sides)
    start = elapsed()
    while not all(side[2].stop for side in sides):
        for side_setup, side_clock, sampler, turn, prime in sides:
            if prime is not None:
                prime()()
            for _ in range(turn):
                sampler.add(side_clock.time(side_setup()))
                between()
        spent = elapsed() - start
        for side in sides:
            side[2].judge(spent)
        sides.reverse()


def opening(sides: Sequence[Side]) -> None:
    """A turn of untimed calls of each side that begins its turns with one (`primed`), before the timed turns:
    the first timed turn would follow the other side's whole warm-up, where the next follow one turn of it. Over
    two quick CPU sweeps on the 2-core VM, the first turn of a primed own side read a median 1.16x the rest of its
    calls (1.2x or more in 47% of 129 passes); timed alone, a pass's first calls read 1.01-1.03x. With the
    opening turn, 1.09x (29% of 61 passes) in the next sweep: its first call read 0.91x, the one after the first
    making of unseen data (a probe, fresh.py) 1.23x, and the turns after it settled by the third."""
    for _, _, _, turn, prime in sides:
        for _ in range(turn + 1 if prime is not None else 0):
            prime()()


def primed(warm: Sequence[float]) -> bool:
    """A side's turns begin with an untimed call unless its warm-up median is PRIMED_UP_TO or longer."""
    return not warm or float(np.median(warm)) < PRIMED_UP_TO


def calls_per_pair(own: Sequence[float], partner: Sequence[float]) -> tuple[int, int]:
    """Timed calls per turn (own, partner): for warm-up medians more than TURNS_FROM apart, the faster's
    into the slower's, rounded, and one for the slower; else, or where a warm-up is missing, (1, 1)."""
    if not own or not partner:
        return 1, 1
    a, b = float(np.median(own)), float(np.median(partner))
    if min(a, b) <= 0 or max(a, b) / min(a, b) <= TURNS_FROM:
        return 1, 1
    return (max(1, round(b / a)), 1) if a <= b else (1, max(1, round(a / b)))


def paired_stats(own: Sequence[float], partner: Sequence[float], own_aside: Sequence[bool] = (),
                 partner_aside: Sequence[bool] = ()) -> dict[str, float]:
    """How many times faster `own` is than `partner`, from samples taken in pairs: the median of the
    pairs' own ratios (partner / own, `pair_ratios`) and its interval (`ratio_stats`)."""
    return ratio_stats(*pair_ratios(own, partner, own_aside, partner_aside))


def ratio_stats(ratios: np.ndarray, clean: np.ndarray) -> dict[str, float]:
    """The median of the clean pairs' ratios (of all of them where none is clean) and its interval
    (`block_interval`); fewer than CI_MIN_SAMPLES pairs give no interval (None): one pair's "interval" read
    as 0.29x +-0.0%."""
    ratios = ratios[clean] if clean.any() else ratios
    lo, hi = block_interval(ratios) if ratios.size >= CI_MIN_SAMPLES else (None, None)
    return {"paired_speedup": float(np.median(ratios)), "paired_ci_lo": lo, "paired_ci_hi": hi}


def far_apart(own: Sequence[float], partner: Sequence[float]) -> bool:
    """The two warm-ups' medians more than PAIRS_UP_TO times apart, either way (no warm-up: not known)."""
    if not own or not partner:
        return False
    a, b = float(np.median(own)), float(np.median(partner))
    return min(a, b) <= 0 or max(a, b) / min(a, b) > PAIRS_UP_TO

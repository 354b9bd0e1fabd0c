"""Interleaved rounds: a sweep measured in N short passes over all its cells instead of one long one.

A shared or throttling machine changes speed over minutes. Measured one after the other, two
implementations of the same cell can land in different phases, and their ratio moves by 10-20%. In
rounds, each round gives every cell 1/N of its time budget and goes through the whole sweep, so each
implementation is sampled at N moments spread over the run. The rounds' samples are pooled into one
row per cell and pass (measure/result.py's PassResult.merge, measure/pooling.py); `round_spread`
(slowest round's median over the fastest's, minus 1) says how much the machine moved meanwhile, and
rounds that disagree by more than pooling.MODES_APART give both modes.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

from benchctl.measure.result import PassResult, Results
from benchctl.measure.timing import Policy


ROUND_SAMPLES = 2  # the fewest samples a round takes of a pass, however many rounds share the policy


def per_round(policy: Policy, rounds: int) -> Policy:
    """One round's share of `policy`: its times and sample counts divided by `rounds`."""
    if rounds == 1:
        return policy
    return replace(policy, min_time=policy.min_time / rounds, max_time=policy.max_time / rounds,
                   min_samples=max(ROUND_SAMPLES, math.ceil(policy.min_samples / rounds)),
                   max_samples=max(ROUND_SAMPLES, math.ceil(policy.max_samples / rounds)))


def most_rounds(policy: Policy) -> int:
    """The most rounds `policy` can be shared among: past them, their ROUND_SAMPLES each pass more than its
    max_samples in all (and a sweep of many more would never end)."""
    return max(1, policy.max_samples // ROUND_SAMPLES)


def all_ok(results: Results) -> bool:
    return all(r.ok for r in results)


def merge(rounds: Sequence[Results]) -> Results:
    """One result per pass from one cell's results of each round (in round order)."""
    by_pass: dict[str, Results] = {}
    for results in rounds:
        for result in results:
            by_pass.setdefault(result.pass_, []).append(result)
    return [PassResult.merge(each) for each in by_pass.values()]

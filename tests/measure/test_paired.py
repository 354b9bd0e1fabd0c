"""Paired timing with fake clocks: the alternation, the untimed call before each timed one, both sides
sampled to the slower one's stop, and a speedup that a machine changing speed does not move."""

import itertools

import numpy as np

import pytest

from benchctl.measure.paired import (PAIRS_UP_TO, PRIMED_UP_TO, calls_per_pair, far_apart, measure_paired,
                                     paired_stats, primed)
from benchctl.measure.stats import median_ci
from benchctl.measure.timing import Policy, measure
from benchctl.vocab import Stop


def ticks():
    """A wall clock a microsecond further on each reading."""
    return itertools.count(0.0, 1e-6).__next__


class Machine:
    """Every call costs its own time times the machine's speed factor, which triples after `fast_calls`
    calls (a neighbour arrives); `order` logs which call ran."""

    def __init__(self, fast_calls: int):
        self.fast_calls, self.calls, self.order = fast_calls, 0, []

    def clock(self, name: str, cost_s: float):
        machine = self

        class Clock:
            def time(self, thunk) -> float:
                thunk()
                machine.calls += 1
                machine.order.append(name)
                return cost_s * (1.0 if machine.calls <= machine.fast_calls else 3.0)

        return Clock()


PAIRED = Policy(warmup=0, min_samples=20, max_samples=20, min_time=0.0, max_time=1e9, ci_target=0)


def test_paired_sampling_alternates_and_its_ratio_ignores_a_machine_that_slows_down():
    machine = Machine(fast_calls=20)
    own, partner = measure_paired(lambda: lambda: None, lambda: lambda: None, machine.clock("own", 1e-3),
                                  machine.clock("partner", 2e-3), PAIRED, elapsed=ticks())
    assert machine.order[:8] == ["own", "partner", "partner", "own", "own", "partner", "partner", "own"]
    assert len(own.samples) == len(partner.samples) == 20 and own.stop == partner.stop == Stop.MAX_SAMPLES
    paired = paired_stats(own.samples, partner.samples)
    assert paired["paired_speedup"] == pytest.approx(2.0)
    assert paired["paired_ci_lo"] == pytest.approx(2.0) and paired["paired_ci_hi"] == pytest.approx(2.0)
    # The same two calls measured one after the other straddle the slow-down: 6x instead of 2x.
    machine = Machine(fast_calls=20)
    alone = measure(lambda: lambda: None, machine.clock("own", 1e-3), PAIRED, elapsed=ticks())
    after = measure(lambda: lambda: None, machine.clock("partner", 2e-3), PAIRED, elapsed=ticks())
    assert after.median / alone.median == pytest.approx(6.0)


def logged_turns(primer: str | None = None) -> list[str]:
    """The calls of a paired measurement, by side ("primer": the own side's untimed calls, where given)."""
    calls = []

    def setup(name):
        return lambda: lambda: calls.append(name)

    machine = Machine(fast_calls=10**6)
    measure_paired(setup("own"), setup("partner"), machine.clock("own", 1e-3), machine.clock("partner", 2e-3),
                   PAIRED, elapsed=ticks(), primer=setup(primer) if primer else None)
    assert machine.calls == 2 * 20  # half of them untimed
    return calls


def test_each_paired_sample_follows_an_untimed_call_of_its_own_after_an_untimed_opening_turn():
    calls = logged_turns()
    assert calls[:4] == ["own", "own", "partner", "partner"]  # the opening turn: its call and its untimed one
    assert calls[4:12] == ["own", "own", "partner", "partner", "partner", "partner", "own", "own"]
    assert len(calls) == 4 * 20 + 4


def test_the_own_sides_untimed_calls_take_their_thunks_from_the_primer_where_one_is_given():
    calls = logged_turns("primer")
    assert calls[:12] == ["primer", "primer", "partner", "partner",
                          "primer", "own", "partner", "partner", "partner", "partner", "primer", "own"]
    assert calls.count("primer") == 22 and calls.count("own") == 20


def test_paired_sampling_goes_on_until_both_sides_are_done_and_keeps_the_pairs_whole():
    machine = Machine(fast_calls=10**6)
    policy = Policy(warmup=0, min_samples=2, max_samples=1000, min_time=30 / 1024, max_time=1e9, ci_target=0,
                    stable_window=10**6)
    own, partner = measure_paired(lambda: lambda: None, lambda: lambda: None, machine.clock("own", 1 / 1024),
                                  machine.clock("partner", 3 / 1024), policy, elapsed=ticks())
    # own needs 30 samples for its min_time, the partner 10: both get 30, the partner stopping first.
    assert len(own.samples) == len(partner.samples) == 30
    assert own.stop == partner.stop == Stop.MIN_TIME


def test_paired_stats_divide_the_pairs_not_the_medians():
    stats = paired_stats([1.0, 2.0, 4.0] * 2, [3.0, 6.0, 12.0] * 2)
    assert stats["paired_speedup"] == 3.0 and stats["paired_ci_lo"] == stats["paired_ci_hi"] == 3.0


def test_too_few_pairs_give_a_speedup_but_no_interval():
    """naflex_posembed's gridsample at B=32, a 0.33 ms call paired with a 96 ms loop: one pair, whose
    "interval" read 0.29x +-0.0%."""
    one = paired_stats([0.334], [0.0967])
    assert one["paired_speedup"] == pytest.approx(0.2895, abs=1e-4)
    assert one["paired_ci_lo"] is None and one["paired_ci_hi"] is None
    assert paired_stats([1.0] * 5, [2.0] * 5)["paired_ci_lo"] is None  # a 95% interval of a median takes 6
    assert paired_stats([1.0] * 6, [2.0] * 6)["paired_ci_lo"] == 2.0


def test_a_pair_with_either_side_set_aside_is_left_out_unless_that_leaves_none():
    own, partner = [1.0, 1.0, 1.0, 1.0], [2.0, 9.0, 2.0, 7.0]  # pairs 2 and 4: one side stalled
    assert paired_stats(own, partner)["paired_speedup"] == 4.5
    assert paired_stats(own, partner, [False, True, False, False], [False, False, False, True])["paired_speedup"] == 2.0
    assert paired_stats(own, partner, [], [False, True, False, True])["paired_speedup"] == 2.0  # own side unwatched
    assert paired_stats(own, partner, [True] * 4)["paired_speedup"] == 4.5  # none left: all of them


def test_calls_far_apart_in_their_warm_up_are_not_paired_and_the_own_is_sampled_alone():
    machine = Machine(fast_calls=10**6)
    policy = Policy(warmup=3, warmup_min_time=0.0, warmup_time=1e9, min_samples=20, max_samples=20, min_time=0.0,
                    max_time=1e9, ci_target=0)
    own, partner = measure_paired(lambda: lambda: None, lambda: lambda: None, machine.clock("own", 1e-3),
                                  machine.clock("partner", 1e-3 * PAIRS_UP_TO * 2), policy, elapsed=ticks())
    assert partner is None and machine.order == ["own"] * 3 + ["partner"] * 3 + ["own"] * 20
    assert len(own.warmup_s) == 3 and len(own.samples) == 20 and own.median == pytest.approx(1e-3)


def test_far_apart_compares_the_warm_up_medians_either_way():
    assert far_apart([1.0, 1.0, 9.0], [PAIRS_UP_TO * 1.1]) and far_apart([PAIRS_UP_TO * 1.1], [1.0])
    assert not far_apart([1.0], [PAIRS_UP_TO * 0.9]) and not far_apart([], [1.0])


def test_the_paired_interval_spans_a_ratio_that_drifted_while_the_pairs_were_taken():
    own = [1.0] * 300
    partner = list(np.linspace(2.0, 2.2, 300))  # the machine's state moved the ratio 10% over the cell
    stats = paired_stats(own, partner)
    assert stats["paired_speedup"] == pytest.approx(2.1, abs=1e-3)
    first, last = np.median(partner[:50]), np.median(partner[-50:])
    assert stats["paired_ci_lo"] == pytest.approx(first) and stats["paired_ci_hi"] == pytest.approx(last)
    iid_lo, iid_hi = median_ci(np.asarray(partner))  # the pairs taken as independent draws: +-0.6%
    assert iid_hi - iid_lo < 0.2 * (last - first)


def test_calls_far_apart_pair_a_turn_of_the_faster_with_one_call_of_the_slower():
    machine = Machine(fast_calls=60)  # a neighbour triples every call's time from call 61 on
    policy = Policy(warmup=3, warmup_min_time=0.0, warmup_time=1e9, min_samples=10, max_samples=10, min_time=0.0,
                    max_time=1e9, ci_target=0)
    own, partner = measure_paired(lambda: lambda: None, lambda: lambda: None, machine.clock("own", 1e-3),
                                  machine.clock("partner", 20e-3), policy, elapsed=ticks())
    assert machine.order[6:6 + 22] == ["own"] * 20 + ["partner"] * 2  # a turn of 20, then the partner's
    assert len(partner.samples) == 10 and len(own.samples) == 20 * 10
    assert paired_stats(own.samples, partner.samples)["paired_speedup"] == pytest.approx(20.0)


def test_calls_per_pair_gives_the_faster_side_the_slower_s_time_in_calls():
    assert calls_per_pair([1.0, 1.0, 5.0], [20.0]) == (20, 1) and calls_per_pair([30.0], [2.0]) == (1, 15)
    assert calls_per_pair([1.0], [9.0]) == (1, 1) and calls_per_pair([], [50.0]) == (1, 1)  # one to one


def test_a_side_whose_call_takes_ten_ms_or_more_begins_its_turns_without_the_untimed_call():
    calls = []

    def setup(name):
        return lambda: lambda: calls.append(name)

    machine = Machine(fast_calls=10**6)
    policy = Policy(warmup=2, warmup_min_time=0.0, min_samples=20, max_samples=20, min_time=0.0, max_time=1e9,
                    ci_target=0)
    own, partner = measure_paired(setup("own"), setup("partner"), machine.clock("own", 4e-3),
                                  machine.clock("partner", PRIMED_UP_TO), policy, elapsed=ticks())
    assert calls[4:6] == ["own", "own"]  # after the two warm-ups, the opening turn: the partner unprimed has none
    turns = calls[6:]
    assert turns[:9] == ["own", "own", "partner", "partner", "own", "own", "own", "own", "partner"]  # partner unprimed
    assert turns.count("partner") == 20 and turns.count("own") == 40 and len(partner.samples) == 20
    assert primed([9.9e-3]) and not primed([PRIMED_UP_TO]) and primed([])

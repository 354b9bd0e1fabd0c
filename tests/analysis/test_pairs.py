"""What timed pairs say: each pair's ratio, the interval of their median, and a cell's change between two
runs against its partner, with exact rank statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from benchctl.analysis.pairs import (COMPARE_BLOCKS, PAIRS_PER_BLOCK, block_interval, block_medians, pair_ratios,
                                     process_spread, relative_change, shift_interval, u_counts)


def test_block_interval_bounds_the_blocks_medians():
    assert block_interval(np.array([1.0, 5.0, 2.0, 4.0, 3.0, 6.0])) == (1.0, 6.0)
    assert block_interval(np.arange(12.0)) == (0.5, 10.5)


def test_pair_ratios_take_each_turn_s_median_of_its_clean_samples():
    own = [1.0, 1.0, 1.0, 2.0, 2.0, 9.0]  # three calls a turn; the 9.0 a stall its watch set aside
    ratios, clean = pair_ratios(own, [3.0, 8.0], [False] * 5 + [True])
    assert list(ratios) == [3.0, 4.0] and list(clean) == [True, True]
    ratios, clean = pair_ratios(own, [3.0, 8.0], [False] * 3 + [True] * 3)  # a whole turn set aside
    assert list(ratios) == [3.0, 4.0] and list(clean) == [True, False]


@pytest.mark.parametrize("calls", [1, 2, 3, 4, 7])
def test_pair_ratios_are_each_turn_s_numpy_median_of_its_clean_samples_or_all_where_none_is(calls):
    rng = np.random.default_rng(calls)
    pairs = 50
    own, partner = rng.lognormal(size=pairs * calls), rng.lognormal(size=pairs)
    aside = rng.random(pairs * calls) < 0.4
    aside[:calls] = True  # the first turn wholly set aside
    ratios, clean = pair_ratios(list(own), list(partner), list(aside))
    turns, flags = own.reshape(pairs, calls), aside.reshape(pairs, calls)
    expected = [np.median(t[~f]) if (~f).any() else np.median(t) for t, f in zip(turns, flags)]
    assert np.array_equal(ratios, partner / np.array(expected))
    assert list(clean) == [bool((~f).any()) for f in flags] and not all(clean) and any(clean)


def test_u_counts_are_the_exact_null_distribution_scipy_tests_against():
    counts = u_counts(6, 6)
    assert sum(counts) == math.comb(12, 6) and len(counts) == 37 and counts == counts[::-1]
    # U = 5: of the first values only 10 is above any of the second's (5 of them); scipy's exact p is P(U <= 5)
    first, second = [0, 1, 2, 3, 4, 10], [5, 6, 7, 8, 9, 11]
    p = mannwhitneyu(first, second, alternative="less", method="exact").pvalue
    assert sum(counts[:6]) / sum(counts) == pytest.approx(p) == pytest.approx(19 / 924)


@pytest.mark.parametrize("m, k", [(6, 6), (12, 38)])
def test_the_shift_interval_stops_where_the_tables_of_u_put_the_95_percent_bounds(m, k):
    """The tables' two-sided 5% critical U: 5 for six values a side, 37 for twelve; the interval runs from
    the difference one past it to the one as far from the top."""
    base = np.arange(m, dtype=float)
    new = base * 1.01 + 100  # every difference distinct
    differences = np.sort(np.subtract.outer(new, base).ravel())
    assert shift_interval(base, new) == (differences[k - 1], differences[-k])


def test_too_few_values_for_any_bound_leave_the_whole_line():
    assert shift_interval(np.array([1.0, 2.0]), np.array([3.0])) == (-math.inf, math.inf)


def paired(speedup: float, seed: int, slower: float = 1.0, n: int = 60, partner: str = "py") -> dict:
    """A cell timed in alternation with `partner`, `speedup` times faster than it, on a machine whose speed
    swings by 40% while the pairs are taken and runs `slower` times slower throughout; its two worker
    processes' paired speedups 2% apart."""
    rng = np.random.default_rng(seed)
    swing = slower * (1 + 0.4 * np.sin(np.arange(n) / 4))
    partner_samples = 10e-3 * swing * rng.lognormal(0, 0.03, n)
    own = partner_samples / speedup * rng.lognormal(0, 0.02, n)
    speedup_of = float(np.median(partner_samples / own))
    return {"samples_s": list(own), "partner_samples_s": list(partner_samples), "paired_with": partner,
            "paired_speedup": speedup_of, "process_paired_speedups": [speedup_of * 0.99, speedup_of * 1.01]}


def test_a_cell_that_took_twenty_percent_longer_against_its_partner_changed_by_that_whatever_the_machine_did():
    change = relative_change(paired(2.0, 1), paired(2.0 / 1.2, 2, slower=1.5))
    assert change.partner == "py" and change.ratio == pytest.approx(1.2, rel=0.02)
    assert 1.1 < change.low < 1.2 < change.high < 1.3
    assert change.p_value == pytest.approx(2 / math.comb(2 * COMPARE_BLOCKS, COMPARE_BLOCKS))  # every block apart
    assert change.spread == pytest.approx(1.01 / 0.99 - 1)


def test_the_spread_between_processes_is_the_wider_side_s_and_none_where_a_side_had_one_process():
    assert process_spread({"process_paired_speedups": [2.0, 2.5, 2.2]}) == pytest.approx(0.25)
    assert process_spread({"process_paired_speedups": [2.0]}) is None and process_spread({}) is None
    wide = {**paired(2.0, 2), "process_paired_speedups": [1.8, 2.16]}
    assert relative_change(paired(2.0, 1), wide).spread == pytest.approx(0.2)
    assert relative_change(paired(2.0, 1), {**wide, "process_paired_speedups": None}).spread is None


def test_the_same_cell_on_a_machine_half_as_fast_again_did_not_change_against_its_partner():
    change = relative_change(paired(2.0, 1), paired(2.0, 2, slower=1.5))
    assert change.ratio == pytest.approx(1.0, abs=0.02) and 0.97 < change.low < 1.0 < change.high < 1.03
    assert change.p_value > 0.05


def test_a_change_against_a_partner_needs_the_same_partner_and_enough_clean_pairs_in_both_rows():
    assert relative_change(paired(2.0, 1), paired(2.0, 2, partner="cpp")) is None
    assert relative_change({"samples_s": [1e-3] * 60}, paired(2.0, 2)) is None
    few = COMPARE_BLOCKS * PAIRS_PER_BLOCK - 1
    assert relative_change(paired(2.0, 1, n=few), paired(2.0, 2)) is None
    assert block_medians(paired(2.0, 1, n=few + 1)).shape == (COMPARE_BLOCKS,)


def test_the_pairs_a_watch_set_aside_are_left_out_of_the_blocks():
    row = paired(2.0, 1, n=48)
    row["samples_s"][0] = 1.0  # a stall of a second, set aside
    row["disturbed"] = [True] + [False] * 47
    medians = block_medians(row)
    assert medians.shape == (COMPARE_BLOCKS,) and medians.max() < 0.6

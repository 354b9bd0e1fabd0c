"""A speedup between two rows: the medians' ratio, the rounds' own ratios, the paired one, how far each moves,
and the marks that say it does not hold."""

import pytest

from benchctl.analysis.pairs import partner_median
from benchctl.analysis.speedup import (partner_apart, range_label, speedup, speedup_label, speedup_range,
                                      speedup_text)


def test_a_large_slowdown_never_reads_zero():
    assert speedup_text(4.04) == "4.0x" and speedup_text(0.96) == "0.96x" and speedup_text(0.0329) == "0.033x"


def test_a_speedup_measured_in_rounds_is_the_median_of_the_rounds_own_ratios():
    # The machine slowed after round 1: py's pooled median came from its fast rounds, cpp's from its slow
    # ones, so the medians' ratio (0.40 / 0.25 = 1.6x) pairs two different machines.
    py = {"median_s": 0.40, "round_medians_s": [0.40, 0.40, 0.55]}
    cpp = {"median_s": 0.25, "round_medians_s": [0.19, 0.25, 0.25]}
    assert speedup(py, cpp) == pytest.approx(0.40 / 0.19)  # rounds: 2.11x, 1.6x, 2.2x
    assert speedup({**py, "round_medians_s": None}, cpp) == pytest.approx(1.6)  # one round: the medians
    assert speedup(py, {**cpp, "round_medians_s": [0.19, 0.25]}) == pytest.approx(1.6)  # rounds that do not pair
    assert speedup({**py, "round_medians_s": float("nan")}, cpp) == pytest.approx(1.6)  # a column parquet left empty
    stalled = [0.40, float("nan"), 0.55]  # round 2: every sample set aside, no median
    assert speedup({**py, "round_medians_s": stalled}, cpp) == pytest.approx((0.40 / 0.19 + 0.55 / 0.25) / 2)
    assert speedup_range({**py, "round_medians_s": stalled}, cpp) == pytest.approx((0.40 / 0.19, 0.55 / 0.25))
    alone = [float("nan"), float("nan"), 0.55]  # one round both gave a median: the medians' ratio
    assert speedup({**py, "round_medians_s": alone}, cpp) == pytest.approx(1.6)


def test_a_speedup_timed_in_alternation_with_the_baseline_is_the_pairs_median_ratio():
    py = {"impl": "py", "median_s": 0.40, "round_medians_s": [0.40, 0.40, 0.55]}
    cpp = {"impl": "cpp", "median_s": 0.25, "round_medians_s": [0.19, 0.25, 0.25], "paired_with": "py",
           "paired_speedup": 1.9}
    assert speedup(py, cpp) == pytest.approx(1.9)
    assert speedup({**py, "impl": "loop"}, cpp) == pytest.approx(0.40 / 0.19)  # paired with another
    assert speedup(py, {**cpp, "paired_speedup": float("nan")}) == pytest.approx(0.40 / 0.19)  # left empty


def test_a_paired_speedup_reads_with_the_half_width_of_its_interval():
    py = {"impl": "py", "median_s": 0.40}
    cpp = {"impl": "cpp", "median_s": 0.20, "paired_with": "py", "paired_speedup": 2.04, "paired_ci_lo": 2.03,
           "paired_ci_hi": 2.0502}
    assert speedup_label(py, cpp) == "2.04x ±0.5%"
    assert speedup_label(py, {**cpp, "paired_with": None}) == "2.0x"  # the medians' ratio, no interval
    few = {**cpp, "paired_ci_lo": None, "paired_ci_hi": float("nan")}  # too few pairs for an interval
    assert speedup_label(py, few) == "2.04x" and range_label(py, few) == "2.04x" and speedup_range(py, few) is None
    far = {**cpp, "paired_speedup": 0.0039, "paired_ci_lo": 0.0038, "paired_ci_hi": 0.0040}  # 256x slower
    assert speedup_label(py, far) == "0.0039x ±2.6%"


def test_a_lopsided_paired_interval_reads_as_its_two_ends():
    """py had a slow mode in six of its 17 pairs with cpp: the pairs put the speedup at 1.45-15.9, which a half
    width of 969% would read as reaching below zero."""
    py = {"impl": "py", "median_s": 0.0112}
    cpp = {"impl": "cpp", "median_s": 0.0075, "paired_with": "py", "paired_speedup": 1.4845, "paired_ci_lo": 1.4468,
           "paired_ci_hi": 15.864}
    assert speedup_label(py, cpp) == "1.48x ±(1.45-15.86)" and range_label(py, cpp) == "1.48x ±(1.45-15.86)"
    assert speedup_label(py, {**cpp, "paired_ci_hi": 1.60}) == "1.48x ±7.8%"  # 2.6% below, 7.8% above: narrow
    assert speedup_label(py, {**cpp, "paired_ci_lo": 1.10, "paired_ci_hi": 1.90}) == "1.48x ±28.0%"  # even


def test_a_speedup_moves_as_far_as_its_rounds_ratios_or_its_paired_interval():
    py = {"impl": "py", "median_s": 0.40, "round_medians_s": [0.40, 0.40, 0.55]}
    cpp = {"impl": "cpp", "median_s": 0.25, "round_medians_s": [0.19, 0.25, 0.25]}
    assert speedup_range(py, cpp) == pytest.approx((1.6, 2.2))  # rounds: 2.11x, 1.6x, 2.2x
    assert range_label(py, cpp) == "2.11x (1.60-2.20)"
    assert speedup_label(py, cpp) == "2.1x"  # every round says cpp is faster: no mark
    one_round = {**cpp, "round_medians_s": None}
    assert speedup_range(py, one_round) is None and range_label(py, one_round) == "1.60x"
    assert range_label(py, py) == "1.00x"  # the baseline itself
    paired = {**cpp, "paired_with": "py", "paired_speedup": 2.04, "paired_ci_lo": 2.03, "paired_ci_hi": 2.0502}
    assert speedup_range(py, paired) == (2.03, 2.0502) and range_label(py, paired) == "2.04x ±0.5%"


def test_a_speedup_whose_rounds_disagree_on_which_is_faster_is_marked():
    py = {"impl": "py", "median_s": 0.30, "round_medians_s": [0.30, 0.30, 0.30]}
    cpp = {"impl": "cpp", "median_s": 0.29, "round_medians_s": [0.27, 0.29, 0.32]}  # 1.11x, 1.03x, 0.94x
    assert speedup_label(py, cpp) == "1.0x?"
    assert range_label(py, cpp) == "1.03x (0.94-1.11)"
    tiny = {**cpp, "median_s": 0.003, "round_medians_s": [0.0029, 0.003, 0.0031]}
    assert range_label(py, tiny) == "100x (96.77-103)"  # three significant digits from 100


def test_a_speedup_against_a_disturbed_row_is_marked_as_not_holding():
    py = {"impl": "py", "median_s": 7.8e-3, "stop": "disturbed"}  # every round stalled: no range to show it
    cpp = {"impl": "cpp", "median_s": 3.2e-5, "stop": "converged"}
    assert speedup_label(py, cpp) == "243.8x?" and range_label(py, cpp) == "244x?"
    assert speedup_label(cpp, py) == "0.0041x?"  # the disturbed side measured against a clean baseline
    assert range_label(py, {**cpp, "round_medians_s": [3.2e-5] * 3}) == "244x?"
    assert speedup_label({**py, "stop": "converged"}, cpp) == "243.8x"  # both clean: no mark


def test_an_unpaired_speedup_with_one_side_alone_timed_beside_other_work_is_marked_as_not_holding():
    py = {"impl": "py", "median_s": 1.2e-4, "other_cores": 1.0}  # a neighbour came for py's cell only
    cpp = {"impl": "cpp", "median_s": 5e-5, "other_cores": 0.02}
    assert speedup_label(py, cpp) == "2.4x?" and range_label(py, cpp) == "2.40x?"
    assert speedup_label(py, {**cpp, "other_cores": 0.9}) == "2.4x"  # both beside it: a shared neighbour
    paired = {**cpp, "paired_with": "py", "paired_speedup": 2.1, "paired_ci_lo": 2.0, "paired_ci_hi": 2.2}
    assert speedup_label(py, paired) == "2.10x ±4.8%"  # its pairs shared whatever py's own row met


def test_a_paired_speedup_whose_partner_read_far_from_its_own_row_is_marked():
    # lstm_cell's py forward at 16 in one quick sweep: 0.085 ms in its own row, 0.16 ms beside cpp
    py = {"impl": "py", "median_s": 0.085e-3}
    beside = [0.16e-3] * 9 + [3e-3]  # the last sample set aside by the watch
    cpp = {"impl": "cpp", "median_s": 0.0668e-3, "paired_with": "py", "paired_speedup": 2.32, "paired_ci_lo": 2.30,
           "paired_ci_hi": 2.34, "partner_samples_s": beside, "partner_disturbed": [False] * 9 + [True]}
    assert partner_median(cpp) == pytest.approx(0.16e-3)
    assert partner_apart(py, cpp) and speedup_label(py, cpp) == "2.32x ±0.9%≠"
    assert partner_apart({**py, "median_s": 0.2e-3}, cpp) is False  # 0.16 against 0.2: within 25%
    assert partner_apart({**py, "median_s": 0.21e-3}, cpp) is True  # 0.16 against 0.21: 1.31x apart
    assert partner_apart({**py, "impl": "jit"}, cpp) is False  # paired with another implementation
    assert partner_apart(py, {**cpp, "partner_samples_s": None}) is False  # a row from before the samples
    assert partner_median({"impl": "py", "median_s": 0.085e-3}) is None


def test_a_paired_speedup_that_the_earlier_runs_read_outside_its_interval_is_marked():
    # lstm_cell's cpp forward at 256 in the README's main job: 2.05x at speed, 2.96-3.08x in four runs before
    py = {"impl": "py", "median_s": 0.261e-3}
    cpp = {"impl": "cpp", "median_s": 0.130e-3, "paired_with": "py", "paired_speedup": 2.05, "paired_ci_lo": 2.04,
           "paired_ci_hi": 2.06}
    assert speedup_label(py, {**cpp, "earlier_speedups": (3.0, 2.96)}) == "2.05x ±0.5%↻"
    assert speedup_label(py, {**cpp, "earlier_speedups": (2.045, 2.06)}) == "2.05x ±0.5%"  # inside
    assert speedup_label(py, {**cpp, "earlier_speedups": (3.0, 2.05, 2.05)}) == "2.05x ±0.5%"  # the median inside
    assert speedup_label(py, {**cpp, "earlier_speedups": ()}) == "2.05x ±0.5%"
    assert speedup_label(py, {**cpp, "paired_ci_lo": None, "earlier_speedups": (3.0,)}) == "2.05x"  # no interval

"""compare on cells timed in alternation with a partner in both runs: judged by their time against the
partner where the machine moved their own times, never against a partner that changed itself."""

from __future__ import annotations

import pytest

from benchctl.analysis import compare
from benchctl.analysis.verdict import DISAGREE, PAIRED_EFFECT, PHASES, relative_verdict, with_pairs
from benchctl.vocab import Verdict
from tests.analysis.test_compare import frame, row, timed
from tests.analysis.test_pairs import paired


def cell(speedup: float, seed: int, slower: float = 1.0, canary_s: float = 300e-6, **facts) -> dict:
    """cpp, timed beside py, in one process: its own times alone can only be `unsure` below 2x."""
    return row(impl="cpp", canary_s=canary_s, processes=None, process_spread=None,
               **{**paired(speedup, seed, slower), "samples": None, **facts})


def sides(base: dict, new: dict, partner_slower: float = 1.0, **options) -> compare.Comparison:
    """The two runs, each with py's own row (timed alone) beside the cpp cell."""
    py = lambda slower, seed: row(impl="py", samples=timed(10e-3 * slower, seed))  # noqa: E731
    return compare.compare(frame([as_timed(base), py(1.0, 5)]), frame([as_timed(new), py(partner_slower, 6)]),
                           **options)


def as_timed(r: dict) -> dict:
    samples = r["samples_s"]
    return {**r, "median_s": sorted(samples)[len(samples) // 2], "n": len(samples)}


def cpp(result: compare.Comparison) -> compare.CellChange:
    return next(c for c in result.cells if c.impl == "cpp")


def test_a_planted_twenty_percent_is_found_by_the_pairs_on_a_machine_that_ran_slower():
    """NEW's machine ran 1.3x slower (its canary too) and cpp took 1.2x longer against py: its own times
    (1.56x, one process, the canary moved) cannot say; its pairs can."""
    found = cpp(sides(cell(2.0, 1), cell(2.0 / 1.2, 2, slower=1.3, canary_s=390e-6)))
    assert (found.verdict, found.reason, found.by_pairs, found.partner) == (Verdict.SLOWER, None, True, "py")
    assert found.ratio == pytest.approx(1.56, rel=0.05) and found.relative == pytest.approx(1.2, rel=0.02)
    assert found.relative_p < 1e-5 and 1.1 < found.relative_low < 1.2 < found.relative_high


def test_an_a_a_pair_on_a_machine_that_ran_slower_is_the_same_by_the_pairs():
    same = cpp(sides(cell(2.0, 1), cell(2.0, 2, slower=1.3, canary_s=390e-6)))
    assert (same.verdict, same.by_pairs) == (Verdict.SAME, True) and same.relative == pytest.approx(1.0, abs=0.02)


def test_a_planted_twenty_percent_measured_in_one_process_a_side_is_left_unsure():
    one = {"process_paired_speedups": None}
    found = cpp(sides({**cell(2.0, 1), **one}, {**cell(2.0 / 1.2, 2, slower=1.3, canary_s=390e-6), **one}))
    assert (found.verdict, found.by_pairs) == (Verdict.UNSURE, False) and found.relative_spread is None
    assert found.relative == pytest.approx(1.2, rel=0.02)  # shown, not judged


def test_pairs_do_not_speak_for_a_partner_that_changed_or_a_machine_that_changed_past_them():
    """py itself took 1.2x longer in NEW (judged so from its own three processes): cpp's time against it
    says nothing of cpp. A canary 1.6x apart is past what pairs were seen to hold."""
    changed = cpp(sides(cell(2.0, 1), cell(2.0 / 1.2, 2), partner_slower=1.2))
    assert changed.verdict == Verdict.UNSURE and not changed.by_pairs and changed.relative is not None
    far = cpp(sides(cell(2.0, 1), cell(2.0 / 1.2, 2, slower=1.6, canary_s=480e-6)))
    assert far.verdict == Verdict.UNSURE and not far.by_pairs


def test_the_pairs_verdict_needs_their_interval_past_the_paired_effect_and_within_the_minimum_effect_for_same():
    past, spread = 1 + PAIRED_EFFECT, 0.02
    assert relative_verdict((past + 0.01, past + 0.1), 1e-6, past + 0.05, spread, 0.05, 0.05) == Verdict.SLOWER
    assert relative_verdict((0.75, 0.84), 1e-6, 0.8, spread, 0.05, 0.05) == Verdict.FASTER  # 1.19x faster and more
    assert relative_verdict((1.06, 1.14), 1e-6, 1.1, spread, 0.05, 0.05) == Verdict.UNSURE  # not past 15%
    assert relative_verdict((0.97, 1.03), 0.5, 1.0, spread, 0.05, 0.05) == Verdict.SAME
    assert relative_verdict((0.96, 1.06), 0.5, 1.0, spread, 0.05, 0.05) == Verdict.UNSURE
    assert relative_verdict((1.16, 1.25), 0.2, 1.2, spread, 0.05, 0.05) == Verdict.UNSURE  # not significant


def test_the_pairs_say_nothing_of_a_side_measured_in_one_process_nor_within_the_spread_between_processes():
    """Two one-process quick runs moved speedups their blocks put within +-5% by up to 34%."""
    assert relative_verdict((1.15, 1.25), 1e-6, 1.2, None, 0.05, 0.05) == Verdict.UNSURE
    assert relative_verdict((0.99, 1.01), 0.9, 1.0, None, 0.05, 0.05) == Verdict.UNSURE
    assert relative_verdict((1.16, 1.25), 1e-6, 1.2, 0.15, 0.05, 0.05) == Verdict.UNSURE  # 1.2 < 1.15 * 1.05
    assert relative_verdict((1.16, 1.25), 1e-6, 1.2, 0.1, 0.05, 0.05) == Verdict.SLOWER


@pytest.mark.parametrize("said, reason, by_pairs, partner, canary, expected", [
    (Verdict.UNSURE, "noisy", Verdict.SLOWER, Verdict.UNSURE, 1.3, (Verdict.SLOWER, None, True)),
    (Verdict.UNSURE, "noisy", Verdict.SAME, None, None, (Verdict.SAME, None, True)),
    (Verdict.SLOWER, None, Verdict.SAME, Verdict.SAME, 1.0, (Verdict.SLOWER, None, False)),  # own times stand
    (Verdict.SLOWER, None, Verdict.FASTER, None, 1.0, (Verdict.UNSURE, DISAGREE, False)),
    (Verdict.UNSURE, "noisy", Verdict.SLOWER, Verdict.FASTER, 1.0, (Verdict.UNSURE, "noisy", False)),
    (Verdict.UNSURE, "noisy", Verdict.SLOWER, None, 0.6, (Verdict.UNSURE, "noisy", False)),
    (Verdict.UNSURE, "noisy", None, None, 1.0, (Verdict.UNSURE, "noisy", False)),
    (Verdict.UNSURE, "timed differently: x", Verdict.SAME, None, 1.0, (Verdict.UNSURE, "timed differently: x", False)),
    # the own time held within the minimum effect: the partner's moved, not this cell's
    (Verdict.SAME, None, Verdict.SLOWER, None, 1.0, (Verdict.UNSURE, DISAGREE, False)),
    (Verdict.SAME, None, Verdict.SAME, None, 1.0, (Verdict.SAME, None, False)),
])
def test_with_pairs_lets_the_pairs_speak_only_where_they_hold(said, reason, by_pairs, partner, canary, expected):
    assert with_pairs(said, reason, by_pairs, partner, canary) == expected


def test_the_pairs_bridge_a_slow_phase_on_one_side_only_where_asked():
    """The planted 20% above, NEW in a slow phase (its canary 1.3x calibrated), BASE at speed: `compare` lets the
    pairs judge it; history's steps do not (the step search puts a step where a phase flips, and the phase moved
    a pass's time against its partner by up to 42% in nine main-job runs: benchmarks/README.md)."""
    base, new = cell(2.0, 1, canary_ratio=1.0), cell(2.0 / 1.2, 2, slower=1.3, canary_s=390e-6, canary_ratio=1.3)
    bridged = cpp(sides(base, new))
    assert bridged.phases_apart and (bridged.verdict, bridged.by_pairs) == (Verdict.SLOWER, True)
    kept = cpp(sides(base, new, bridge_phases=False))
    assert (kept.verdict, kept.reason, kept.by_pairs) == (Verdict.UNSURE, PHASES, False)
    assert kept.relative == pytest.approx(1.2, rel=0.02)  # shown, not judged
    assert with_pairs(Verdict.UNSURE, PHASES, Verdict.SLOWER, None, 1.3, apart=True) == (Verdict.UNSURE, PHASES, False)

"""compare and history read the code digests: a decisive verdict on code that did not change is marked and
counted (it stands: the machine or the software moved it), a partner whose code changed lends no pairs'
verdict, and a step on an implementation whose code stayed as it was says so."""

from __future__ import annotations

import dataclasses

from benchctl.analysis import compare, history, steps
from benchctl.analysis.verdict import CODE_UNCHANGED
from benchctl.vocab import Verdict
from tests.analysis.test_compare import frame, row, timed
from tests.analysis.test_compare_pairs import cell, cpp, sides


def judged(base_code: str | None, new_code: str | None, slower: float = 1.2) -> compare.Comparison:
    code = lambda c: {} if c is None else {"impl_code": c}  # noqa: E731
    return compare.compare(frame([row(samples=timed(10e-3, 1), **code(base_code))]),
                           frame([row(samples=timed(10e-3 * slower, 2), **code(new_code))]))


def test_a_slowdown_on_unchanged_code_stands_marked_and_counted():
    result = judged("abc123abc123", "abc123abc123")
    (c,) = result.cells
    assert (c.verdict, c.code_changed, c.unexplained) == (Verdict.SLOWER, False, True)
    assert c.words() == f"slower ({CODE_UNCHANGED})"
    assert any(w.startswith("1 cell(s) came out slower or faster though their code did not change")
               for w in result.warnings())
    assert result.to_dict()["cells"][0]["code_changed"] is False


def test_a_slowdown_on_changed_or_unknown_code_is_not_marked():
    for base, new, changed in (("abc123abc123", "def456def456", True), (None, "def456def456", None)):
        result = judged(base, new)
        (c,) = result.cells
        assert (c.verdict, c.code_changed, c.unexplained, c.words()) == (Verdict.SLOWER, changed, False, "slower")
        assert not [w for w in result.warnings() if "did not change" in w]


def test_the_same_on_unchanged_code_is_not_marked():
    (c,) = judged("abc123abc123", "abc123abc123", slower=1.0).cells
    assert c.verdict == Verdict.SAME and not c.unexplained and c.words() == "same"


def test_a_partner_whose_code_changed_lends_no_verdict_from_the_pairs():
    """cpp took 1.2x longer against py, on a machine 1.3x slower: its pairs would say `slower` (as in
    test_compare_pairs), but py's code changed between the runs, so its time against py says nothing."""
    base, new = cell(2.0, 1), cell(2.0 / 1.2, 2, slower=1.3, canary_s=390e-6)
    kept = cpp(sides({**base, "partner_code": "aaaaaaaaaaaa"}, {**new, "partner_code": "aaaaaaaaaaaa"}))
    assert (kept.verdict, kept.by_pairs, kept.partner_changed) == (Verdict.SLOWER, True, False)
    result = sides({**base, "partner_code": "aaaaaaaaaaaa"}, {**new, "partner_code": "bbbbbbbbbbbb"})
    moved = cpp(result)
    assert (moved.verdict, moved.by_pairs, moved.partner_changed) == (Verdict.UNSURE, False, True)
    assert moved.relative is not None  # still shown
    assert any("partner's code (py) changed" in w for w in result.warnings())


def with_codes(series: history.Series, codes: list[str]) -> history.Series:
    points = [dataclasses.replace(p, row=p.row.copy()) for p in series.points]
    for p, code in zip(points, codes):
        p.row["impl_code"] = code
    return dataclasses.replace(series, points=tuple(points))


def test_a_step_says_whether_the_implementations_code_changed_at_it(written):
    root, _ = written
    (s,) = history.series(history.load(root=root))
    (at,) = steps.change_points(s.points)
    moved = ["a" * 12] * at + ["b" * 12] * (len(s.points) - at)
    (step,) = steps.steps(with_codes(s, moved))
    assert (step.change.verdict, step.change.code_changed, step.change.words()) == (Verdict.SLOWER, True, "slower")
    (still,) = steps.steps(with_codes(s, ["a" * 12] * len(s.points)))
    assert still.change.code_changed is False and still.change.words() == f"slower ({CODE_UNCHANGED})"
    # a code change elsewhere in the series is not this step's
    (apart,) = steps.steps(with_codes(s, ["a" * 12] * (len(s.points) - 1) + ["b" * 12]))
    assert apart.change.code_changed is False

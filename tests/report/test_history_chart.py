"""The history chart of a cell timed against one unchanged partner: its own times above, and below, its
time against the partner, where its step was found, marked with the change the pairs measured."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from benchctl.analysis import sides, steps
from benchctl.report.history_chart import UNSURE_COLOR, VERDICT_COLORS, history_figure
from tests.analysis.test_sides import CODE_SLOWS_AT, RUNS, run_row, series


def test_a_paired_series_gets_a_panel_of_its_time_against_the_partner():
    s = series([run_row(i) for i in range(RUNS)])
    (step,) = steps.steps(s)
    fig = history_figure([s], [step], "hoconv2d")
    top, bottom = fig.axes
    assert np.allclose(top.lines[0].get_ydata(), [p.median_s * 1e3 for p in s.points])
    assert np.allclose(bottom.lines[0].get_ydata(), sides.levels(s.points)[:, 0])
    assert bottom.get_ylabel() == "time against its partner (own / partner)"
    marks = [t.get_text() for t in bottom.texts]
    assert marks == [f"cpp slower +25% at {s.points[CODE_SLOWS_AT].label}"]
    assert step.change.ratio > 1.3  # the own medians moved more: the machine slowed down on the side before


def test_an_unpaired_series_has_the_time_panel_only():
    s = series([{**run_row(i), "partner_code": None} for i in range(RUNS)])
    (only,) = history_figure([s], steps.steps(s), "hoconv2d").axes
    assert np.allclose(only.lines[0].get_ydata(), [p.median_s * 1e3 for p in s.points])


def test_a_run_stopped_disturbed_is_crossed_in_the_time_panel_and_absent_from_the_partner_panel():
    rows = [run_row(i) for i in range(RUNS)]
    rows[2].update(stop="disturbed", paired_ci_lo=None, paired_ci_hi=None)
    s = series(rows)
    top, bottom = history_figure([s], steps.steps(s), "hoconv2d").axes
    crossed = [line for line in top.lines if line.get_marker() == "x"]
    assert len(crossed) == 1 and np.allclose(crossed[0].get_ydata(), [rows[2]["median_s"] * 1e3])
    assert len(bottom.lines[0].get_xdata()) == RUNS - 1


def test_a_run_in_a_slow_phase_gets_a_hollow_triangle_in_both_panels():
    rows = [{**run_row(i), "canary_ratio": 1.4 if i in (1, 3) else 1.02} for i in range(RUNS)]
    s = series(rows)
    for panel in history_figure([s], steps.steps(s), "hoconv2d").axes:
        (slow,) = [line for line in panel.lines if line.get_marker() == "^"]
        assert np.allclose(slow.get_xdata(), panel.lines[0].get_xdata()[[1, 3]])
        assert "^: a run in a slow phase" in panel.get_xlabel()
    quiet = series([{**run_row(i), "canary_ratio": 1.1} for i in range(RUNS)])
    assert not [line for ax in history_figure([quiet], [], "hoconv2d").axes for line in ax.lines
                if line.get_marker() == "^"]


def test_a_step_where_the_code_did_not_change_is_grey_and_says_so_in_the_chart_and_its_words():
    s = series([{**run_row(i), "impl_code": "a" * 12} for i in range(RUNS)])  # the same code throughout
    (step,) = steps.steps(s)
    assert step.change.verdict == "slower" and step.code_unchanged
    assert step.words() == "slower (by its pairs with py) (code unchanged)"
    bottom = history_figure([s], [step], "hoconv2d").axes[1]
    (mark,) = bottom.texts
    assert mark.get_text() == f"cpp slower +25% at {s.points[CODE_SLOWS_AT].label}, code unchanged"
    assert mark.get_color() == UNSURE_COLOR != VERDICT_COLORS["slower"]
    unsure = replace(step, change=replace(step.change, verdict="unsure", reason="noisy"))
    assert unsure.words() == "unsure (noisy) (code unchanged)"  # compare says it of decisive verdicts only
    changed = steps.steps(series([run_row(i) for i in range(RUNS)]))[0]
    assert not changed.code_unchanged and changed.words() == "slower (by its pairs with py)"


def test_steps_at_one_commit_stand_side_by_side():
    s = series([run_row(i) for i in range(RUNS)])
    (step,) = steps.steps(s)
    top = history_figure([s], [step, step], "hoconv2d").axes[0]
    first, second = (t.xyann[0] for t in top.texts)  # offsets from the line, in points
    assert second - first >= 7  # the labels' 7-point font: apart, not on top of each other


def test_many_steps_at_one_commit_are_counted_in_one_label():
    s = series([{**run_row(i), "impl_code": "a" * 12} for i in range(RUNS)])
    (step,) = steps.steps(s)
    unsure = replace(step, change=replace(step.change, verdict="unsure"))
    top = history_figure([s], [step] * 2 + [unsure] * 3, "hoconv2d").axes[0]
    (label,) = top.texts
    assert label.get_text() == "5 steps, code unchanged:\n2 slower, 3 unsure"
    assert label.get_color() == UNSURE_COLOR


def test_times_against_the_partner_spanning_far_more_than_a_few_x_are_drawn_on_a_log_scale():
    """A pass 100x its partner beside one at 0.5x: on a linear scale the second sat flat on the axis."""
    rows = [run_row(i) for i in range(RUNS)]
    near = series(rows)
    assert history_figure([near], [], "hoconv2d").axes[1].get_yscale() == "linear"  # near 0.5: linear reads best
    speedups = ("paired_speedup", "paired_ci_lo", "paired_ci_hi")
    far = series([{**r, **{k: r[k] / 200 for k in speedups}} for r in rows])
    far = replace(far, key=("hoconv2d", "module", "py-slow", *far.key[3:]))
    bottom = history_figure([near, far], [], "hoconv2d").axes[1]
    assert bottom.get_yscale() == "log"
    assert min(np.min(line.get_ydata()) for line in bottom.lines) < 1 < 50 < max(np.max(line.get_ydata())
                                                                                 for line in bottom.lines)

"""The machine figure: each CPU row's bandwidth probe against the minute its cell finished."""

import pandas as pd
import pytest

from benchctl.report.machine_chart import bandwidth_figure


def rows(gbps: list[float | None]) -> pd.DataFrame:
    return pd.DataFrame({
        "op": ["hoconv2d", "hoconv2d", "lstm_cell", "lstm_cell"],
        "timestamp": ["2026-11-22T16:00:00+00:00", "2026-11-22T16:00:30+00:00",
                      "2026-11-22T16:02:00+00:00", "2026-11-22T16:03:00+00:00"],
        "mem_gbps": gbps,
    })


def lines(fig) -> dict[str, tuple[list[float], list[float]]]:
    (ax,) = fig.axes
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()}


def test_points_per_operator_at_their_minute_and_the_mem_mark():
    drawn = lines(bandwidth_figure(rows([40.0, 20.0, 36.0, None]), read_peak=50.0))
    assert drawn["hoconv2d"] == ([0.0, 0.5], [40.0, 20.0])
    assert drawn["lstm_cell"] == ([2.0], [36.0])  # the unprobed (GPU) row is left out
    assert drawn["75% of the median: marked mem"][1] == [pytest.approx(27.0)] * 2  # median 36
    assert drawn["calibrated read peak"][1] == [50.0, 50.0]


def test_no_figure_without_probes_and_no_peak_line_without_calibration():
    assert bandwidth_figure(rows([None] * 4)) is None
    assert bandwidth_figure(rows([None] * 4).drop(columns="mem_gbps")) is None
    assert "calibrated read peak" not in lines(bandwidth_figure(rows([30.0, 31.0, 29.0, 30.0])))


def test_the_load_figure_draws_the_timeline_and_marks_disturbed_passes():
    from benchctl.report.machine_chart import load_figure

    canaries = rows([30.0] * 4).assign(canary_ratio=[1.0, 1.2, 1.01, None], stop=["converged", "disturbed", None, None],
                                       disturbed_share=[0.0, 0.6, 0.03, None])  # 3%: a quiet machine's
    meta = {"timeline_started": "2026-11-22T15:59:00+00:00",
            "timeline": [{"t": 0.0, "other_cores": 0.1, "steal_cores": 0.0},
                         {"t": 120.0, "other_cores": 1.0, "steal_cores": 0.2}]}
    fig = load_figure(canaries, [meta])
    load_ax, canary_ax = fig.axes
    drawn = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in load_ax.get_lines()}
    assert drawn["busy cores, other processes"] == ([0.0, 2.0], [0.1, 1.0])  # minutes from the timeline's start
    assert drawn["steal (cores)"][1] == [0.0, 0.2]
    marks = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in canary_ax.get_lines()}
    assert marks["a pass's canary"] == ([1.0, 3.0], [1.0, 1.01])
    assert marks["a pass with over 5% of its samples disturbed"] == ([1.5], [1.2])
    assert marks["+15%: marked slow"][1] == [1.15, 1.15]


def test_the_load_panel_draws_each_pass_s_own_reading_of_other_work_over_the_busy_line():
    from benchctl.report.machine_chart import load_figure

    canaries = rows([30.0] * 4).assign(canary_ratio=[1.0, 1.0, 1.0, 1.0], other_cores=[0.02, 1.01, 0.98, None])
    load_ax = load_figure(canaries, []).axes[0]
    drawn = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in load_ax.get_lines()}
    assert drawn["busy cores while a pass was timed"][1][:3] == [0.02, 1.01, 0.98]
    assert drawn["0.5: the pass marked busy"][1] == [0.5, 0.5]
    assert len(load_figure(canaries.drop(columns="other_cores"), []).axes[0].get_lines()) == 0  # a run before it


def test_a_pass_is_marked_for_its_share_set_aside_over_five_percent_or_for_stopping_disturbed():
    from benchctl.report.machine_chart import load_figure

    canaries = rows([30.0] * 4).assign(canary_ratio=[1.0, 1.1, 1.2, 1.3], stop=["converged", "max_time", "disturbed",
                                       "converged"], disturbed_share=[0.05, 0.07, 0.01, 0.0])
    (canary_ax,) = load_figure(canaries, []).axes[1:]
    marks = {line.get_label(): list(line.get_ydata()) for line in canary_ax.get_lines()}
    assert marks["a pass's canary"] == [1.0, 1.3]
    assert marks["a pass with over 5% of its samples disturbed"] == [1.1, 1.2]


def test_no_load_figure_without_a_timeline_or_canaries():
    from benchctl.report.machine_chart import load_figure

    assert load_figure(rows([30.0] * 4), []) is None

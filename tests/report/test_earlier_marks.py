"""What the earlier runs read, on the report's time chart (benchctl.report.earlier_marks): a bar over their range
behind each point, and a dash at a slow pass's time at speed, in the implementation's colour."""

from __future__ import annotations

import numpy as np

from benchctl.report import charts, earlier_marks
from tests.report.test_charts import frame
from tests.report.test_pair_marks import paired_rows


def dashes(fig) -> dict[str, np.ndarray]:
    return {a.get_gid(): a.get_offsets() for ax in fig.axes for a in ax.collections
            if str(a.get_gid()).startswith("at_speed:")}


def test_a_slow_pass_with_a_time_at_speed_gets_a_dash_there_and_one_legend_entry():
    rows = frame(paired_rows()).assign(canary_ratio=[1.6, 1.6, 1.0, 1.6],  # py 16, cpp 16, py 64 (at speed), cpp 64
                                       at_speed_s=[0.05e-3, None, 0.2e-3, 0.1e-3])
    fig = charts.timing_figure(rows, "lstm_cell / cell")
    found = dashes(fig)
    assert sorted(found) == ["at_speed:cpp", "at_speed:py"]
    assert np.allclose(found["at_speed:py"], [[16.0, 0.05]])  # py at 64 was not marked slow: no dash
    assert np.allclose(found["at_speed:cpp"], [[64.0, 0.1]])  # cpp at 16 has no time at speed
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels.count(earlier_marks.DASH_LABEL) == 1


def test_no_dash_without_a_time_at_speed_or_a_slow_mark():
    rows = frame(paired_rows())
    assert dashes(charts.timing_figure(rows, "lstm_cell")) == {}  # no column: a report without earlier runs
    at_speed = rows.assign(at_speed_s=0.1e-3)
    assert dashes(charts.timing_figure(at_speed.assign(canary_ratio=1.0), "lstm_cell")) == {}
    assert dashes(charts.timing_figure(at_speed.assign(canary_ratio=1.6, status="oom"), "lstm_cell")) == {}


def bars(fig) -> dict[str, list]:
    return {a.get_gid(): [[float(v) for v in seg[:, 1]] + [float(seg[0, 0])] for seg in a.get_segments()]
            for ax in fig.axes for a in ax.collections if str(a.get_gid()).startswith("earlier:")}


def test_a_pass_timed_in_two_earlier_runs_or_more_gets_a_bar_over_their_range_and_one_legend_entry():
    rows = frame(paired_rows()).assign(earlier_lo_s=[0.07e-3, 0.04e-3, 0.1e-3, None],
                                       earlier_hi_s=[0.27e-3, 0.05e-3, 0.3e-3, None],
                                       earlier_runs=[10, 1, 3, None])  # cpp at 16: one run; cpp at 64: none
    fig = charts.timing_figure(rows, "lstm_cell / cell")
    found = bars(fig)
    assert sorted(found) == ["earlier:py"]
    right = earlier_marks.DODGE ** 0.5  # py, the second of two implementations: right of its point
    assert np.allclose(found["earlier:py"], [[0.07, 0.27, 16.0 * right], [0.1, 0.3, 64.0 * right]])  # ms
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels.count(earlier_marks.BAR_LABEL) == 1
    assert bars(charts.timing_figure(frame(paired_rows()), "lstm_cell")) == {}  # no earlier runs: no bar

"""A pass marked slow at its time at speed on the report's time chart (benchctl.report.at_speed_marks): a dash in
the implementation's colour, beside its point."""

from __future__ import annotations

import numpy as np

from benchctl.report import at_speed_marks, charts
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
    assert labels.count(at_speed_marks.DASH_LABEL) == 1


def test_no_dash_without_a_time_at_speed_or_a_slow_mark():
    rows = frame(paired_rows())
    assert dashes(charts.timing_figure(rows, "lstm_cell")) == {}  # no column: a report without earlier runs
    at_speed = rows.assign(at_speed_s=0.1e-3)
    assert dashes(charts.timing_figure(at_speed.assign(canary_ratio=1.0), "lstm_cell")) == {}
    assert dashes(charts.timing_figure(at_speed.assign(canary_ratio=1.6, status="oom"), "lstm_cell")) == {}

"""The earlier runs' speedups on the report's speedup chart (benchctl.report.repeat_marks): a mark in the
implementation's colour at each, beside the point timed in pairs with the chart's baseline, a cross for a run at
speed and a hollow triangle for one in a slow phase."""

from __future__ import annotations

import numpy as np

from benchctl.analysis.run_notes import REPEAT
from benchctl.report import charts, repeat_marks
from tests.report.test_pair_marks import paired_rows
from tests.report.test_charts import frame


def crosses(fig) -> dict[str, np.ndarray]:
    return {a.get_gid(): a.get_offsets() for ax in fig.axes for a in ax.collections
            if str(a.get_gid()).startswith("earlier:")}


def test_each_earlier_speedup_is_a_cross_at_its_batch_size_in_the_implementations_colour():
    rows = frame(paired_rows()).assign(earlier_speedups=[(), (3.0, 3.2), (), (1.1,)])
    fig = charts.speedup_figure(rows, "lstm_cell / cell", "py")
    found = crosses(fig)
    assert list(found) == ["earlier:cpp:at speed"]
    assert found["earlier:cpp:at speed"].tolist() == [[16.0, 3.0], [16.0, 3.2], [64.0, 1.1]]
    assert repeat_marks.MARKS[False][1] in [t.get_text() for t in fig.legends[0].get_texts()]


def test_the_earlier_runs_in_a_slow_phase_are_hollow_triangles_whichever_state_the_point_met():
    rows = frame(paired_rows()).assign(canary_ratio=[1.0, 1.0, 1.0, 1.4], earlier_speedups=[(), (2.0,), (), (3.0,)],
                                       other_state_speedups=[(), (3.1,), (), (2.1, 2.2)])
    fig = charts.speedup_figure(rows, "lstm_cell / cell", "py")
    found = crosses(fig)
    assert found["earlier:cpp:at speed"].tolist() == [[16.0, 2.0], [64.0, 2.1], [64.0, 2.2]]
    assert found["earlier:cpp:slow"].tolist() == [[16.0, 3.1], [64.0, 3.0]]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert repeat_marks.MARKS[False][1] in legend and repeat_marks.MARKS[True][1] in legend


def test_no_crosses_without_earlier_runs_or_against_another_baseline():
    rows = frame(paired_rows())
    assert crosses(charts.speedup_figure(rows.assign(earlier_speedups=[()] * 4), "lstm_cell", "py")) == {}
    assert crosses(charts.speedup_figure(rows, "lstm_cell", "py")) == {}  # no column: a report without --root's runs
    with_cpp = rows.assign(earlier_speedups=[(), (3.0,), (), ()])
    assert crosses(charts.speedup_figure(with_cpp, "lstm_cell", "cpp")) == {}  # paired with py, not the chart's cpp


def test_a_report_given_the_earlier_runs_says_how_they_fell_and_draws_them(tmp_path):
    from benchctl.report import page

    def run(run_id: str, scale: float) -> list[dict]:
        return [{**r, "run_id": run_id, "impl_code": "aaaa", "partner_code": "bbbb",
                 **({"paired_speedup": r["paired_speedup"] * scale, "paired_ci_lo": r["paired_speedup"] * scale * 0.99,
                     "paired_ci_hi": r["paired_speedup"] * scale * 1.01} if "paired_speedup" in r else {})}
                for r in paired_rows()]

    built = page.build(frame(run("r2", 1.0)), tmp_path, earlier=frame(run("r1", 1.5)))
    [line] = [n.text for n in built.notes if n.heading == REPEAT]
    assert line.startswith("2 of 2 paired speedups measured before (in up to 1 earlier run(s) of the same code")
    assert f"- **{REPEAT}.** 2 of 2 paired speedups measured before" in (tmp_path / "summary.md").read_text()
    [svg] = [p for p in built.figures if p.name.endswith("speedup.svg")]
    assert 'id="earlier:cpp:at speed"' in svg.read_text()


def test_the_table_gives_each_speedup_the_range_of_the_earlier_runs_in_either_state():
    from benchctl.report import tables

    rows = frame(paired_rows()).assign(earlier_speedups=[(), (3.0, 3.2), (), (1.1,)],
                                       other_state_speedups=[(), (2.04,), (), ()])
    table = tables.op_table(rows, "py").set_index(["batch_size", "impl"])
    assert table.loc[("16", "cpp"), tables.EARLIER_SPEEDUPS] == "2.04-3.20x (3)"
    assert table.loc[("64", "cpp"), tables.EARLIER_SPEEDUPS] == "1.10x (1)"
    assert table.loc[("16", "py"), tables.EARLIER_SPEEDUPS] == ""  # the reference itself
    assert "earlier speedups: the lowest and highest paired speedup of the same code" in tables.legend(
        tables.op_table(rows, "py"), "py")[-1]
    assert tables.EARLIER_SPEEDUPS not in tables.op_table(frame(paired_rows()), "py")  # none before it

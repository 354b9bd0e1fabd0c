"""Display strings of the report's tables."""

import math

import pandas as pd

from benchctl.report.tables import percent_of_peak


def test_a_percentage_of_peak_names_its_ceiling_and_says_when_it_beats_it():
    assert percent_of_peak(63.04, "L3") == "63.0 (L3)"
    assert percent_of_peak(63.04, None) == "63.0"  # a run from before cache levels
    assert percent_of_peak(171.0, "DRAM") == "171.0: above the DRAM peak"
    assert percent_of_peak(171.0, math.nan) == "171.0: above the measured peak"
    assert percent_of_peak(math.nan, "L2") == ""


def test_swept_values_are_written_as_people_write_them():
    from benchctl.analysis.summary import axis_value_text

    assert axis_value_text(1048576.0) == "1048576" and axis_value_text(2**30) == "1073741824"
    assert axis_value_text(0.25) == "0.25" and axis_value_text(1e-7) == "0.0000001"


def test_the_table_gives_each_time_the_range_of_the_earlier_runs_of_the_same_code():
    from benchctl.analysis.at_speed import with_earlier
    from benchctl.report.tables import op_table
    from tests.report.test_charts import frame, make_row

    def run(run_id, py_ms, **changed):
        py = {**make_row("py", "cpu", "forward", 8), "median_s": py_ms / 1e3, "run_id": run_id, "impl_code": "a"}
        return frame([{**py, **changed}, {**make_row("cpp", "cpu", "forward", 8), "run_id": run_id}])

    earlier = pd.concat([run("r1", 0.069), run("r2", 0.265), run("r3", 0.9, other_cores=1.5)])  # r3 beside work
    table = op_table(with_earlier(run("r4", 0.07), earlier), "py").set_index("impl")
    assert table.loc["py", "earlier runs ms"] == "0.069-0.265 (2)"
    assert table.loc["cpp", "earlier runs ms"] == ""  # no code digest: its earlier runs may be other code
    assert "earlier runs ms" not in op_table(with_earlier(run("r4", 0.07), None), "py")


def test_the_earlier_runs_column_is_said_under_the_table_with_how_often_the_next_run_lands_within_it():
    from benchctl.report.tables import EARLIER, earlier_legend

    said = earlier_legend(pd.DataFrame({EARLIER: ["0.069-0.265 (2)"]}))
    assert said.startswith("earlier runs ms: the fastest and slowest median of the same code in the earlier runs")
    assert "(n-1)/(n+1) of the time (82% at 10)" in said  # 9/11: ten earlier runs, as many as a run is held against
    assert earlier_legend(pd.DataFrame({"median ms": ["0.07"]})) is None


def test_at_each_size_the_baseline_s_row_comes_first_then_the_others_by_name():
    from benchctl.report.tables import op_table
    from tests.report.test_charts import frame, make_row

    rows = frame([make_row(impl, "cpu", "forward", b) for b in (16, 8) for impl in ("cuda", "py", "cpp")])
    assert list(op_table(rows, "py")["impl"]) == ["py", "cpp", "cuda"] * 2
    assert list(op_table(rows, "cuda")["impl"]) == ["cuda", "cpp", "py"] * 2

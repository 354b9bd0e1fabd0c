"""Display strings of the report's tables."""

import math

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

"""Display strings of the report's tables."""

import math

from benchctl.report.tables import percent_of_peak


def test_a_percentage_of_peak_names_its_ceiling_and_says_when_it_beats_it():
    assert percent_of_peak(63.04, "L3") == "63.0 (L3)"
    assert percent_of_peak(63.04, None) == "63.0"  # a run from before cache levels
    assert percent_of_peak(171.0, "DRAM") == "171.0: above the DRAM peak"
    assert percent_of_peak(171.0, math.nan) == "171.0: above the measured peak"
    assert percent_of_peak(math.nan, "L2") == ""

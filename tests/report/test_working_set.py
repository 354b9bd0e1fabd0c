"""The working-set chart: each pass's GB/s against the calibrated copy rate at its size."""

import pandas as pd
import pytest

from benchctl.report import working_set

MIB = 2 ** 20
PEAK = {"gbps": 30.0, "levels": {"L2": {"bytes": 2 * MIB, "gbps": 110.0}, "L3": {"bytes": 32 * MIB, "gbps": 140.0}},
        "copy_sizes": [{"copy_bytes": mib * MIB, "gbps": gbps}
                       for mib, gbps in {1: 110.0, 8: 140.0, 32: 104.0, 64: 57.0, 512: 30.0}.items()]}


def passes() -> pd.DataFrame:
    """Two byte-bound passes (their % of peak is their GB/s over a copy of their size) and a FLOP-bound one."""
    return pd.DataFrame([
        {"op": "naflex_posembed", "device": "cpu", "status": "ok", "bytes": 64 * MIB, "gbps": 28.5, "pct_of_peak": 50.0},
        {"op": "naflex_posembed", "device": "cpu", "status": "ok", "bytes": 8 * MIB, "gbps": 70.0, "pct_of_peak": 50.0},
        {"op": "lstm_cell", "device": "cpu", "status": "ok", "bytes": 0.5 * MIB, "gbps": 2.0, "pct_of_peak": 40.0},
        {"op": "lstm_cell", "device": "cpu", "status": "error", "bytes": None, "gbps": None, "pct_of_peak": None},
    ])


def hollow_markers(collection) -> bool:
    faces = collection.get_facecolors()
    return faces.size == 0 or faces[0][3] == 0.0


def test_each_pass_is_drawn_against_a_copy_of_its_size_and_flop_bound_ones_hollow():
    fig = working_set.working_set_figure(passes(), {"cpu": PEAK})
    ax = fig.axes[0]
    line = next(ln for ln in ax.get_lines() if ln.get_gid() == "copies")
    drawn = dict(zip(line.get_xdata(), line.get_ydata()))
    assert drawn[0.5] == pytest.approx(140.0)  # under the smallest copy: the rate of the fastest larger one
    assert drawn[32] == pytest.approx(104.0) and drawn[512] == pytest.approx(30.0)
    points = [c for c in ax.collections if len(c.get_offsets())]
    filled = [tuple(map(tuple, c.get_offsets())) for c in points if not hollow_markers(c)]
    hollow = [tuple(map(tuple, c.get_offsets())) for c in points if hollow_markers(c)]
    assert filled == [((64.0, 28.5), (8.0, 70.0))]  # naflex_posembed's: 50% of a copy of their size
    assert hollow == [((0.5, 2.0),)]  # lstm_cell's: 40% of peak, far over its 1.4% of a copy's GB/s
    assert {"L2 capacity", "L3 capacity", "hollow: bound by its FLOPs"} <= {t.get_text() for t in fig.legends[0].get_texts()}


def test_no_chart_without_a_calibration_that_timed_copies_by_size():
    assert working_set.working_set_figure(passes(), {"cpu": {k: v for k, v in PEAK.items() if k != "copy_sizes"}}) is None
    assert working_set.working_set_figure(passes(), {}) is None
    assert working_set.working_set_figure(passes().iloc[3:], {"cpu": PEAK}) is None  # no pass with rates

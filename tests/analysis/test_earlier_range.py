"""A run's passes against the range of their earlier runs of the same code (benchctl.analysis.earlier_range)."""

import pandas as pd
import pytest

from benchctl.analysis.at_speed import with_earlier
from benchctl.analysis.earlier_range import chance_outside, outside_line, tail
from benchctl.analysis.run_notes import notes


def timed(run_id: str, medians_ms: list[float], **changed: object) -> pd.DataFrame:
    """One run's rows of `py` forward at batch sizes 8, 16, ...: a median each."""
    n = len(medians_ms)
    return pd.DataFrame({"run_id": run_id, "op": "silu", "target": "op", "impl": "py", "device": "cpu",
                         "dtype": "float32", "params": [f'{{"batch_size": {8 << i}}}' for i in range(n)],
                         "axis": "batch_size", "axis_value": [float(8 << i) for i in range(n)], "pass": "forward",
                         "status": "ok", "median_s": [m / 1e3 for m in medians_ms], "canary_ratio": 1.0,
                         "cpu_name": "AMD EPYC", "threads": 2, "torch_version": "2.14.1", "allocator": "system",
                         "impl_code": "aaaa"}).assign(**changed)


def test_runs_alike_leave_the_next_outside_the_range_of_n_two_times_in_n_plus_one() -> None:
    assert [chance_outside(n) for n in (2, 3, 10)] == pytest.approx([2 / 3, 0.5, 2 / 11])
    assert tail([0.5, 0.5], 0) == pytest.approx(1.0) and tail([0.5, 0.5], 1) == pytest.approx(0.75)
    assert tail([0.5, 0.5], 2) == pytest.approx(0.25) and tail([0.5, 0.5], 3) == 0.0


def test_the_line_counts_the_passes_outside_their_earlier_runs_which_way_and_names_the_furthest() -> None:
    earlier = pd.concat([timed("r1", [1.0, 1.0, 1.0, 1.0]), timed("r2", [2.0, 2.0, 2.0, 2.0]),
                         timed("r3", [9.0, 9.0, 9.0, 9.0], other_cores=1.5)])  # r3 beside other work: not counted
    now = timed("r4", [1.5, 2.5, 0.5, 1.0])
    assert outside_line(now, earlier) == (
        "2 of 4 passes read outside the fastest and slowest of their earlier runs of the same code in this folder "
        "(1 faster, 1 slower), where runs alike would leave 2.7 outside (2 in n + 1 of a pass with n earlier runs); "
        "the furthest, silu/op py forward at batch_size=32: 0.5 ms here, 1-2 ms in 2 earlier runs")
    assert outside_line(with_earlier(now, earlier), None) == outside_line(now, earlier)  # read once, in run
    assert outside_line(now, earlier) in notes(now, [{"run_id": "r4"}], 2, earlier)


def test_a_run_with_more_passes_outside_than_alike_runs_would_leave_is_said_to_be_unlike_them() -> None:
    earlier = pd.concat([timed(f"r{i}", [1.0 + i / 10] * 8) for i in range(10)])  # 1.0-1.9 ms, ten runs
    unlike = outside_line(timed("r10", [0.8] * 8), earlier)  # all 8 faster: alike runs, 1.5 outside
    assert unlike.startswith("8 of 8 passes read outside the fastest and slowest of their earlier runs of the same "
                             "code in this folder (8 faster, 0 slower), where runs alike would leave 1.5 outside")
    assert ", and as many less than 1% of the time: this run met the machine in a state its earlier runs" in unlike
    alike = outside_line(timed("r10", [0.8, 0.8] + [1.5] * 6), earlier)  # 2 outside: about what runs alike leave
    assert alike.startswith("2 of 8 passes") and "less than 1% of the time" not in alike


def test_no_line_without_two_earlier_runs_of_the_same_code() -> None:
    assert outside_line(timed("r2", [1.5]), timed("r1", [1.0])) is None
    assert outside_line(timed("r3", [1.5]), pd.concat([timed("r1", [1.0]), timed("r2", [2.0], impl_code="b")])) is None
    assert outside_line(timed("r1", [1.5]), None) is None
    assert outside_line(timed("r3", [1.5], status="incorrect"), pd.concat([timed("r1", [1.0]), timed("r2", [2.0])])) \
        is None

"""A run's passes against the range of their earlier runs of the same code (benchctl.analysis.earlier_range)."""

import pandas as pd
import pytest

from benchctl.analysis.at_speed import with_earlier
from benchctl.analysis.earlier_range import chance_outside, outside_line, run_shares, tail
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
        "held the same way against the others, the 2 earlier runs read 50%-75% of these passes outside, this run 50%; "
        "the furthest, silu/op py forward at batch_size=32: 0.5 ms here, 1-2 ms in 2 earlier runs")
    assert outside_line(with_earlier(now, earlier), earlier) == outside_line(now, earlier)  # as run gives them
    assert outside_line(now, earlier) in [n.text for n in notes(now, [{"run_id": "r4"}], 2, earlier)]


def shuffled(runs: int, passes: int) -> pd.DataFrame:
    """`runs` runs of `passes` passes, each pass 1.0-1.9 ms across the runs in a different order: every run is
    the fastest or slowest of some passes only, as runs alike would be."""
    return pd.concat([timed(f"r{i}", [1.0 + (i + 3 * j) % runs / 10 for j in range(passes)]) for i in range(runs)])


def test_each_run_is_held_against_the_others_the_same_way() -> None:
    earlier = shuffled(10, 8)
    shares = run_shares(timed("r10", [0.8] * 6 + [1.5] * 2), earlier)
    assert list(shares.index) == ["r10", *(f"r{i}" for i in range(10))]
    assert shares["r10"] == pytest.approx(6 / 8)  # the six at 0.8 ms
    # the slowest of each pass (1.9 ms) is outside the others': r_i is slowest where (i + 3j) % 10 == 9
    # ... and, where this run is in the middle (the last two passes), the fastest (1.0 ms: r2, r9)
    assert [shares[f"r{i}"] * 8 for i in range(10)] == pytest.approx([1, 1, 1, 1, 1, 0, 1, 1, 1, 2])
    few = pd.concat([earlier, timed("r9b", [2.0] * 3)])  # timed 3 of the 8 passes: not held beside this run
    assert "r9b" not in run_shares(timed("r10", [0.8] * 8), few).index


def test_a_run_with_more_passes_outside_than_alike_runs_would_leave_is_said_to_be_unlike_them() -> None:
    earlier = shuffled(10, 8)  # ten runs alike: each pass 1.0-1.9 ms, the runs in another order for each
    unlike = outside_line(timed("r10", [0.8] * 8), earlier)  # all 8 faster: alike runs, 1.5 outside
    assert unlike.startswith("8 of 8 passes read outside the fastest and slowest of their earlier runs of the same "
                             "code in this folder (8 faster, 0 slower), where runs alike would leave 1.5 outside")
    assert ("; held the same way against the others, the 10 earlier runs read 0%-12% of these passes outside, this "
            "run 100%: more than each of them, and more than runs alike would leave 1% of the time were the passes "
            "independent; this run met the machine in a state its earlier runs did not") in unlike
    alike = outside_line(timed("r10", [0.8, 0.8] + [1.5] * 6), earlier)  # 2 outside: about what runs alike leave
    assert alike.startswith("2 of 8 passes") and "this run 25%" in alike and "met the machine" not in alike


def test_a_run_no_further_out_than_earlier_runs_is_not_said_to_be_unlike_them() -> None:
    earlier = pd.concat([timed(f"r{i}", [1.0 + i / 10] * 8) for i in range(10)])  # each run slower than the last
    line = outside_line(timed("r10", [0.8] * 8), earlier)
    assert "the 10 earlier runs read 0%-100% of these passes outside, this run 100%: runs alike would leave as many " \
           "less than 1% of the time were the passes independent, but earlier runs read as many outside" in line
    assert "met the machine" not in line


def test_no_line_without_two_earlier_runs_of_the_same_code() -> None:
    assert outside_line(timed("r2", [1.5]), timed("r1", [1.0])) is None
    assert outside_line(timed("r3", [1.5]), pd.concat([timed("r1", [1.0]), timed("r2", [2.0], impl_code="b")])) is None
    assert outside_line(timed("r1", [1.5]), None) is None
    assert outside_line(timed("r3", [1.5], status="incorrect"), pd.concat([timed("r1", [1.0]), timed("r2", [2.0])])) \
        is None


def test_the_furthest_named_is_a_pass_whose_median_settled_where_one_is_outside() -> None:
    earlier = pd.concat([timed("r1", [1.0, 1.0]), timed("r2", [2.0, 2.0])])
    assert outside_line(timed("r3", [0.5, 2.5]), earlier).endswith(
        "the furthest, silu/op py forward at batch_size=8: 0.5 ms here, 1-2 ms in 2 earlier runs")
    assert outside_line(timed("r3", [0.5, 2.5], noisy=[True, False]), earlier).endswith(
        "the furthest, silu/op py forward at batch_size=16: 2.5 ms here, 1-2 ms in 2 earlier runs")
    assert outside_line(timed("r3", [0.5, 2.0], noisy=True), earlier).endswith("batch_size=8: 0.5 ms here, 1-2 ms "
                                                                               "in 2 earlier runs")

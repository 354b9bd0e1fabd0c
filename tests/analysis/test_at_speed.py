"""Passes marked slow against their own time at speed in earlier runs of the same code (benchctl.analysis.at_speed)."""

import pandas as pd
import pytest

from benchctl.analysis.at_speed import at_speed_line, at_speed_times, earlier_times, with_earlier
from benchctl.analysis.run_notes import notes


def timed(run_id: str, medians_ms: list[float], canary: float, **changed: object) -> pd.DataFrame:
    """One run's rows of `py` forward at batch sizes 8, 16, ...: a median each, all at one canary ratio."""
    n = len(medians_ms)
    rows = pd.DataFrame({"run_id": run_id, "op": "silu", "target": "op", "impl": "py", "device": "cpu",
                         "dtype": "float32", "params": [f'{{"batch_size": {8 << i}}}' for i in range(n)],
                         "axis": "batch_size", "axis_value": [float(8 << i) for i in range(n)], "pass": "forward",
                         "status": "ok", "median_s": [m / 1e3 for m in medians_ms], "canary_ratio": canary,
                         "cpu_name": "AMD EPYC", "threads": 2, "torch_version": "2.14.1", "allocator": "system",
                         "impl_code": "aaaa"})
    return rows.assign(**changed)


AT_SPEED = pd.concat([timed("r1", [0.25, 1.0, 4.0], 1.02), timed("r2", [0.27, 1.0, 4.2], 1.05),
                      timed("r3", [0.5, 1.1, 3.0], 1.4)])  # r3 in the slow state: not the time at speed


def test_a_pass_s_time_at_speed_is_the_median_and_range_of_the_earlier_runs_timed_at_speed() -> None:
    found = at_speed_times(timed("r4", [0.5, 1.0, 3.0], 1.5), AT_SPEED)
    assert found["at_speed_s"].tolist() == pytest.approx([0.26e-3, 1.0e-3, 4.1e-3])
    assert found["at_speed_lo_s"].tolist() == pytest.approx([0.25e-3, 1.0e-3, 4.0e-3])
    assert found["at_speed_hi_s"].tolist() == pytest.approx([0.27e-3, 1.0e-3, 4.2e-3])


@pytest.mark.parametrize("changed", [{"impl_code": "cccc"}, {"impl_code": None}, {"threads": 1},
                                     {"cpu_name": "Intel Xeon"}, {"paired_with": "jit"}, {"torch_version": "2.13.0"},
                                     {"allocator": "tcmalloc"}, {"pass": "backward"}])
def test_other_code_threads_machine_partner_or_pass_is_not_the_same_time(changed) -> None:
    assert at_speed_times(timed("r4", [0.5], 1.5), AT_SPEED.assign(**changed)).isna().all(axis=None)
    assert at_speed_times(timed("r4", [0.5], 1.5, **changed), AT_SPEED).isna().all(axis=None)


@pytest.mark.parametrize("spoiled", [{"canary_ratio": 1.3}, {"canary_ratio": None}, {"stop": "disturbed"},
                                     {"other_cores": 1.0}, {"status": "incorrect"}])
def test_one_earlier_run_at_speed_left_alone_is_not_enough(spoiled) -> None:
    earlier = pd.concat([timed("r1", [0.25], 1.02), timed("r2", [0.27], 1.05, **spoiled)])
    assert at_speed_times(timed("r4", [0.5], 1.5), earlier).isna().all(axis=None)
    assert at_speed_line(timed("r4", [0.5], 1.5), earlier) is None


def test_the_line_counts_the_marked_passes_by_which_way_they_moved_and_names_the_furthest() -> None:
    now = pd.concat([timed("r4", [0.5, 1.05, 3.0], 1.5), timed("r4", [9.0], 1.0, impl="cpp")])  # cpp at speed
    assert at_speed_line(with_earlier(now, AT_SPEED), None) == at_speed_line(now, AT_SPEED)  # read once, in run
    assert at_speed_line(now, AT_SPEED) == (
        "3 of the 3 passes marked slow were timed at speed in earlier runs of the same code on this machine: "
        "1 read over 15% above the slowest of those runs (slow↑), 1 over 15% below the fastest (slow↓), 1 within; "
        "the furthest, silu/op py forward at batch_size=8: 0.5 ms here with the canary at 1.50x calibrated, 0.26 ms "
        "at speed (1.92x; 0.25-0.27 ms with the canary at 1.02-1.05x calibrated)")


def test_the_furthest_has_the_memory_probe_here_and_in_its_runs_at_speed() -> None:
    earlier = pd.concat([timed("r1", [0.25], 1.02, mem_gbps=42.9), timed("r2", [0.27], 1.05, mem_gbps=58.2),
                         timed("r3", [0.3], 1.4, mem_gbps=80.0)])  # r3 in the slow state: its probe not counted
    found = at_speed_times(timed("r4", [0.05], 1.3), earlier)
    assert found[["at_speed_mem_lo_gbps", "at_speed_mem_hi_gbps"]].iloc[0].tolist() == [42.9, 58.2]
    assert at_speed_line(timed("r4", [0.05], 1.3, mem_gbps=74.8), earlier).endswith(
        "0.05 ms here with the canary at 1.30x calibrated and the memory probe at 74.8 GB/s, 0.26 ms at speed (0.19x; "
        "0.25-0.27 ms with the canary at 1.02-1.05x calibrated and the memory probe at 42.9-58.2 GB/s)")


def test_a_pass_is_held_against_the_range_of_its_runs_at_speed_not_their_median() -> None:
    spread = pd.concat([timed("r1", [0.2], 1.02), timed("r2", [0.4], 1.05)])  # median 0.3, range 0.2-0.4
    assert at_speed_line(timed("r4", [0.45], 1.5), spread).endswith("0 over 15% below the fastest (slow↓), 1 within")
    assert "1 read over 15% above" in at_speed_line(timed("r4", [0.47], 1.5), spread)
    assert "1 over 15% below the fastest" in at_speed_line(timed("r4", [0.17], 1.5), spread)


def test_marked_passes_that_held_say_so_and_a_run_none_marked_or_none_known_says_nothing() -> None:
    assert at_speed_line(timed("r4", [0.26, 1.0], 1.5), AT_SPEED).endswith(
        "0 read over 15% above the slowest of those runs (slow↑), 0 over 15% below the fastest (slow↓), 2 within")
    assert at_speed_line(timed("r4", [0.5, 2.0], 1.1), AT_SPEED) is None  # not marked
    assert at_speed_line(timed("r4", [0.5], 1.5), None) is None
    assert at_speed_line(timed("r4", [0.5], 1.5), pd.DataFrame()) is None
    assert at_speed_line(timed("r4", [0.5], 1.5, impl_code="cccc"), AT_SPEED) is None


def test_the_run_s_notes_carry_the_line() -> None:
    assert any(n.text.startswith("1 of the 1 passes marked slow") for n in
               notes(timed("r4", [0.5], 1.5), [{"run_id": "r4"}], earlier=AT_SPEED))


def test_the_rows_carry_what_the_earlier_runs_read_for_the_tables_and_the_charts() -> None:
    rows = with_earlier(timed("r4", [0.5, 1.0], 1.5, paired_speedup=2.0, partner_code="bbbb", paired_with="loop"),
                        AT_SPEED.assign(paired_speedup=2.1, partner_code="bbbb", paired_with="loop"))
    assert rows["at_speed_s"].tolist() == pytest.approx([0.26e-3, 1.0e-3])
    assert with_earlier(rows, AT_SPEED).columns.tolist() == rows.columns.tolist()  # again: the same columns
    # this run in a slow phase: r3's speedup is of the same state, r1's and r2's (at speed) of the other
    assert rows["earlier_speedups"].tolist() == [(2.1,), (2.1,)]
    assert rows["other_state_speedups"].tolist() == [(2.1, 2.1), (2.1, 2.1)]


GBPS = [42.0, 61.0, 35.0, 50.0, 39.0, 66.0]
CACHED = pd.concat([timed(f"m{i}", [40 / g], 1.02, mem_gbps=g) for i, g in enumerate(GBPS)])  # 40 / GB/s, in ms


def test_a_pass_whose_time_follows_the_memory_probe_is_held_only_against_runs_at_speed_near_its_probe() -> None:
    near = with_earlier(timed("r9", [1.5], 1.5, mem_gbps=45.0), CACHED)  # 39.1-51.8 GB/s: the runs at 42 and 50
    assert near["time_follows_memory"].tolist() == [True]
    assert near[["at_speed_lo_s", "at_speed_hi_s"]].iloc[0].tolist() == pytest.approx([0.8e-3, 40 / 42 * 1e-3])
    assert near[["at_speed_mem_lo_gbps", "at_speed_mem_hi_gbps"]].iloc[0].tolist() == [42.0, 50.0]
    assert "(1 had such runs): 1 read over 15% above the slowest" in at_speed_line(near, None)


def test_a_memory_follower_with_no_run_at_speed_near_its_probe_gets_no_arrow_where_the_canary_alone_gave_one() -> None:
    now = pd.concat([timed("r9", [0.5], 1.5, mem_gbps=80.0), timed("r9", [9.0], 1.5, impl="cpp", mem_gbps=80.0)])
    earlier = pd.concat([CACHED, CACHED.assign(impl="cpp", median_s=9e-3)])  # cpp's time: the same in every run
    assert "1 over 15% below the fastest (slow↓)" in at_speed_line(now, earlier)  # the canary alone: 0.5 < 0.606 ms
    rows = with_earlier(now, earlier)
    assert rows["time_follows_memory"].tolist() == [True, False] and rows["at_speed_s"].isna().tolist() == [True, False]
    canary = with_earlier(now, earlier, hold=0)  # none held to its memory state: the canary's alone
    assert canary["time_follows_memory"].tolist() == [False, False] and canary["at_speed_s"].notna().all()
    assert at_speed_line(rows, None) == (
        "1 of the 2 passes marked slow were timed at speed in earlier runs of the same code on this machine, those "
        "whose time may follow the memory probe (1, false discovery rate 20%) only by runs whose memory probe read "
        "within 15% of theirs (0 had such runs): 0 read over 15% above the slowest of those runs (slow↑), 0 over 15% "
        "below the fastest (slow↓), 1 within")


def test_a_pass_s_earlier_runs_are_its_fastest_and_slowest_median_in_any_state_left_alone() -> None:
    busy = timed("r0", [9.0, 9.0, 9.0], 1.0, other_cores=1.5)  # beside other work: not counted
    found = earlier_times(timed("r4", [0.5, 1.0, 3.0], 1.5), pd.concat([AT_SPEED, busy]))
    assert found["earlier_lo_s"].tolist() == pytest.approx([0.25e-3, 1.0e-3, 3.0e-3])  # r3, in a slow phase, counts
    assert found["earlier_hi_s"].tolist() == pytest.approx([0.5e-3, 1.1e-3, 4.2e-3])
    assert found["earlier_runs"].tolist() == [3, 3, 3]
    assert earlier_times(timed("r4", [0.5], 1.5, impl_code="cccc"), AT_SPEED).isna().all(axis=None)

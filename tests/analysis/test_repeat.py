"""Whether a run's paired speedups repeat (benchctl.analysis.repeat): held against the earlier runs of the same code."""

import pandas as pd
import pytest

from benchctl.analysis.repeat import (OTHER_STATE, SAME_STATE, earlier_rows, earlier_speedups, repeat_line,
                                      repeats, runs_with_earlier)
from benchctl.analysis.run_notes import notes
from benchctl.results.storage import RunWriter


def paired(run_id: str, speedups: list[float], lo: list[float] | None = None, hi: list[float] | None = None,
           **changed: object) -> pd.DataFrame:
    """One run's rows of `fused` timed in pairs with `py` at batch sizes 8, 16, ...: a speedup each, its interval."""
    n = len(speedups)
    rows = pd.DataFrame({"run_id": run_id, "op": "silu", "target": "op", "impl": "fused", "device": "cpu",
                         "dtype": "float32", "params": [f'{{"batch_size": {8 << i}}}' for i in range(n)],
                         "axis": "batch_size", "axis_value": [float(8 << i) for i in range(n)], "pass": "forward",
                         "status": "ok", "median_s": 0.001, "cpu_name": "AMD EPYC", "threads": 2,
                         "torch_version": "2.14.1", "allocator": "system",
                         "paired_with": "py", "impl_code": "aaaa", "partner_code": "bbbb",
                         "paired_speedup": speedups, "paired_ci_lo": lo or [s * 0.98 for s in speedups],
                         "paired_ci_hi": hi or [s * 1.02 for s in speedups]})
    return rows.assign(**changed)


def test_each_row_gets_the_earlier_runs_speedups_of_the_same_cell_pass_partner_and_code() -> None:
    earlier = pd.concat([paired("r1", [2.0, 3.0]), paired("r2", [2.2, 3.3])])
    assert earlier_speedups(paired("r3", [2.1, 3.1]), earlier)[SAME_STATE].tolist() == [(2.0, 2.2), (3.0, 3.3)]


def test_the_earlier_runs_in_the_other_machine_state_are_kept_apart_from_those_in_the_same() -> None:
    """A run at speed (canary 0.99x) and runs in a slow phase (over 1.15x): lstm_cell's cpp forward read 2.04x at
    speed and 3.0x slow on the 2-core VM."""
    earlier = pd.concat([paired("r1", [3.0], canary_ratio=[1.51]), paired("r2", [2.05], canary_ratio=[1.01]),
                         paired("r3", [3.1], canary_ratio=[1.17])])
    found = earlier_speedups(paired("r4", [2.04], canary_ratio=[0.99]), earlier)
    assert found[SAME_STATE].tolist() == [(2.05,)] and found[OTHER_STATE].tolist() == [(3.0, 3.1)]
    slow = earlier_speedups(paired("r4", [2.9], canary_ratio=[1.2]), earlier)
    assert slow[SAME_STATE].tolist() == [(3.0, 3.1)] and slow[OTHER_STATE].tolist() == [(2.05,)]
    # `↻` holds a speedup against its own state's runs only: 2.04x is inside at speed, whatever the slow runs read
    assert [r.earlier for r in repeats(paired("r4", [2.04], canary_ratio=[0.99]), earlier)] == [(2.05,)]
    assert repeats(paired("r4", [2.04], canary_ratio=[0.99]), earlier)[0].moved == 1.0


def test_a_run_without_a_canary_reading_is_of_neither_state() -> None:
    """No calibration, no canary: such a row is held only against runs as unknown, and has no other state."""
    earlier = pd.concat([paired("r1", [3.0], canary_ratio=[1.51]), paired("r2", [2.05], canary_ratio=[1.01]),
                         paired("r3", [2.5])])
    unknown = earlier_speedups(paired("r4", [2.4]), earlier)
    assert unknown[SAME_STATE].tolist() == [(2.5,)] and unknown[OTHER_STATE].tolist() == [()]
    at_speed = earlier_speedups(paired("r4", [2.04], canary_ratio=[0.99]), earlier)
    assert at_speed[SAME_STATE].tolist() == [(2.05,)] and at_speed[OTHER_STATE].tolist() == [(3.0,)]


@pytest.mark.parametrize("changed", [{"impl_code": "cccc"}, {"partner_code": "dddd"}, {"paired_with": "jit"},
                                     {"threads": 1}, {"cpu_name": "Intel Xeon"}, {"pass": "backward"},
                                     {"timing_mode": "cuda_graph"}, {"impl_code": None}, {"partner_code": None},
                                     {"torch_version": "2.13.0"}, {"allocator": "tcmalloc"}])
def test_a_row_of_other_code_partner_threads_machine_pass_or_timing_is_not_the_same_measurement(changed) -> None:
    found = earlier_speedups(paired("r2", [2.0]), paired("r1", [2.0], **changed))
    assert found[SAME_STATE].tolist() == found[OTHER_STATE].tolist() == [()]


def test_no_earlier_runs_and_rows_not_timed_in_pairs_get_nothing() -> None:
    assert earlier_speedups(paired("r2", [2.0]), None)[SAME_STATE].tolist() == [()]
    assert earlier_speedups(paired("r2", [2.0], paired_speedup=None), paired("r1", [2.0]))[SAME_STATE].tolist() == [()]
    assert repeat_line(paired("r2", [2.0]), pd.DataFrame()) is None


def test_a_speedup_moved_where_the_earlier_runs_median_lies_outside_its_interval() -> None:
    found = repeats(paired("r4", [2.0, 3.0], lo=[1.9, 2.9], hi=[2.1, 3.1]),
                    pd.concat([paired("r1", [2.05, 3.6]), paired("r2", [1.5, 3.0]), paired("r3", [2.0, 3.8])]))
    assert [r.earlier for r in found] == [(2.05, 1.5, 2.0), (3.6, 3.0, 3.8)]
    assert found[0].moved == 1.0  # one run of three outside: the median, 2.0, is inside
    assert found[1].moved == pytest.approx(3.6 / 3.1)  # the median, 3.6, is 16% over the interval's top


def test_the_line_says_how_many_moved_outside_and_where_the_furthest_went() -> None:
    now = paired("r3", [2.0, 3.0, 4.0], lo=[1.9, 2.9, 3.9], hi=[2.1, 3.1, 4.1])
    line = repeat_line(now, pd.concat([paired("r1", [1.6, 3.6, 4.0]), paired("r2", [1.5, 3.2, 4.05])]))
    assert line.startswith("2 of 3 paired speedups measured before (in up to 2 earlier run(s) of the same code on this "
                           "machine, in the same state: both in a slow phase or both at speed) read, at their median, "
                           "outside this run's interval (↻); the furthest, silu/op "
                           "fused forward at batch_size=8: 2.00x (1.90-2.10x) here, 1.50-1.60x before (median 1.55x).")


def test_the_line_gives_the_canary_beside_the_furthest_here_and_before() -> None:
    now = paired("r3", [2.0], canary_ratio=[1.2])
    earlier = pd.concat([paired("r1", [3.0], canary_ratio=[1.51]), paired("r2", [3.1], canary_ratio=[1.17]),
                         paired("r0", [2.0], canary_ratio=[0.99])])  # at speed: not held against a slow run
    assert ("2.00x (1.96-2.04x) here with the canary at 1.20x calibrated, 3.00-3.10x before (median 3.05x) with the "
            "canary at 1.17-1.51x calibrated. A paired interval") in repeat_line(now, earlier)


def test_a_speedup_that_follows_the_memory_probe_is_held_only_against_runs_near_its_probe() -> None:
    """grid_sample's py-imagegrad over py at image_size=1024 read 1.0-3.0x over thirteen runs of the same code on the
    2-core VM, the memory probe explaining it (rho -0.93): a run at 75 GB/s is held against runs near 75 GB/s."""
    earlier = pd.concat([paired("r1", [1.1], canary_ratio=[1.0], mem_gbps=[80.0]),
                         paired("r2", [2.9], canary_ratio=[1.0], mem_gbps=[40.0]),
                         paired("r3", [1.2], canary_ratio=[1.3], mem_gbps=[70.0])])
    now = paired("r4", [1.0], canary_ratio=[1.02], mem_gbps=[75.0], speedup_follows_memory=True)
    found = earlier_speedups(now, earlier)  # 65.2-86.2 GB/s: r1 at speed, r3 in a slow phase; not r2
    assert found[SAME_STATE].tolist() == [(1.1,)] and found[OTHER_STATE].tolist() == [(1.2,)]
    assert [r.earlier for r in repeats(now, earlier)] == [(1.1,)]
    # not known to follow it: held against every run at speed, at either memory reading
    assert earlier_speedups(now.assign(speedup_follows_memory=False), earlier)[SAME_STATE].tolist() == [(1.1, 2.9)]
    assert earlier_speedups(now.assign(mem_gbps=None), earlier)[SAME_STATE].tolist() == [(1.1, 2.9)]
    assert ("in the same state: both in a slow phase or both at speed; for the 1 that may follow the memory probe "
            "(false discovery rate 20%), with it within 15%) read, at their median, outside") in repeat_line(now, earlier)


def test_the_line_gives_the_memory_probe_beside_the_canary_where_the_rows_read_it() -> None:
    now = paired("r3", [2.0], canary_ratio=[1.2], mem_gbps=[74.8])
    earlier = pd.concat([paired("r1", [3.0], canary_ratio=[1.51], mem_gbps=[42.9]),
                         paired("r2", [3.1], canary_ratio=[1.17], mem_gbps=[58.2])])
    assert ("2.00x (1.96-2.04x) here with the canary at 1.20x calibrated and the memory probe at 74.8 GB/s, "
            "3.00-3.10x before (median 3.05x) with the canary at 1.17-1.51x calibrated and the memory probe at "
            "42.9-58.2 GB/s. A paired interval") in repeat_line(now, earlier)


def test_the_line_says_so_where_the_earlier_runs_read_inside() -> None:
    line = repeat_line(paired("r2", [2.0, 3.0]), paired("r1", [2.01, 2.99]))
    assert line == ("2 paired speedups measured before (in up to 1 earlier run(s) of the same code on this machine, "
                    "in the same state: both in a slow phase or both at speed) read, at their median, inside this run's "
                    "interval")


def test_a_row_without_an_interval_is_drawn_but_not_counted() -> None:
    now = paired("r2", [2.0], lo=[None], hi=[None])
    assert earlier_speedups(now, paired("r1", [3.0]))[SAME_STATE].tolist() == [(3.0,)]
    assert repeats(now, paired("r1", [3.0])) == []


def test_run_notes_carry_the_line_when_given_the_earlier_rows() -> None:
    now = paired("r2", [2.0])
    assert notes(now, [{"run_id": "r2"}], 2) == []
    assert notes(now, [{"run_id": "r2"}], 2, earlier=paired("r1", [3.0]))[0].text.startswith("1 of 1 paired speedups")


def test_the_earlier_rows_are_those_of_the_runs_before_it_in_its_folder(tmp_path) -> None:
    dirs = []
    for run_id, speedup in (("20261201-000000-aaaaaa", 2.0), ("20261202-000000-bbbbbb", 3.0),
                            ("20261203-000000-cccccc", 4.0)):
        writer = RunWriter(tmp_path, run_id, {})
        writer.write(paired(run_id, [speedup]).to_dict("records"))
        writer.finish()
        dirs.append(writer.dir)
    assert sorted(earlier_rows(dirs[2])["paired_speedup"]) == [2.0, 3.0]
    assert list(earlier_rows(dirs[2], limit=1)["paired_speedup"]) == [3.0]
    assert earlier_rows(dirs[0]).empty
    walked = list(runs_with_earlier(tmp_path, limit=1))  # each run read once, with the runs before it
    assert [run for run, _, _ in walked] == dirs and [list(rows["paired_speedup"]) for _, rows, _ in walked] == \
        [[2.0], [3.0], [4.0]]
    assert [list(before.get("paired_speedup", [])) for _, _, before in walked] == [[], [2.0], [3.0]]

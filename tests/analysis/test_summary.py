"""The end-of-run summary: medians in ms, speedups against the reference, statuses in place of times."""

import json

import pandas as pd
import pytest

from benchctl.analysis.partner_lines import partner_apart_line
from benchctl.analysis.summary import host_bound_line, legend, os_time_line, summary_tables


def rows():
    def r(impl, b, status="ok", median=None, pass_name="forward", H=64):
        return {"op": "lstm_cell", "target": "cell", "device": "cpu", "dtype": "float32", "pass": pass_name,
                "impl": impl, "axis": "batch_size", "axis_value": float(b), "status": status, "median_s": median,
                "noisy": False, "params": json.dumps({"batch_size": b, "H": H})}

    return pd.DataFrame([r("py", 1, median=0.004), r("py", 2, median=0.010), r("cpp", 1, median=0.001),
                         r("cpp", 2, status="oom"), r("py", 1, median=0.5, H=256)])


def test_summary_speedups_and_statuses():
    tables = summary_tables(rows(), {"lstm_cell": "py"})
    assert len(tables) == 2  # H=64 and H=256 are separate series
    small = next(t for t in tables if "H=64" in t.title)
    assert small.columns == ("pass", "impl \\ batch_size", "1", "2")
    assert small.rows == (("forward", "py", "4", "10"), ("forward", "cpp", "1 (4.0x)", "oom"))


def test_the_reference_comes_first_then_the_others_as_measured_not_as_written():
    """A cell measured again late in the sweep is written again at its end: its rows come last in the run's files,
    not in the table, which lists the reference first and the others in the order the sweep measured them."""
    def r(impl, pass_name, at):
        return {"op": "lstm_cell", "target": "cell", "device": "cpu", "dtype": "float32", "pass": pass_name,
                "impl": impl, "axis": "batch_size", "axis_value": 1.0, "status": "ok", "median_s": 0.001,
                "noisy": False, "params": json.dumps({"batch_size": 1}), "timestamp": f"2026-12-07T04:44:{at}"}

    written = [r("cpp", "backward", 30), r("cpp", "forward", 30), r("jit", "forward", 20), r("py", "forward", 40),
               r("py", "forward_backward", 40), r("py", "backward", 40), r("cpp", "forward_backward", 30)]
    table = summary_tables(pd.DataFrame(written), {"lstm_cell": "py"})[0]
    assert [row[:2] for row in table.rows] == [
        ("forward", "py"), ("backward", "py"), ("forward_backward", "py"), ("forward", "jit"),
        ("forward", "cpp"), ("backward", "cpp"), ("forward_backward", "cpp")]


def test_the_tables_share_one_legend_of_the_marks_they_carry():
    tables = summary_tables(rows(), {"lstm_cell": "py"})
    assert tables[0].title == "lstm_cell/cell H=64 on cpu (float32): median ms (speedup vs py)"
    assert legend(tables) is None  # no cell carries a mark
    marked = summary_tables(rows().assign(noisy=[True, False, False, False, False],
                                          canary_ratio=[1.0, 1.0, 1.3, None, 1.0]), {"lstm_cell": "py"})
    assert marked[0].rows[0][2] == "4 ~" and marked[0].rows[1][2] == "1 (4.0x) slow" and marked[1].marks == ()
    assert legend(marked) == "marks: ~ noisy; slow: the machine's canary over 15% slower than calibrated (a slow phase)"


def test_a_slow_pass_beyond_its_runs_at_speed_says_which_way():
    marked = summary_tables(rows().assign(canary_ratio=[1.3, 1.0, 1.3, 1.3, 1.3],  # py B=1 4 ms, cpp B=1 1 ms
                                          at_speed_lo_s=[0.002, None, 0.0006, None, 0.7],
                                          at_speed_hi_s=[0.003, None, 0.0009, None, 0.8]), {"lstm_cell": "py"})
    assert marked[0].rows[0][2] == "4 slow↑" and marked[0].rows[1][2] == "1 (4.0x) slow"  # 4 > 3 x 1.15; 1 < 1.035
    assert marked[1].rows[0][2] == "500 slow↓"  # H=256: 500 ms against 700-800 at speed
    assert legend(marked) == ("marks: slow: the machine's canary over 15% slower than calibrated (a slow phase); "
                              "slow↑: in a slow phase, and over 15% above the slowest earlier run of the same code "
                              "at speed (for a time that may follow the memory probe, with it within 15%); slow↓: in "
                              "a slow phase, and over 15% below the fastest earlier run of the same code at speed "
                              "(for a time that may follow the memory probe, with it within 15%)")


def test_a_cell_that_is_mostly_os_time_is_marked():
    df = rows().assign(sys_s=[0.0035, 0.001, None, None, 0.1])  # py B=1: 3.5 of 4 ms in the OS
    small = next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title)
    assert small.rows[0] == ("forward", "py", "4 os", "10")
    assert small.rows[1][2] == "1 (4.0x)"
    assert "os: mostly OS time" in legend([small])


def test_a_cell_whose_calls_kept_more_cores_busy_than_its_threads_is_marked():
    df = rows().assign(threads=[2, 2, 2, 2, 2], cpu_cores=[2.5, 1.9, 2.51, None, None])  # over 2 x 1.25 at 2.51
    small = next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title)
    assert small.rows == (("forward", "py", "4", "10"), ("forward", "cpp", "1 (4.0x) cores", "oom"))
    assert "cores: kept more CPU cores busy than torch's threads it was given" in legend([small])


def test_a_cell_torch_compile_recompiled_for_is_marked():
    df = rows().assign(recompiles=[None, None, 0, 1, 1])  # cpp B=1 compiled nothing again; B=2 failed
    small = next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title)
    assert small.rows == (("forward", "py", "4", "10"), ("forward", "cpp", "1 (4.0x)", "oom"))
    df = rows().assign(recompiles=[None, None, 1, 0, None])
    small = next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title)
    assert small.rows[1][2] == "1 (4.0x) recomp" and "recomp: torch.compile recompiled" in legend([small])


def test_a_gpu_cell_whose_host_side_takes_most_of_it_is_marked():
    df = rows().assign(host_s=[0.0038, 0.002, 0.0002, None, None])  # py B=1: 3.8 of 4 ms issuing work
    small = next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title)
    assert small.rows[0] == ("forward", "py", "4 host", "10")  # B=2: 2 of 10 ms, GPU-bound
    assert small.rows[1][2] == "1 (4.0x)"
    assert "host: host-bound" in legend([small])


def test_host_bound_gpu_passes_get_a_line_that_points_to_cuda_graphs():
    df = rows().assign(device="cuda", host_s=[0.0038, 0.002, 0.0009, None, 0.45])  # 3 of the 4 ok: host-bound
    assert host_bound_line(df) == ("3 of 4 GPU passes were host-bound (host): their times are the host issuing "
                                   "each call (Python, dispatch, launches), not the kernels; run again with "
                                   "--cuda-graph to time the kernels")
    assert host_bound_line(df.assign(timing_mode="cuda_graph")) is None  # graph replays: the kernels' time
    assert host_bound_line(df.assign(host_s=0.0001)) is None and host_bound_line(rows()) is None  # none; a CPU run


def test_a_cell_measured_while_the_machines_memory_bandwidth_was_low_is_marked():
    df = rows().assign(mem_gbps=[40.0, 29.0, 31.0, None, 42.0])  # median 35.5: below 26.6 is marked
    assert next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title).rows[0][3] == "10"
    df.loc[1, "mem_gbps"] = 26.0
    small = next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title)
    assert small.rows == (("forward", "py", "4", "10 mem"), ("forward", "cpp", "1 (4.0x)", "oom"))
    assert "mem: machine's memory bandwidth low" in legend([small])


def test_a_table_says_when_its_gpu_times_are_graph_replays_and_keeps_them_apart_from_eager_ones():
    eager = rows().assign(device="cuda", timing_mode="eager", flush_l2=False)
    graph = eager.assign(timing_mode="cuda_graph", median_s=eager["median_s"] / 8)
    titles = sorted(t.title.split(":")[0] for t in summary_tables(pd.concat([eager, graph]), {"lstm_cell": "py"}))
    assert titles == ["lstm_cell/cell H=256 on cuda (cuda_graph) (float32)", "lstm_cell/cell H=256 on cuda (float32)",
                      "lstm_cell/cell H=64 on cuda (cuda_graph) (float32)", "lstm_cell/cell H=64 on cuda (float32)"]


def test_a_param_left_unset_is_left_out_of_the_table_title():
    from benchctl.analysis.summary import _others
    assert _others('{"H": 64, "I": null, "batch_size": 16}', "batch_size") == "H=64"
    assert _others(None, "batch_size") == ""  # a row written by hand, with no params: once a TypeError at `run`'s end


def test_the_summary_gives_the_paired_speedup():
    df = rows().assign(round_medians_s=[[0.004, 0.004, 0.006], None, [0.001, 0.002, 0.002], None, None],
                       median_s=[0.004, 0.010, 0.002, None, 0.5])
    small = next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title)
    assert small.rows[1][2] == "2 (3.0x)"  # rounds 4.0x, 2.0x, 3.0x; the medians' ratio would say 2.0x


def test_passes_whose_partner_read_far_from_its_own_row_are_marked_and_counted():
    df = rows().iloc[[0, 2]].assign(median_s=[0.085e-3, 0.0668e-3])  # py and cpp at batch size 1
    paired = {"paired_with": [None, "py"], "paired_speedup": [None, 2.32],
              "partner_samples_s": [None, [0.16e-3, 0.15e-3, 0.17e-3]]}
    tables = summary_tables(df.assign(**paired), {"lstm_cell": "py"})
    assert tables[0].rows[1][2] == "0.0668 (2.32x≠)" and "≠" in tables[0].marks
    assert "≠ the reference read over 25% off its own row in these pairs" in legend(tables)
    line = partner_apart_line(df.assign(**paired))
    assert line is not None and line.startswith("1 of 1 passes timed in pairs read their partner over 25% off")
    assert "the widest, lstm_cell/cell forward at batch_size=1: py 0.085 ms in its row, 0.16 ms beside cpp" in line
    assert "in 1 the canary was not read (no calibration); each speedup is its pairs'" in line
    near = {**paired, "partner_samples_s": [None, [0.09e-3] * 3]}
    assert partner_apart_line(df.assign(**near)) is None
    assert summary_tables(df.assign(**near), {"lstm_cell": "py"})[0].rows[1][2] == "0.0668 (2.32x)"


@pytest.mark.parametrize("canaries, cause, mark", [  # py: 0.085 ms in its row, 0.16 ms beside cpp (1.88x)
    ((1.0, 1.8), "the canary's move between the two cells accounts for every one (the machine changed speed)", "≠"),
    ((1.0, 1.05), "accounts for none of them (the partner's time moved beside the cell, timed by turns with", "?≠"),
    ((1.0, 1.4), "accounts for none of them", "?≠"),  # the canary's move leaves py 1.34x its row beside cpp: over 25%
    ((1.5, 1.0), "accounts for none of them", "?≠"),  # the machine faster at cpp's cell: py would have read faster
])
def test_the_canary_says_whether_the_machine_or_the_pairs_moved_the_partner(canaries, cause, mark):
    """Where the pairing moved the partner, the pairs' speedup and the medians' ratio are two answers: `?`."""
    df = rows().iloc[[0, 2]].assign(median_s=[0.085e-3, 0.0668e-3], canary_ratio=list(canaries),
                                    paired_with=[None, "py"], paired_speedup=[None, 2.32],
                                    partner_samples_s=[None, [0.16e-3, 0.15e-3, 0.17e-3]])
    line = partner_apart_line(df)
    assert f"0.16 ms beside cpp, the canary {canaries[0]:.2f}x and {canaries[1]:.2f}x calibrated): " in line
    assert cause in line
    (table,) = summary_tables(df, {"lstm_cell": "py"})
    assert table.rows[1][2].startswith(f"0.0668 (2.32x{mark})")


@pytest.mark.parametrize("flushed", [False, True])
def test_where_the_pairing_moved_a_warm_partner_the_line_points_to_cold_caches(flushed):
    """grid_sample at 1024 on the 2-core VM: py 0.22 ms alone, 0.29 ms beside cpp on warm caches; on flushed ones,
    0.369 ms alone and beside it. A run already flushed is not told to flush."""
    from benchctl.analysis.partner_lines import COLD
    df = rows().iloc[[0, 2]].assign(median_s=[0.085e-3, 0.0668e-3], canary_ratio=[1.0, 1.0], flush_l2=flushed,
                                    paired_with=[None, "py"], paired_speedup=[None, 2.32],
                                    partner_samples_s=[None, [0.16e-3, 0.15e-3, 0.17e-3]])
    line = partner_apart_line(df)
    assert "share the caches and the memory" in line and (COLD in line) is not flushed
    assert line.endswith("); each speedup is its pairs', timed side by side")


def test_passes_the_machine_and_the_pairs_moved_are_counted_apart():
    """Two passes apart, the canary moving with one of them: each cause with its count."""
    df = rows().iloc[[0, 2, 1, 3]].assign(status="ok", median_s=[0.085e-3, 0.0668e-3, 0.2e-3, 0.1e-3],
                                          canary_ratio=[1.0, 1.8, 1.0, 1.0], paired_with=[None, "py", None, "py"],
                                          paired_speedup=[None, 2.32, None, 2.0],
                                          partner_samples_s=[None, [0.16e-3] * 3, None, [0.4e-3] * 3])
    line = partner_apart_line(df)
    assert line.startswith("2 of 2 passes timed in pairs")
    assert ("in 1 the canary's move between the two cells accounts for it (the machine changed speed), in 1 it does "
            "not (the partner's time moved beside the cell") in line


@pytest.mark.parametrize("py_row", [{"other_cores": 1.0}, {"stop": "disturbed"}])
def test_a_partner_other_work_moved_is_counted_as_that_works_not_the_pairings(py_row):
    """A busy neighbour: py 31.7 ms in its row and 0.079 ms beside cpp, the canary 96x and 1.02x calibrated, which
    the canary's ratio does not account for (the stalls come in whole scheduler ticks): not the pairing's doing."""
    df = rows().iloc[[0, 2]].assign(median_s=[31.7e-3, 0.0362e-3], canary_ratio=[96.37, 1.02],
                                    paired_with=[None, "py"], paired_speedup=[None, 2.19],
                                    partner_samples_s=[None, [0.0792e-3] * 3])
    df.loc[df.index[0], list(py_row)] = list(py_row.values())
    line = partner_apart_line(df)
    assert ("in 1 a side was timed beside other work or stopped disturbed (its row is that work's as much as the "
            "code's); each speedup is its pairs'") in line and "share the caches" not in line
    assert "accounts for none of them" in partner_apart_line(df.assign(other_cores=0.0, stop=None))


def test_a_pass_is_slow_in_a_slow_phase_not_in_the_drift_of_a_machine_at_speed():
    """A quiet quick sweep read its canaries at 1.00-1.19x the calibrated time, 77% over 1.05; slow phases read
    1.34-1.54x (docs/measuring.md, "The canary")."""
    from benchctl.results.schema import slow_machine
    assert [slow_machine({"canary_ratio": r}) for r in (0.98, 1.07, 1.15, 1.16, 1.4)] == [False, False, False, True,
                                                                                          True]
    assert not slow_machine({"canary_ratio": None}) and not slow_machine({})


def test_passes_mostly_in_the_os_get_a_line_naming_the_worst_and_what_keeps_its_memory():
    df = rows().assign(sys_s=[0.0035, 0.001, 0.0002, None, 0.4], page_faults=[10.0, 0, 0, None, 49152.0],
                       allocator="system")  # py H=256: 400 ms of OS time (two threads) in a 500 ms call
    line = os_time_line(df)
    assert line.startswith("2 of 4 CPU passes were mostly OS time (os: the OS's CPU time a call, on all threads, over "
                           "half the median; the most, lstm_cell/cell py forward at batch_size=1: 3.5 ms of it a call "
                           "against a median of 4 ms, 10 page faults): the system allocator gives a large buffer back")
    assert line.endswith("`--allocator tcmalloc` keeps such memory for reuse and times the code without that")
    assert "jemalloc (at its defaults) gives" in os_time_line(df.assign(allocator="jemalloc"))
    assert "under tcmalloc too" in os_time_line(df.assign(allocator="tcmalloc"))
    assert "system calls, not page faults" in os_time_line(df.assign(page_faults=0.0))
    assert os_time_line(rows()) is None and os_time_line(df.assign(sys_s=0.0001)) is None
    assert os_time_line(df.assign(device="cuda")) is None  # a GPU pass's OS time is its host's, not marked here

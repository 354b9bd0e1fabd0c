"""The end-of-run summary: medians in ms, speedups against the reference, statuses in place of times."""

import json

import pandas as pd

import pytest

from benchctl.analysis.summary import (absent_devices, host_bound_line, range_label, slow_calibration_line, speedup,
                                      speedup_label, speedup_range, summary_tables)


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


def test_a_cell_that_is_mostly_os_time_is_marked():
    df = rows().assign(sys_s=[0.0035, 0.001, None, None, 0.1])  # py B=1: 3.5 of 4 ms in the OS
    small = next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title)
    assert small.rows[0] == ("forward", "py", "4 os", "10")
    assert small.rows[1][2] == "1 (4.0x)"
    assert "os: mostly OS time" in small.title


def test_a_cell_torch_compile_recompiled_for_is_marked():
    df = rows().assign(recompiles=[None, None, 0, 1, 1])  # cpp B=1 compiled nothing again; B=2 failed
    small = next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title)
    assert small.rows == (("forward", "py", "4", "10"), ("forward", "cpp", "1 (4.0x)", "oom"))
    df = rows().assign(recompiles=[None, None, 1, 0, None])
    small = next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title)
    assert small.rows[1][2] == "1 (4.0x) recomp" and "recomp: torch.compile recompiled" in small.title


def test_a_gpu_cell_whose_host_side_takes_most_of_it_is_marked():
    df = rows().assign(host_s=[0.0038, 0.002, 0.0002, None, None])  # py B=1: 3.8 of 4 ms issuing work
    small = next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title)
    assert small.rows[0] == ("forward", "py", "4 host", "10")  # B=2: 2 of 10 ms, GPU-bound
    assert small.rows[1][2] == "1 (4.0x)"
    assert "host: host-bound" in small.title


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
    assert "mem: machine's memory bandwidth low" in small.title


def test_a_device_where_nothing_ran_is_one_line_not_tables():
    reason = "no CUDA device: torch.cuda.is_available() is False"
    gpu = [{**r, "device": "cuda", "status": "unavailable", "median_s": None, "message": reason,
            "pass": p} for r in rows().to_dict("records") for p in ("forward", "backward")]
    df = pd.concat([rows(), pd.DataFrame(gpu)], ignore_index=True)
    tables = summary_tables(df, {"lstm_cell": "py"})
    assert len(tables) == 2 and all(" on cpu " in t.title for t in tables)
    [absent] = absent_devices(df)
    assert absent.device == "cuda" and absent.cells == 5  # 5 cells, two passes each
    assert absent.line() == f"cuda: not available here (5 cells recorded unavailable: {reason})"
    assert absent_devices(rows()) == []  # a device with one row that ran keeps its tables


def test_a_large_slowdown_never_reads_zero():
    from benchctl.analysis.summary import speedup_text

    assert speedup_text(4.04) == "4.0x" and speedup_text(0.96) == "0.96x" and speedup_text(0.0329) == "0.033x"


def test_a_table_says_when_its_gpu_times_are_graph_replays_and_keeps_them_apart_from_eager_ones():
    eager = rows().assign(device="cuda", timing_mode="eager", flush_l2=False)
    graph = eager.assign(timing_mode="cuda_graph", median_s=eager["median_s"] / 8)
    titles = sorted(t.title.split(":")[0] for t in summary_tables(pd.concat([eager, graph]), {"lstm_cell": "py"}))
    assert titles == ["lstm_cell/cell H=256 on cuda (cuda_graph) (float32)", "lstm_cell/cell H=256 on cuda (float32)",
                      "lstm_cell/cell H=64 on cuda (cuda_graph) (float32)", "lstm_cell/cell H=64 on cuda (float32)"]


def test_a_param_left_unset_is_left_out_of_the_table_title():
    from benchctl.analysis.summary import _others
    assert _others('{"H": 64, "I": null, "batch_size": 16}', "batch_size") == "H=64"


def test_a_speedup_measured_in_rounds_is_the_median_of_the_rounds_own_ratios():
    # The machine slowed after round 1: py's pooled median came from its fast rounds, cpp's from its slow
    # ones, so the medians' ratio (0.40 / 0.25 = 1.6x) pairs two different machines.
    py = {"median_s": 0.40, "round_medians_s": [0.40, 0.40, 0.55]}
    cpp = {"median_s": 0.25, "round_medians_s": [0.19, 0.25, 0.25]}
    assert speedup(py, cpp) == pytest.approx(0.40 / 0.19)  # rounds: 2.11x, 1.6x, 2.2x
    assert speedup({**py, "round_medians_s": None}, cpp) == pytest.approx(1.6)  # one round: the medians
    assert speedup(py, {**cpp, "round_medians_s": [0.19, 0.25]}) == pytest.approx(1.6)  # rounds that do not pair
    assert speedup({**py, "round_medians_s": float("nan")}, cpp) == pytest.approx(1.6)  # a column parquet left empty
    stalled = [0.40, float("nan"), 0.55]  # round 2: every sample set aside, no median
    assert speedup({**py, "round_medians_s": stalled}, cpp) == pytest.approx((0.40 / 0.19 + 0.55 / 0.25) / 2)
    assert speedup_range({**py, "round_medians_s": stalled}, cpp) == pytest.approx((0.40 / 0.19, 0.55 / 0.25))
    alone = [float("nan"), float("nan"), 0.55]  # one round both gave a median: the medians' ratio
    assert speedup({**py, "round_medians_s": alone}, cpp) == pytest.approx(1.6)


def test_a_speedup_timed_in_alternation_with_the_baseline_is_the_pairs_median_ratio():
    py = {"impl": "py", "median_s": 0.40, "round_medians_s": [0.40, 0.40, 0.55]}
    cpp = {"impl": "cpp", "median_s": 0.25, "round_medians_s": [0.19, 0.25, 0.25], "paired_with": "py",
           "paired_speedup": 1.9}
    assert speedup(py, cpp) == pytest.approx(1.9)
    assert speedup({**py, "impl": "loop"}, cpp) == pytest.approx(0.40 / 0.19)  # paired with another
    assert speedup(py, {**cpp, "paired_speedup": float("nan")}) == pytest.approx(0.40 / 0.19)  # left empty


def test_a_paired_speedup_reads_with_the_half_width_of_its_interval():
    py = {"impl": "py", "median_s": 0.40}
    cpp = {"impl": "cpp", "median_s": 0.20, "paired_with": "py", "paired_speedup": 2.04, "paired_ci_lo": 2.03,
           "paired_ci_hi": 2.0502}
    assert speedup_label(py, cpp) == "2.04x ±0.5%"
    assert speedup_label(py, {**cpp, "paired_with": None}) == "2.0x"  # the medians' ratio, no interval
    few = {**cpp, "paired_ci_lo": None, "paired_ci_hi": float("nan")}  # too few pairs for an interval
    assert speedup_label(py, few) == "2.04x" and range_label(py, few) == "2.04x" and speedup_range(py, few) is None


def test_a_speedup_moves_as_far_as_its_rounds_ratios_or_its_paired_interval():
    py = {"impl": "py", "median_s": 0.40, "round_medians_s": [0.40, 0.40, 0.55]}
    cpp = {"impl": "cpp", "median_s": 0.25, "round_medians_s": [0.19, 0.25, 0.25]}
    assert speedup_range(py, cpp) == pytest.approx((1.6, 2.2))  # rounds: 2.11x, 1.6x, 2.2x
    assert range_label(py, cpp) == "2.11x (1.60-2.20)"
    assert speedup_label(py, cpp) == "2.1x"  # every round says cpp is faster: no mark
    one_round = {**cpp, "round_medians_s": None}
    assert speedup_range(py, one_round) is None and range_label(py, one_round) == "1.60x"
    assert range_label(py, py) == "1.00x"  # the baseline itself
    paired = {**cpp, "paired_with": "py", "paired_speedup": 2.04, "paired_ci_lo": 2.03, "paired_ci_hi": 2.0502}
    assert speedup_range(py, paired) == (2.03, 2.0502) and range_label(py, paired) == "2.04x ±0.5%"


def test_a_speedup_whose_rounds_disagree_on_which_is_faster_is_marked():
    py = {"impl": "py", "median_s": 0.30, "round_medians_s": [0.30, 0.30, 0.30]}
    cpp = {"impl": "cpp", "median_s": 0.29, "round_medians_s": [0.27, 0.29, 0.32]}  # 1.11x, 1.03x, 0.94x
    assert speedup_label(py, cpp) == "1.0x?"
    assert range_label(py, cpp) == "1.03x (0.94-1.11)"
    tiny = {**cpp, "median_s": 0.003, "round_medians_s": [0.0029, 0.003, 0.0031]}
    assert range_label(py, tiny) == "100x (96.77-103)"  # three significant digits from 100


def test_a_speedup_against_a_disturbed_row_is_marked_as_not_holding():
    py = {"impl": "py", "median_s": 7.8e-3, "stop": "disturbed"}  # every round stalled: no range to show it
    cpp = {"impl": "cpp", "median_s": 3.2e-5, "stop": "converged"}
    assert speedup_label(py, cpp) == "243.8x?" and range_label(py, cpp) == "244x?"
    assert speedup_label(cpp, py) == "0.0041x?"  # the disturbed side measured against a clean baseline
    assert range_label(py, {**cpp, "round_medians_s": [3.2e-5] * 3}) == "244x?"
    assert speedup_label({**py, "stop": "converged"}, cpp) == "243.8x"  # both clean: no mark


def test_a_run_whose_canary_read_far_under_its_calibrated_time_says_the_calibration_was_slow():
    ran = pd.DataFrame({"status": ["ok"] * 6 + ["error"], "canary_ratio": [0.55, 0.7, 0.71, 0.73, 0.6, 0.72, 0.1]})
    line = slow_calibration_line(ran)
    assert line is not None and line.startswith("the canary read a median 0.70x its calibrated time over 6 CPU passes")
    assert slow_calibration_line(ran.assign(canary_ratio=[0.9, 1.0, 1.1, 0.95, 1.2, 0.88, 0.1])) is None  # at speed
    assert slow_calibration_line(ran.iloc[1:]) is None  # five passes are too few to say
    assert slow_calibration_line(ran.drop(columns="canary_ratio")) is None  # a GPU run


def test_the_summary_gives_the_paired_speedup():
    df = rows().assign(round_medians_s=[[0.004, 0.004, 0.006], None, [0.001, 0.002, 0.002], None, None],
                       median_s=[0.004, 0.010, 0.002, None, 0.5])
    small = next(t for t in summary_tables(df, {"lstm_cell": "py"}) if "H=64" in t.title)
    assert small.rows[1][2] == "2 (3.0x)"  # rounds 4.0x, 2.0x, 3.0x; the medians' ratio would say 2.0x

"""The lines that say what a run's numbers carry (benchctl.analysis.run_notes): one list for `run` and the report."""

import pandas as pd

from benchctl.analysis import run_notes
from benchctl.analysis.run_notes import notes
from benchctl.results.guard import TAMPERED


def ran(run_id: str = "run-a", sys_s: float = 0.0) -> pd.DataFrame:
    return pd.DataFrame({"run_id": run_id, "op": "silu", "target": "op", "impl": ["py", "fused"], "device": "cpu",
                         "dtype": "float32", "params": "{}", "axis": "batch_size", "axis_value": 8.0, "pass": "forward",
                         "status": "ok", "median_s": [0.004, 0.002], "sys_s": [sys_s, 0.0],
                         "page_faults": [1000.0, 0.0], "allocator": "system", "stop": "converged"})


BUSY = {"cores": 1.0, "share": 0.5}


def test_a_quiet_run_carries_no_line() -> None:
    assert notes(ran(), [{"run_id": "run-a"}], 2) == []


def test_the_lines_come_in_one_list_from_the_rows_and_the_runs_metadata() -> None:
    lines = notes(ran(sys_s=0.003), [{"run_id": "run-a", "busy_stretch": BUSY, TAMPERED: [{"during": "silu"}]}], 2)
    assert [n.heading for n in lines] == [run_notes.OS_TIME, run_notes.BUSY, run_notes.CHANGED]
    assert lines[0].text.startswith("1 of 2 CPU passes were mostly OS time (os: ")
    assert lines[1].text.startswith("other work kept about 1.0 of 2 cores busy through 50% of this run: no CPU pass")
    assert lines[2].text.startswith("run run-a: its files were changed by something other than benchctl while it ran")


def test_a_report_of_several_runs_names_the_run_of_each_busy_line_and_counts_its_own_passes() -> None:
    rows = pd.concat([ran("run-a"), ran("run-b").assign(stop="disturbed")])
    metas = [{"run_id": "run-a"}, {"run_id": "run-b", "busy_stretch": BUSY, "environment": {"cpu_count": 4}}]
    assert [n.text for n in notes(rows, metas)] == ["run run-b: other work kept about 1.0 of 4 cores busy through 50% of this run: 2 of 2 "
                                  "CPU passes stopped `disturbed`, their times as much its as the code's (the report's "
                                  "machine chart shows when); measure again with it gone, or with --threads that fit "
                                  "in the cores it left"]


def test_a_run_whose_threads_ran_slow_on_a_machine_where_one_thread_holds_says_so_from_its_own_calibration() -> None:
    rows = ran().assign(threads=2, canary_ratio=1.7)
    rows = pd.concat([rows] * 3)  # six passes on two threads, all marked slow
    windows = {"1": [3.96e-4, 3.98e-4], "2": [2.59e-4, 4.48e-4]}
    lines = notes(rows, [{"run_id": "run-a", "peaks": {"cpu": {"canary_windows_by_threads": windows}}}], 2)
    assert [n.heading for n in lines] == [run_notes.SLOW_RUN, run_notes.THREADS]
    assert lines[0].text.startswith("the canary read a median 1.70x its calibrated time over 6 CPU")
    assert lines[1].text.startswith("6 of 6 CPU passes on 2 threads were marked slow: this machine's speed moves on 2 ")
    assert notes(rows, [{"run_id": "run-a"}], 2) == lines[:1]  # a run without a calibration says nothing of it

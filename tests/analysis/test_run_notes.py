"""The lines that say what a run's numbers carry (benchctl.analysis.run_notes): one list for `run` and the report."""

import pandas as pd

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
    assert len(lines) == 3
    assert lines[0].startswith("1 of 2 CPU passes were mostly OS time (os: ")
    assert lines[1].startswith("other work kept about 1.0 of 2 cores busy through 50% of this run: no CPU pass")
    assert lines[2].startswith("run run-a: its files were changed by something other than benchctl while it ran")


def test_a_report_of_several_runs_names_the_run_of_each_busy_line_and_counts_its_own_passes() -> None:
    rows = pd.concat([ran("run-a"), ran("run-b").assign(stop="disturbed")])
    metas = [{"run_id": "run-a"}, {"run_id": "run-b", "busy_stretch": BUSY, "environment": {"cpu_count": 4}}]
    assert notes(rows, metas) == ["run run-b: other work kept about 1.0 of 4 cores busy through 50% of this run: 2 of 2 "
                                  "CPU passes stopped `disturbed`, their times as much its as the code's (the report's "
                                  "machine chart shows when); measure again with it gone, or with --threads that fit "
                                  "in the cores it left"]

"""A pass's typed result: the row a real cell gives, its columns checked against the schema, and rounds
pooled by merge() into the statistics their samples give."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from benchctl.machine import allocator
from benchctl.measure.execute import Settings, run_cell
from benchctl.measure.result import PassResult, UnknownColumn
from benchctl.measure.stats import median_ci, summarize
from benchctl.measure.timing import Policy
from benchctl.ops.cells import Cell
from benchctl.results import storage
from benchctl.results.schema import COLUMNS, clean_samples, own_aside
from benchctl.sweep.rounds import merge

FAST = Settings(policy=Policy(warmup=1, warmup_time=0.0, min_samples=3, min_time=0.0, max_time=2.0))
SMALL = {"batch_size": 2, "C": 3, "H": 16, "W": 20, "k": 5}
# The columns a timed CPU pass's row has always had: what the cell is, its gate, its samples and statistics,
# its rates, and the machine's facts measured around it ...
TIMED = {"op", "target", "impl", "device", "dtype", "params", "axis", "axis_value", "batch_size", "allocator",
         "pass", "status", "message", "correct", "max_abs_err", "max_rel_err", "tolerance", "check_params",
         "timing_mode", "flush_l2", "compile_s", "best_config", "samples_s", "noisy", "stop", "peak_mem_bytes", "wall_s",
         "n", "median_s", "iqr_s", "mean_s", "std_s", "min_s", "max_s", "ci_lo_s", "ci_hi_s", "mem_gbps",
         "canary_s", "canary_ratio", "page_faults", "sys_s", "cpu_cores", "threads", "flops", "bytes", "flops_source",
         "gflops", "gbps"}
# ... and those of a machine that can watch its run queue (interference.py)
WATCHED = {"disturbed", "disturbed_share", "wait_s"}
# ... and of a machine with /proc, whose other processes' CPU time a pass reads (machine/load.py)
NEIGHBOURS = {"other_cores"}
# ... and of a pass whose audit drew data never given before (fresh.py): those calls, out of its statistics
AUDITED = {"probe"}


@pytest.fixture(scope="module")
def hoconv_rows(builtin_ops):
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32", SMALL, passes=("forward", "backward"))
    return cell, run_cell(cell, FAST)


def test_a_real_cells_rows_have_their_columns_and_values_and_round_trip(hoconv_rows):
    cell, rows = hoconv_rows
    resolved = cell.resolve()
    assert [r["pass"] for r in rows] == ["forward", "backward"]
    for row in rows:
        assert TIMED <= set(row) <= TIMED | WATCHED | NEIGHBOURS | AUDITED, set(row) ^ TIMED
        assert ("other_cores" in row) == Path("/proc/stat").exists() and row.get("other_cores", 0.0) >= 0.0
        assert PassResult.from_row(row).to_row() == row
        same = {"op": "hoconv2d", "target": "filter", "impl": "py", "device": "cpu", "dtype": "float32",
                "params": cell.params_json, "axis": resolved.op.axis, "axis_value": float(SMALL[resolved.op.axis]),
                "batch_size": 2, "allocator": allocator.current(), "status": "ok", "correct": True,
                "tolerance": 2e-4,
                "check_params": json.dumps(resolved.op.params_for_check(cell.params), sort_keys=True),
                "timing_mode": "eager", "best_config": None, "threads": torch.get_num_threads()}
        assert {k: row[k] for k in same} == same
        stats = summarize(clean_samples(row["samples_s"], own_aside(row)))
        assert {k: row[k] for k in stats} == stats
        assert row["gflops"] == row["flops"] / row["median_s"] * 1e-9
        assert row["gbps"] == row["bytes"] / row["median_s"] * 1e-9
    forward_flops = resolved.target.flops(cell.params)
    assert rows[0]["flops"] == forward_flops == 2 * 2 * 3 * 16 * 20 * 25


def test_a_row_that_never_ran_is_the_cells_columns_and_why(fixture_ops):
    params = {"batch_size": 4, "dim": 8}
    cell = Cell.make("faulty", "op", "noreason", "cpu", "float32", params)
    rows = run_cell(cell, FAST)
    assert rows == [{"op": "faulty", "target": "op", "impl": "noreason", "device": "cpu", "dtype": "float32",
                     "params": cell.params_json, "axis": "batch_size", "axis_value": 4.0, "batch_size": 4,
                     "allocator": allocator.current(), "timing_mode": "eager", "flush_l2": False, "pass": p,
                     "status": "unavailable",
                     "message": "needs a thing this machine lacks"} for p in cell.passes]


def test_the_rows_storage_writes_are_the_results_rows(hoconv_rows, tmp_path):
    _, rows = hoconv_rows
    writer = storage.RunWriter(tmp_path, storage.new_run_id(), {})
    writer.write(rows)
    df = storage.load_run(writer.dir).set_index("pass")
    for row in rows:
        for column in ("impl", "status", "median_s", "ci_lo_s", "ci_hi_s", "gflops", "flops", "tolerance"):
            assert df.loc[row["pass"], column] == row[column]
        assert list(df.loc[row["pass"], "samples_s"]) == row["samples_s"]


def test_merge_of_two_real_rounds_gives_the_pooled_samples_median_and_interval(builtin_ops):
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32", SMALL, passes=("forward",))
    rounds = [run_cell(replace(cell, checked=True), FAST) for _ in range(2)]
    merged = PassResult.merge([rows[0] for rows in rounds])
    samples = [s for rows in rounds for s in rows[0]["samples_s"]]
    flags = [f for rows in rounds for f in own_aside(rows[0]) or [False] * len(rows[0]["samples_s"])]
    clean = [s for s, f in zip(samples, flags) if not f] or samples
    assert merged.samples_s == samples and merged.rounds == 2 and merged.n == len(clean)
    assert merged.round_medians_s == [rows[0]["median_s"] for rows in rounds]
    if merged.mode_fast_s is None:  # the rounds agreed: the pooled samples' median, interval and rates
        assert merged.median_s == summarize(clean)["median_s"] == pytest.approx(float(np.median(clean)))
        assert (merged.ci_lo_s, merged.ci_hi_s) == median_ci(clean)
        assert merged.gflops == merged.flops / merged.median_s * 1e-9
    else:  # more than 10% apart (a busy machine): the median of the mode of most rounds, then samples
        assert merged.median_s in (merged.mode_fast_s, merged.mode_slow_s)
    assert merge(rounds) == [merged.to_row()]


def test_merge_pools_clean_samples_and_the_processes_they_came_from():
    one = PassResult(pass_="forward", status="ok", samples_s=[1.0, 9.0, 1.02], disturbed=[False, True, False],
                     median_s=1.01, process=0)
    two = PassResult(pass_="forward", status="ok", samples_s=[1.03, 1.05], disturbed=[False, False],
                     median_s=1.04, process=1)
    merged = PassResult.merge([one, two])
    assert merged.n == 4 and merged.median_s == pytest.approx(float(np.median([1.0, 1.02, 1.03, 1.05])))
    assert (merged.ci_lo_s, merged.ci_hi_s) == median_ci([1.0, 1.02, 1.03, 1.05])
    assert merged.disturbed_share == 1 / 5 and merged.processes == 2 and merged.mode_fast_s is None
    assert merged.process_medians_s == pytest.approx([1.01, 1.04])
    assert merged.process_spread == pytest.approx(1.04 / 1.01 - 1)
    assert "process" not in merged.to_row() and merged.to_row()["pass"] == "forward"


def test_a_round_over_10_percent_slower_than_another_of_its_process_is_set_aside():
    """A slow phase of the VM slowed one round of process 1 by 1.6x, and its canary 1.44x; its other round
    was not."""
    def one(process: int, median: float, canary_s: float = 2.5e-4) -> PassResult:
        return PassResult(pass_="forward", status="ok", samples_s=[median] * 5, median_s=median, process=process,
                          canary_s=canary_s)

    merged = PassResult.merge([one(0, 0.316), one(1, 0.499, 3.6e-4), one(2, 0.315), one(0, 0.320), one(1, 0.318),
                               one(2, 0.317)])
    assert merged.rounds == 6 and merged.round_medians_s == [0.316, 0.499, 0.315, 0.320, 0.318, 0.317]
    assert merged.n == 25 and 0.499 not in merged.samples_s and merged.mode_slow_s is None
    assert merged.process_medians_s == pytest.approx([0.318, 0.318, 0.316])
    assert merged.median_s == pytest.approx(0.317) and not merged.noisy
    assert merged.message.startswith("round(s) 2 set aside: over 10% slower than another round of the same")
    slow_process = PassResult.merge([one(0, 0.316), one(1, 0.499), one(0, 0.320), one(1, 0.501)])
    assert slow_process.n == 20  # slow in every round: its rounds are kept, and the spread shows it
    assert slow_process.process_spread == pytest.approx(0.5 / 0.318 - 1)


def test_a_round_timed_beside_other_work_is_set_aside_where_another_of_its_process_was_not():
    """A compile that came and went: py's backward at B=16 read 0.339 ms in a round timed beside it, its canary at
    speed (one thread to spare), and 0.214 ms in the same process's quiet re-measurement."""
    def one(process: int, median: float, other_cores: float) -> PassResult:
        return PassResult(pass_="backward", status="ok", samples_s=[median] * 5, median_s=median, process=process,
                          canary_s=2.5e-4, other_cores=other_cores)

    merged = PassResult.merge([one(0, 0.339e-3, 1.0), one(1, 0.214e-3, 0.02), one(0, 0.216e-3, 0.03),
                               one(1, 0.213e-3, 0.01)])
    assert merged.n == 15 and merged.median_s == pytest.approx(0.214e-3) and merged.mode_slow_s is None
    assert merged.other_cores == pytest.approx(0.02) and "busy" not in merged.message
    assert merged.message.startswith("round(s) 1 set aside: over 10% slower than another round of the same")
    busy = PassResult.merge([one(0, 0.339e-3, 1.0), one(0, 0.216e-3, 0.9)])  # both beside it: both kept
    assert busy.n == 10 and busy.other_cores == pytest.approx(0.95) and "busy: other work kept about" in busy.message


def test_a_slow_round_whose_canary_did_not_move_is_kept_and_the_rounds_give_two_modes():
    """An A/A pair on a VM that drifts: the rule took the faster of each process's two rounds (66-78 us,
    against 80-92 set aside) where the other run's single rounds read 82-87, and read 18.9% faster. The
    canary read within 10% around every round: nothing says the machine, not the call, was slower."""
    def one(process: int, median: float, canary_s: float) -> PassResult:
        return PassResult(pass_="forward", status="ok", samples_s=[median] * 5, median_s=median, process=process,
                          canary_s=canary_s)

    merged = PassResult.merge([one(0, 86.5e-6, 2.4e-4), one(1, 91.9e-6, 2.6e-4), one(2, 66.3e-6, 2.5e-4),
                               one(0, 77.7e-6, 2.3e-4), one(1, 70.0e-6, 2.5e-4), one(2, 79.6e-6, 2.4e-4)])
    assert merged.n == 30 and "set aside" not in merged.message
    assert merged.mode_fast_s is not None and merged.mode_slow_s is not None  # the rounds split, and say so
    unprobed = PassResult.merge([PassResult(pass_="forward", status="ok", samples_s=[m] * 5, median_s=m, process=p)
                                 for p, m in ((0, 0.316), (0, 0.499))])  # a GPU's rounds: no canary
    assert unprobed.n == 10 and "set aside" not in unprobed.message


def test_a_round_whose_every_sample_was_set_aside_gives_no_median_and_does_not_outvote_the_clean_one():
    """Beside a busy neighbour: lstm_cell's cpp forward at B=16 read 7.8 ms in two processes' rounds, every
    sample set aside, and 0.033 ms in the third; the two stalled rounds were the majority "slow mode" and
    the row read 7.81 ms, converged."""
    def stalled(process: int) -> PassResult:
        return PassResult(pass_="forward", status="ok", samples_s=[7.8e-3] * 120, disturbed=[True] * 120,
                          median_s=7.8e-3, process=process, stop="disturbed")

    clean = PassResult(pass_="forward", status="ok", samples_s=[3.26e-5, 3.27e-5, 3.25e-5] * 41,
                       disturbed=[False] * 123, median_s=3.26e-5, process=2, stop="converged")
    merged = PassResult.merge([stalled(0), stalled(1), clean])
    assert merged.median_s == pytest.approx(3.26e-5) and merged.n == 123 and merged.mode_slow_s is None
    assert merged.round_medians_s[2] == pytest.approx(3.26e-5) and np.isnan(merged.round_medians_s[:2]).all()
    assert merged.round_spread is None and merged.processes is None  # one process with clean samples left
    assert merged.disturbed_share == pytest.approx(240 / 363)
    assert "round(s) 1, 2: every sample set aside (disturbed), so they give no median of the call" in merged.message
    both = PassResult.merge([stalled(0), stalled(1)])  # nothing clean anywhere: the row is disturbed
    assert both.stop == "disturbed" and both.median_s == pytest.approx(7.8e-3)


def test_a_misspelt_column_raises_where_it_is_given():
    with pytest.raises(UnknownColumn, match="'medain_s'"):
        PassResult.from_row({"pass": "forward", "medain_s": 1.0})
    with pytest.raises(UnknownColumn, match="'gflop'"):
        PassResult(pass_="forward").with_(gflop=1.0)
    with pytest.raises(UnknownColumn, match="'sample_s'"):
        PassResult(pass_="forward").without("sample_s")


def test_a_row_has_the_columns_given_explicit_nulls_included_and_every_measured_column_is_a_field():
    made = PassResult(op="x", pass_="forward")
    assert made.to_row() == {"op": "x", "pass": "forward"}
    assert made.with_(batch_size=None).to_row() == {"op": "x", "pass": "forward", "batch_size": None}
    assert made.with_(batch_size=None).without("batch_size", "op").to_row() == {"pass": "forward"}
    every = PassResult.from_row(dict.fromkeys(COLUMNS.keys() - {"schema_version", "run_id", "timestamp", "code_sha",
                                                                "code_dirty", "code_repo", "code_time"}))
    assert set(every.to_row()) <= set(COLUMNS)

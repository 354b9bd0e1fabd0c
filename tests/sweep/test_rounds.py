"""Interleaved rounds: the per-round budget, pooling a cell's rounds into one row, and the sweep's
round-robin order, failures and interruption."""

from __future__ import annotations

import statistics

import pytest

from benchctl.measure.result import PassResult
from benchctl.results import storage
from benchctl.ops.cells import Cell
from benchctl.sweep.rounds import merge, per_round
from benchctl.sweep.driver import Sweep
from benchctl.results.storage import RunWriter
from benchctl.measure.timing import Policy


def row(samples, status="ok", **extra):
    med = statistics.median(samples) if samples else None
    base = {"op": "toy", "impl": "py", "pass": "forward", "status": status, "samples_s": list(samples),
            "median_s": med, "n": len(samples), "flops": 2e9, "bytes": 4e9}
    return PassResult.from_row({**base, **extra})


def test_per_round_divides_the_budget():
    p = per_round(Policy(min_samples=5, max_samples=1000, min_time=0.3, max_time=6.0, warmup=2), 3)
    assert (p.min_time, p.max_time, p.min_samples, p.max_samples, p.warmup) == pytest.approx((0.1, 2.0, 2, 334, 2))
    assert per_round(Policy(), 1) == Policy()


def test_merge_pools_the_partners_samples_with_the_own_and_takes_the_speedup_over_all_pairs():
    rounds = [[row([1.0, 1.0], paired_with="py", partner_samples_s=[2.0, 2.0])],
              [row([3.0, 3.0, 3.0], paired_with="py", partner_samples_s=[9.0, 9.0, 9.0])]]
    [m] = merge(rounds)
    assert m["partner_samples_s"] == [2.0, 2.0, 9.0, 9.0, 9.0] and m["paired_with"] == "py"
    assert m["paired_speedup"] == 3.0  # pairs 2, 2, 3, 3, 3; the pooled medians' ratio would be 3.0 / 3.0
    [alone] = merge([[row([1.0])], [row([2.0])]])
    assert "paired_speedup" not in alone


def test_merge_leaves_out_the_pairs_either_side_set_aside_in_any_round():
    rounds = [[row([1.0, 1.0], disturbed=[False, True], paired_with="py", partner_samples_s=[2.0, 9.0])],
              [row([1.0, 1.0], paired_with="py", partner_samples_s=[2.0, 8.0], partner_disturbed=[False, True])]]
    [m] = merge(rounds)
    assert m["paired_speedup"] == 2.0  # the pairs 9/1 and 8/1 are left out, not their medians' 5.0
    assert m["partner_disturbed"] == [False, False, False, True] and m["disturbed"] == [False, True, False, False]


def test_merge_takes_each_round_s_own_turns_where_the_rounds_took_other_numbers_of_calls_a_turn():
    rounds = [[row([1.0] * 4, paired_with="py", partner_samples_s=[4.0, 4.0])],  # 2 calls a turn: 4x
              [row([2.0] * 6, paired_with="py", partner_samples_s=[6.0, 6.0])]]  # 3 calls a turn: 3x
    [m] = merge(rounds)
    assert m["partner_samples_s"] == [4.0, 4.0, 6.0, 6.0] and m["samples_s"] == [1.0] * 4 + [2.0] * 6
    assert m["paired_speedup"] == 3.5  # pairs 4, 4, 3, 3; the pooled series taken as one would pair 1.0 with 6.0

def test_merge_keeps_what_the_rounds_say_of_the_call_once_and_derives_the_doubts_anew():
    stray = "2 of 6 calls left work on another stream after the call's own finished (median 80 us)"
    rounds = [[row([1.0] * 6, message=f"timed alone: x cannot run here; {stray}; noisy: the median is known to "
                                      "+-3.0% only (IQR 5% of it, 6 samples)")],
              [row([1.0] * 6, message=f"{stray}; disturbed: 1 of 6 samples (17%) waited for a CPU, 5 clean sample(s) "
                                      "left")]]
    [m] = merge(rounds)
    assert m["message"] == f"timed alone: x cannot run here; {stray}"  # 12 equal samples: settled, not noisy
    flags = [True] * 5 + [False]
    [m] = merge([[row([1.0] * 6, disturbed=flags, stop="disturbed")] for _ in range(2)])
    assert m["stop"] == "disturbed"
    assert m["message"].startswith("disturbed: 10 of 12 samples (83%) set aside over the rounds, 2 clean sample(s)")


def test_a_round_that_stopped_disturbed_does_not_speak_for_a_pool_with_clean_samples_enough():
    one_bad = [row([1.0] * 6, disturbed=[True] * 5 + [False], stop="disturbed"),
               row([1.0] * 6, disturbed=[False] * 6, stop="converged")]
    [m] = merge([[one_bad[0]], [one_bad[1]]])
    assert m["stop"] == "converged" and m["disturbed_share"] == 5 / 12 and "disturbed" not in m["message"]


def test_merge_says_throttled_where_any_round_was():
    calm = {"sm_clock_mhz": 1980.0, "gpu_temp_c": 60.0, "throttled": False, "throttle_reasons": ""}
    hot = {"sm_clock_mhz": 1500.0, "gpu_temp_c": 84.0, "throttled": True,
           "throttle_reasons": "SwThermalSlowdown, SM clock 1500 of 1980 MHz"}
    [m] = merge([[row([1.0] * 6, **calm)], [row([1.0] * 6, **hot)], [row([1.0] * 6, **calm)]])
    assert (m["sm_clock_mhz"], m["gpu_temp_c"], m["throttled"]) == (1980.0, 84.0, True)
    assert m["throttle_reasons"] == "SwThermalSlowdown, SM clock 1500 of 1980 MHz"
    [cpu] = merge([[row([1.0] * 6)], [row([1.0] * 6)]])
    assert "throttled" not in cpu


def test_a_pass_timed_alone_in_one_round_is_not_paired_once_pooled():
    alone = "timed alone: over 10x from py in the warm-up, too far to pair"
    rounds = [[row([1.0] * 6, paired_with="py", partner_samples_s=[9.0] * 6, paired_speedup=9.0)],
              [row([1.0] * 6, message=alone)]]
    [m] = merge(rounds)
    assert m.paired_with is None and m.partner_samples_s is None and m.paired_speedup is None
    assert m["message"] == alone and len(m["samples_s"]) == 12


def test_merge_pools_samples_and_recomputes_stats_and_rates():
    rounds = [[row([1.0, 1.0, 1.0], pct_of_peak=40.0, page_faults=10.0, sys_s=0.5, peak_mem_bytes=5.0,
                   host_s=0.9, mem_gbps=30.0)],
              [row([2.0, 2.0, 2.0, 2.0], pct_of_peak=20.0, page_faults=30.0, sys_s=0.25, peak_mem_bytes=7.0,
                   host_s=1.1, mem_gbps=20.0)]]
    [m] = merge(rounds)
    assert m["n"] == 7 and m["samples_s"] == [1.0] * 3 + [2.0] * 4
    assert m["median_s"] == 2.0 and m["min_s"] == 1.0 and m["max_s"] == 2.0
    assert m["rounds"] == 2 and m["round_spread"] == pytest.approx(1.0) and m["round_medians_s"] == [1.0, 2.0]
    assert m["gflops"] == pytest.approx(1.0) and m["gbps"] == pytest.approx(2.0)
    assert m["pct_of_peak"] == pytest.approx(20.0)  # the bound is 0.4 s; 0.4 / 2.0
    assert m["page_faults"] == 20.0 and m["sys_s"] == 0.375 and m["peak_mem_bytes"] == 7.0
    assert m["host_s"] == pytest.approx(1.0) and m["mem_gbps"] == 25.0
    # two modes (1 s and 2 s): the median is the majority's, and so is the judgement of noise
    assert not m["noisy"] and m["message"].startswith("rounds disagree: 1e+03 ms in round(s) 1, 2e+03 ms")
    [scattered] = merge([[row([1.0, 1.3, 0.8, 1.2])], [row([0.9, 1.25, 0.85, 1.1])]])  # one mode, wide
    assert scattered["noisy"] and scattered["message"].startswith("noisy: the median is known to +-")


def test_rounds_in_two_modes_give_both_and_the_majority_median():
    """Seen on hoconv2d's backward: some rounds at ~15 ms, others at ~100 ms (fresh pages every call)."""
    fast, slow = [0.015, 0.0152, 0.0149], [0.098, 0.101, 0.1]
    [m] = merge([[row(fast)], [row(slow)], [row(fast)]])
    assert m["mode_fast_s"] == pytest.approx(0.015) and m["mode_slow_s"] == pytest.approx(0.1)
    assert m["median_s"] == pytest.approx(0.015)  # 6 samples against 3: the fast mode
    assert m["n"] == 9 and m["min_s"] == 0.0149 and m["max_s"] == 0.101
    assert "rounds disagree: 15 ms in round(s) 1, 3, 100 ms in round(s) 2;" in m["message"]
    [m] = merge([[row(fast, page_faults=40.0)], [row(slow, page_faults=694.0)], [row(fast, page_faults=42.0)]])
    assert "100 ms in round(s) 2 (41 and 694 page faults per call); the median is the fast mode's" in m["message"]
    assert m["mode_aside"] == [False] * 3 + [True] * 3 + [False] * 3  # round 2's samples: the other mode
    [quiet] = merge([[row([1.0, 1.02])], [row([1.05, 1.03])]])  # 5% apart: one mode, pooled
    assert quiet.get("mode_fast_s") is None and quiet["median_s"] == pytest.approx(1.025)
    assert quiet.get("mode_aside") is None


def test_the_mode_of_more_rounds_holds_though_a_noisy_round_sampled_on_longer():
    """Beside a compile that came and went, one of three processes read lstm_cell's py backward at 0.339 ms and
    sampled to its limit; the two that read 0.214 ms converged early, with fewer samples between them."""
    fast, slow = [0.214e-3, 0.215e-3, 0.213e-3], [0.339e-3 + i * 1e-6 for i in range(10)]
    [m] = merge([[row(fast)], [row(slow)], [row(fast)]])
    assert m["median_s"] == pytest.approx(0.214e-3) and m["message"].endswith("the median is the fast mode's, which "
                                                                             "holds most rounds")
    [tied] = merge([[row(fast)], [row(slow)]])  # one round each: the mode of more samples
    assert tied["median_s"] == pytest.approx(0.3435e-3) and tied["message"].endswith("holds most samples")


def test_merge_keeps_passes_apart_and_a_quiet_merge_has_no_message():
    one = [row([1.0] * 3), row([3.0] * 3).with_(pass_="backward")]  # 6 samples a pass: enough for an interval
    rounds = [one, one]
    merged = merge(rounds)
    assert [(m["pass"], m["median_s"], m["round_spread"], m["message"]) for m in merged] == [
        ("forward", 1.0, 0.0, ""), ("backward", 3.0, 0.0, "")]


def test_merge_of_a_failed_round_is_the_failure():
    [m] = merge([[row([1.0])], [row([], status="crashed", message="worker exited")]])
    assert m["status"] == "crashed" and m["message"] == "worker exited" and m["rounds"] == 2


class Scripted:
    """An executor that logs the cells it runs and answers from a script: impl -> rows per call."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def run(self, cell):
        self.calls.append(cell.impl)
        answer = self.answers[cell.impl]
        result = answer(len([c for c in self.calls if c == cell.impl])) if callable(answer) else answer
        if isinstance(result, BaseException):
            raise result
        return [r.with_(impl=cell.impl) for r in result]

    def close(self):
        pass


def cell(impl):
    return Cell.make("toy", "op", impl, "cpu", "float32", {"batch_size": 1})


def sweep(tmp_path, executor, impls, rounds):
    writer = RunWriter(tmp_path, storage.new_run_id(), {})
    done = []
    s = Sweep([cell(i) for i in impls], executor, writer, {"host": "test"}, rounds=rounds,
              on_done=lambda c, rows: done.append((c.impl, len(rows))))
    return s, writer, done


def test_rounds_go_round_robin_and_write_one_pooled_row_per_cell(tmp_path, monkeypatch):
    monkeypatch.setattr("benchctl.ops.registry.get", lambda name: type("Op", (), {"axis": "batch_size", "reference": "py"}))
    ex = Scripted({"a": [row([1.0, 1.0])], "b": [row([2.0, 2.0])]})
    s, writer, done = sweep(tmp_path, ex, ["a", "b"], rounds=3)
    s.run()
    assert ex.calls == ["a", "b"] * 3
    df = storage.load_run(writer.dir)
    assert sorted(zip(df["impl"], df["n"], df["rounds"])) == [("a", 6, 3), ("b", 6, 3)]
    assert len(done) == 6


def test_a_failed_cell_is_written_at_once_and_not_run_again(tmp_path, monkeypatch):
    monkeypatch.setattr("benchctl.ops.registry.get", lambda name: type("Op", (), {"axis": "batch_size", "reference": "py"}))
    ex = Scripted({"a": [row([], status="timeout", message="killed")], "b": [row([2.0])]})
    s, writer, done = sweep(tmp_path, ex, ["a", "b"], rounds=3)
    s.run()
    assert ex.calls == ["a", "b", "b", "b"]
    assert done == [("a", 1), ("b", 1), ("a", 0), ("b", 1), ("a", 0), ("b", 1)]  # progress still counts a
    df = storage.load_run(writer.dir).set_index("impl")
    assert df.loc["a", "status"] == "timeout" and df.loc["b", "n"] == 3


def test_interrupted_rounds_keep_what_each_cell_measured(tmp_path, monkeypatch):
    monkeypatch.setattr("benchctl.ops.registry.get", lambda name: type("Op", (), {"axis": "batch_size", "reference": "py"}))
    stop = lambda call: KeyboardInterrupt() if call == 2 else [row([2.0])]  # noqa: E731
    ex = Scripted({"a": [row([1.0])], "b": stop})
    s, writer, _ = sweep(tmp_path, ex, ["a", "b"], rounds=3)
    with pytest.raises(KeyboardInterrupt):
        s.run()
    assert ex.calls == ["a", "b", "a", "b"]
    df = storage.load_run(writer.dir)
    assert sorted(zip(df["impl"], df["n"], df["rounds"])) == [("a", 2, 2), ("b", 1, 1)]


def test_each_worker_process_s_paired_speedup_is_kept_from_its_rounds_clean_pairs():
    def paired(process: int, speedup: float, **facts) -> dict:
        return row([1.0] * 4, process=process, paired_with="py", partner_samples_s=[speedup] * 4, **facts)

    [m] = merge([[paired(0, 2.0)], [paired(1, 3.0)], [paired(0, 2.2, partner_disturbed=[True] * 4)]])
    assert m["process_paired_speedups"] == [2.0, 3.0]  # process 0's third round: every pair set aside
    [one] = merge([[paired(0, 2.0)], [paired(0, 2.4)]])
    assert one.get("process_paired_speedups") is None

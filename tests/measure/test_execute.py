"""One cell, in process: real timings of hoconv2d py, the correctness gate, failures as rows."""

import json
import statistics
import weakref
from dataclasses import replace

import pytest
import torch

from benchctl.ops.cells import Cell
from benchctl.analysis.pairs import pair_ratios
from benchctl.measure.execute import Settings, prepare, run_cell
from benchctl.measure.passes import NO_BACKWARD
from benchctl.measure.rates import matmul_peak
from benchctl.measure.timing import Policy
from benchctl.results.schema import own_aside

FAST = Settings(policy=Policy(warmup=1, warmup_time=0.0, min_samples=3, min_time=0.0, max_time=2.0))
SMALL = {"batch_size": 2, "C": 3, "H": 16, "W": 20, "k": 5}


def test_hoconv2d_py_cell_gives_three_timed_correct_rows(builtin_ops):
    rows = run_cell(Cell.make("hoconv2d", "filter", "py", "cpu", "float32", SMALL), FAST)
    assert [r["pass"] for r in rows] == ["forward", "backward", "forward_backward"]
    for r in rows:
        assert r["status"] == "ok" and r["correct"] is True
        assert len(r["samples_s"]) - sum(own_aside(r)) == r["n"] >= 3 and all(s > 0 for s in r["samples_s"])
        assert 0 < sum(r["probe"]) < len(r["samples_s"]) / 2  # the audit's calls, out of the statistics
        assert r["min_s"] <= r["median_s"] <= r["max_s"]
        assert 0 < r["max_rel_err"] < 2e-4 and r["tolerance"] == 2e-4
        assert r["compile_s"] > 0 and r["peak_mem_bytes"] is not None
        assert r["gbps"] == pytest.approx(r["bytes"] / r["median_s"] * 1e-9)
        assert r["wall_s"] >= sum(r["samples_s"])  # the samples, plus warm-up and untimed setup
    assert rows[0]["flops"] == 2 * 2 * 3 * 16 * 20 * 25
    assert json.loads(rows[0]["check_params"]) == SMALL


def test_a_wrong_implementation_is_recorded_incorrect_and_not_timed(fixture_ops):
    rows = run_cell(Cell.make("faulty", "op", "wrong", "cpu", "float32", {"batch_size": 4, "dim": 8}), FAST)
    assert {r["status"] for r in rows} == {"incorrect"}
    assert all(r.get("samples_s") is None for r in rows)
    assert rows[0]["max_rel_err"] == pytest.approx(0.005, rel=1e-3)  # 2.01x vs 2x
    assert "incorrect vs float64 reference" in rows[0]["message"]


def test_an_all_zero_output_never_passes(fixture_ops):
    rows = run_cell(Cell.make("faulty", "op", "zeros", "cpu", "float32", {"batch_size": 4, "dim": 8}), FAST)
    assert rows[0]["status"] == "incorrect" and "all zeros" in rows[0]["message"]


def test_a_cell_whose_gate_passed_earlier_is_timed_without_it(fixture_ops):
    # "wrong" fails its gate (0.5% off), so only a skipped gate lets it be timed: its timed outputs are checked
    # for work skipped, within 1%, not for precision (measure/audit.py).
    cell = Cell.make("faulty", "op", "wrong", "cpu", "float32", {"batch_size": 4, "dim": 8}, passes=("forward",))
    rows = run_cell(replace(cell, checked=True), FAST)
    assert [r["status"] for r in rows] == ["ok"] and "correct" not in rows[0]
    assert Cell.from_json(replace(cell, checked=True).to_json()).checked  # it survives the trip to a worker


def test_unavailable_cells_carry_the_reason(fixture_ops):
    rows = run_cell(Cell.make("faulty", "op", "noreason", "cpu", "float32", {"batch_size": 4, "dim": 8}), FAST)
    assert {r["status"] for r in rows} == {"unavailable"}
    assert rows[0]["message"] == "needs a thing this machine lacks"


@pytest.mark.parametrize("impl, own_leaves", [("py", False), ("py-imagegrad", True)])
def test_an_implementation_with_its_own_leaves_is_timed_with_backward(builtin_ops, impl, own_leaves):
    """py-imagegrad makes the image a leaf inside the call: `autograd.grad` over the inputs would skip
    the image gradient, the very slow path it exists to show, so its backward accumulates."""
    params = {"batch_size": 1, "C": 3, "image_size": 64, "points": 8}
    prepared = prepare(Cell.make("grid_sample", "sample", impl, "cpu", "float32", params).resolve())
    assert prepared.accumulate is own_leaves
    grads = prepared.setup("backward")()()
    if not own_leaves:
        assert grads[0].shape == prepared.inputs["grid"].shape and grads[0].abs().sum() > 0


def test_page_faults_and_os_time_per_call_are_counted_for_fresh_memory(fixture_ops):
    params = {"batch_size": 4, "dim": 8}
    rows = {r["impl"]: r for impl in ("py", "scratch")
            for r in run_cell(Cell.make("faulty", "op", impl, "cpu", "float32", params, ("forward",)), FAST)}
    assert rows["py"]["page_faults"] < 8
    assert rows["scratch"]["page_faults"] >= 32  # a fresh 64 MiB buffer per call
    # the kernel zero-fills those pages: a large share of the call (more than all of it when several
    # threads fault at once)
    assert rows["scratch"]["sys_s"] > 0.3 * rows["scratch"]["median_s"]
    assert rows["py"]["sys_s"] < 0.1 * rows["scratch"]["sys_s"]


def test_a_cpu_row_has_the_machines_memory_bandwidth_unless_asked_not_to(fixture_ops, monkeypatch):
    from benchctl.machine import membw

    readings = iter([30.0, 40.0])  # before and after the pass
    monkeypatch.setattr(membw, "probe", lambda: next(readings))
    cell = Cell.make("faulty", "op", "py", "cpu", "float32", {"batch_size": 4, "dim": 8}, ("forward",))
    [row] = run_cell(cell, FAST)
    assert row["mem_gbps"] == 35.0
    [row] = run_cell(cell, replace(FAST, probe_bandwidth=False))
    assert "mem_gbps" not in row


def test_a_gpu_clock_row_has_the_hosts_median_issue_time_after_warm_up(builtin_ops):
    from benchctl.measure.clocks import CudaEventClock

    class Event:  # every call takes 2 ms on the "GPU"
        ticks = iter(range(0, 10**6, 1))

        def record(self):
            self.t = next(Event.ticks) * 2.0

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return end.t - self.t

    host = iter([50_000_000] + [1_000_000] * 10**4)  # ns to issue: the warm-up call 50 ms, then 1 ms
    now = [0]

    def counter():  # starts and stops alternate; a stop adds the next issue time
        now.append(now[-1] + (next(host) if len(now) % 2 == 0 else 0))
        return now[-1]

    clock = CudaEventClock(event_factory=Event, synchronize=lambda: None, counter=counter, spin=lambda s: None)
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32",
                     {"batch_size": 1, "C": 3, "H": 8, "W": 8, "k": 3}, ("forward",))
    (row,) = run_cell(cell, FAST, clock)
    assert row["status"] == "ok" and row["median_s"] == pytest.approx(0.002)
    assert row["host_s"] == pytest.approx(0.001)


def test_the_tf32_setting_reaches_the_cell_and_survives_the_trip_to_a_worker(builtin_ops, tf32):
    from dataclasses import replace

    from benchctl.measure import correctness
    from benchctl.sweep.worker_spec import settings_from_json, settings_to_json

    settings = settings_from_json(settings_to_json(replace(FAST, tf32=False)))
    assert settings.tf32 is False
    tf32(matmul=True, conv=True)
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32",
                     {"batch_size": 1, "C": 3, "H": 8, "W": 8, "k": 3}, ("forward",))
    (row,) = run_cell(cell, settings)
    assert row["status"] == "ok" and not correctness.tf32_enabled()


def test_the_roofline_holds_a_small_working_set_against_the_cache_it_fits_in(builtin_ops):
    levels = {"L2": {"bytes": 1 << 20, "gbps": 400.0}, "L3": {"bytes": 32 << 20, "gbps": 150.0}}
    peaks = {"cpu": {"gbps": 20.0, "gflops": 1e6, "levels": levels}}  # a flop bound far below the byte one
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32", SMALL, ("forward",))
    [row] = run_cell(cell, replace(FAST, peaks=peaks, probe_bandwidth=False))
    assert row["bytes"] < 1 << 20 and row["peak_level"] == "L2"
    assert row["pct_of_peak"] == pytest.approx(100 * row["bytes"] / 400e9 / row["median_s"])
    [row] = run_cell(cell, replace(FAST, peaks={"cpu": {"gbps": 20.0, "gflops": 1e6}}, probe_bandwidth=False))
    assert row["peak_level"] == "DRAM"  # a calibration from before cache levels: DRAM, as it was
    assert row["pct_of_peak"] == pytest.approx(100 * row["bytes"] / 20e9 / row["median_s"])


def test_a_pass_timed_on_flushed_caches_is_held_against_dram_and_says_so(builtin_ops):
    """Each call started cold (run --flush-caches) reads its inputs from memory however small they are."""
    levels = {"L2": {"bytes": 1 << 20, "gbps": 400.0}, "L3": {"bytes": 32 << 20, "gbps": 150.0}}
    peaks = {"cpu": {"gbps": 20.0, "gflops": 1e6, "levels": levels}}
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32", SMALL, ("forward",))
    [row] = run_cell(cell, replace(FAST, peaks=peaks, probe_bandwidth=False, flush_l2=True))
    assert row["status"] == "ok" and row["flush_l2"] is True
    assert row["bytes"] < 1 << 20 and row["peak_level"] == "DRAM"
    assert row["pct_of_peak"] == pytest.approx(100 * row["bytes"] / 20e9 / row["median_s"])


def test_a_median_under_the_floor_is_below_floor_not_a_record(builtin_ops):
    """A machine calibrated at 1 MB/s cannot move the filter's bytes in microseconds: the time is
    impossible, so the pass keeps its samples but is not ok."""
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32", SMALL, ("forward",))
    [row] = run_cell(cell, replace(FAST, peaks={"cpu": {"gbps": 1e-3, "gflops": 1e6}}, probe_bandwidth=False))
    assert row["status"] == "below_floor" and row["samples_s"] and row["median_s"] > 0
    floor_ms = row["bytes"] / 1e6 * 1e3
    assert row["pct_of_peak"] == pytest.approx(100 * floor_ms / 1e3 / row["median_s"])
    # a noisy or disturbed run's doubts come first; the floor's verdict is the last part, whatever came before
    said = row["message"].split("; ")[-1]
    assert said.startswith("below the floor:") and f"{floor_ms:.3g} ms" in said, row["message"]
    [row] = run_cell(cell, replace(FAST, peaks={"cpu": {"gbps": 1e6, "gflops": 1e9}}, probe_bandwidth=False))
    assert row["status"] == "ok" and row["pct_of_peak"] < 110  # a floor far under the time: fine
    # Declared bytes may count re-reads a cache serves: held against DRAM the pass looks impossible, held
    # against the fastest level calibrated it is not, and it stays ok.
    levels = {"L2": {"bytes": 1.0, "gbps": 1e6}}
    [row] = run_cell(cell, replace(FAST, peaks={"cpu": {"gbps": 1e-3, "gflops": 1e6, "levels": levels}},
                                   probe_bandwidth=False))
    assert row["status"] == "ok" and row["pct_of_peak"] > 110 and row["peak_level"] == "DRAM"


@pytest.mark.parametrize("impl, message", [
    ("scribble", "incorrect: modified input x in place"),
    ("alias", "incorrect: modified input x in place; output 0 shares storage with input x"),
    ("seeded", "incorrect vs float64 reference: output: error "),
])
def test_the_gate_catches_an_implementation_that_games_it(fixture_ops, impl, message):
    rows = run_cell(Cell.make("faulty", "op", impl, "cpu", "float32", {"batch_size": 4, "dim": 8}), FAST)
    assert {r["status"] for r in rows} == {"incorrect"} and all(r.get("samples_s") is None for r in rows)
    assert rows[0]["message"].startswith(message), rows[0]["message"]
    if impl == "seeded":  # right at the check seed, wrong at the second
        assert rows[0]["message"].endswith("(at seed 1; right at the check seed)")


def test_a_dtype_an_implementation_does_not_declare_is_unavailable(fixture_ops):
    cell = Cell.make("faulty", "op", "f32only", "cpu", "float64", {"batch_size": 4, "dim": 8}, ("forward",))
    [row] = run_cell(cell, FAST)
    assert row["status"] == "unavailable" and row["message"] == "f32only supports float32 only, not float64"
    [row] = run_cell(replace(cell, dtype="float32"), FAST)
    assert row["status"] == "ok" and row["correct"] is True  # checked at its own dtype against float64


def test_flops_are_counted_by_torch_where_it_sees_them_else_declared(builtin_ops):
    """lstm_cell's py cell is matmuls FlopCounterMode counts; hoconv2d's cpp is a custom op it cannot see."""
    from benchctl.ops.cells import Cell
    from benchctl.measure.execute import Settings, run_cell
    from benchctl.measure.timing import Policy

    fast = Settings(policy=Policy(warmup=0, min_samples=2, min_time=0.0, max_time=0.2, ci_target=0),
                    measure_memory=False, probe_bandwidth=False)
    lstm = run_cell(Cell.make("lstm_cell", "cell", "py", "cpu", "float32", {"batch_size": 4, "H": 8, "I": 8},
                              ("forward",)), fast)[0]
    assert lstm["flops_source"] == "counted" and lstm["flops"] == 2 * 4 * (8 + 8) * 4 * 8  # x@W and h@U, 4 gates
    conv = run_cell(Cell.make("hoconv2d", "filter", "cpp", "cpu", "float32",
                              {"batch_size": 1, "C": 3, "H": 8, "W": 8, "k": 3}, ("forward",)), fast)[0]
    assert conv["flops_source"] == "declared" and conv["flops"] > 0


def test_the_flop_bound_uses_the_rate_of_the_pass_dtype():
    rates = {"gflops": 100.0, "gflops_by_dtype": {"float32": 100.0, "float64": 50.0, "tf32": 400.0}}
    cell = lambda device, dtype: Cell.make("hoconv2d", "filter", "py", device, dtype, SMALL, ("forward",))  # noqa: E731
    assert matmul_peak(rates, cell("cpu", "float64")) == 50.0
    assert matmul_peak(rates, cell("cpu", "bfloat16")) == 100.0  # not calibrated: float32's
    assert matmul_peak({"gflops": 100.0}, cell("cpu", "float64")) == 100.0  # a calibration from before
    matmul, before = torch.backends.cuda.matmul, torch.backends.cuda.matmul.allow_tf32
    try:
        matmul.allow_tf32 = True
        assert matmul_peak(rates, cell("cuda", "float32")) == 400.0
        assert matmul_peak(rates, cell("cpu", "float32")) == 100.0  # TF32 is a GPU mode
    finally:
        matmul.allow_tf32 = before


def test_a_cell_paired_with_another_implementation_keeps_both_sample_series_pair_by_pair(fixture_ops):
    params = {"batch_size": 64, "dim": 512, "alpha": 0.5}
    cell = replace(Cell.make("axpy", "op", "fused", "cpu", "float32", params, ("forward", "backward")),
                   paired_with="py")
    for row in run_cell(cell, FAST):
        assert row["status"] == "ok" and row["paired_with"] == "py"
        pairs = min(len(row["partner_samples_s"]), len(row["samples_s"]))
        own_calls, partner_calls = len(row["samples_s"]) // pairs, len(row["partner_samples_s"]) // pairs
        assert pairs * own_calls == len(row["samples_s"]) and pairs * partner_calls == len(row["partner_samples_s"])
        assert len(row["samples_s"]) >= row["n"] >= 3
        assert len(row["partner_disturbed"]) == len(row["partner_samples_s"])
        assert len(row["disturbed"]) == len(row["samples_s"])
        assert len(row["probe"]) == len(row["samples_s"]) and any(row["probe"])  # the own side is audited alone
        def turn(samples, flags, calls, i):  # a turn's median of its clean samples, and whether it had any
            got = list(zip(samples, flags))[i * calls:(i + 1) * calls]
            kept = [s for s, aside in got if not aside]
            return statistics.median(kept or [s for s, _ in got]), bool(kept)

        ratios, clean = [], []
        for i in range(pairs):
            (p, p_ok), (o, o_ok) = (turn(row["partner_samples_s"], row["partner_disturbed"], partner_calls, i),
                                    turn(row["samples_s"], own_aside(row), own_calls, i))
            ratios.append(p / o)
            clean += [p / o] if p_ok and o_ok else []  # a pair with a side wholly set aside is left out
        assert row["paired_speedup"] == pytest.approx(statistics.median(clean or ratios))
        assert row["paired_ci_lo"] <= row["paired_speedup"] <= row["paired_ci_hi"]


def test_a_partner_that_cannot_run_leaves_the_cell_timed_alone_and_says_why(fixture_ops):
    cell = replace(Cell.make("faulty", "op", "py", "cpu", "float32", {"batch_size": 4, "dim": 8}, ("forward",)),
                   paired_with="noreason")
    [row] = run_cell(cell, FAST)
    assert row["status"] == "ok" and "paired_speedup" not in row
    assert row["message"].endswith("timed alone: noreason cannot run here (needs a thing this machine lacks)")


def test_a_partner_far_slower_in_the_warm_up_leaves_the_cell_timed_alone_and_says_so(fixture_ops):
    # sleepy sleeps 0.25 s each call: over 1000x py's microseconds
    cell = replace(Cell.make("faulty", "op", "py", "cpu", "float32", {"batch_size": 4, "dim": 8}, ("forward",)),
                   paired_with="sleepy")
    [row] = run_cell(cell, FAST)
    assert row["status"] == "ok" and "paired_speedup" not in row and row["n"] >= 3
    assert row["message"].startswith("timed alone: over 1000x from sleepy in the warm-up")


def test_a_partner_slower_than_the_cell_pairs_one_of_its_calls_with_a_turn_of_the_cell_s(fixture_ops):
    # nap sleeps 1 ms each call: a few hundred times py's microseconds
    cell = replace(Cell.make("faulty", "op", "py", "cpu", "float32", {"batch_size": 4, "dim": 8}, ("forward",)),
                   paired_with="nap")
    [row] = run_cell(cell, FAST)
    assert row["status"] == "ok" and row["paired_with"] == "nap"
    calls, left = divmod(len(row["samples_s"]), len(row["partner_samples_s"]))
    assert calls > 1 and left == 0  # py took `calls` calls each turn, nap one
    ratios, clean = pair_ratios(row["samples_s"], row["partner_samples_s"], own_aside(row),
                                row.get("partner_disturbed") or ())
    assert row["paired_speedup"] == pytest.approx(statistics.median(ratios[clean] if clean.any() else ratios))
    assert row["paired_speedup"] > 2  # medians of a turn of py's beside one nap call each


def test_a_reference_too_large_for_the_timed_size_leaves_the_pass_ok_and_says_it_was_not_compared(
        monkeypatch, fixture_ops):
    op = fixture_ops["axpy"]
    ref = op.implementations[op.reference]

    def small_only(x, y, alpha):  # the gate's float64 run fits; the audit's, in the cell's float32, does not
        if x.dtype == torch.float32:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 19.14 GiB")
        return ref.fn(x, y, alpha)

    monkeypatch.setitem(op.implementations, op.reference, replace(ref, fn=small_only))
    cell = Cell.make("axpy", "op", "fused", "cpu", "float32", {"batch_size": 64, "dim": 8, "alpha": 0.75})
    audited, unaudited = run_cell(cell, FAST), run_cell(cell, replace(FAST, audit=False))
    assert [r["status"] for r in audited + unaudited] == ["ok"] * 6
    assert all(r["correct"] is True for r in audited)  # the gate's reference ran
    for r in audited:
        assert "timed outputs not compared with the reference, which failed at this size: OutOfMemoryError" in r["message"]
    assert not any("reference" in (r["message"] or "") for r in unaudited)  # maxbatch's probes: no audit at all


def _short_of_memory(monkeypatch, op, fails) -> None:
    """axpy's `fused` out of memory where `fails(earlier outputs alive, calls so far)` (as a GPU near its limit
    is, with the outputs the audit holds beside a call)."""
    impl, alive, calls = op.implementations["fused"], weakref.WeakSet(), []

    def fused(x, y, alpha):
        if fails(len(alive), len(calls)):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 12.00 GiB")
        out = impl.fn(x, y, alpha)
        alive.add(out)
        calls.append(1)
        return out

    monkeypatch.setitem(op.implementations, "fused", replace(impl, fn=fused))


def _axpy_forward() -> Cell:
    return Cell.make("axpy", "op", "fused", "cpu", "float32", {"batch_size": 64, "dim": 8, "alpha": 0.75},
                     ("forward",))


def test_a_pass_out_of_memory_for_the_outputs_its_audit_holds_is_timed_again_holding_none(monkeypatch, fixture_ops):
    """maxbatch probes without the audit, so a batch it found to fit must not be lost to the two kept outputs
    the audit holds: the pass is timed again, their copies still checked, and its row says what was not."""
    [held] = run_cell(_axpy_forward(), FAST)  # with room for them, nothing is said
    assert held["status"] == "ok" and "kept outputs" not in (held["message"] or "")
    _short_of_memory(monkeypatch, fixture_ops["axpy"], lambda alive, calls: alive >= 2)
    [row] = run_cell(_axpy_forward(), FAST)
    assert row["status"] == "ok" and row["n"] >= 3 and row["correct"] is True
    assert "timed again without holding its kept outputs (out of memory with them held)" in row["message"]


def test_a_pass_out_of_memory_with_nothing_held_stays_oom(monkeypatch, fixture_ops):
    _short_of_memory(monkeypatch, fixture_ops["axpy"], lambda alive, calls: calls >= 1)  # after the first call
    [row] = run_cell(replace(_axpy_forward(), checked=True), FAST)
    assert row["status"] == "oom" and "CUDA out of memory" in row["message"]


ROUTER = {"batch_size": 32, "experts": 16, "k": 2}


def test_a_router_returning_indices_is_timed_forward_and_backward_from_its_weights(output_ops):
    """The indices carry no gradient: the backward starts from the weights, and each pass's outputs are checked
    (the indices exactly)."""
    rows = run_cell(Cell.make("router", "op", "topk_first", "cpu", "float32", ROUTER), FAST)
    assert [r["pass"] for r in rows] == ["forward", "backward", "forward_backward"]
    assert all(r["status"] == "ok" and r["correct"] is True and r["n"] >= 3 for r in rows)
    wrong = run_cell(Cell.make("router", "op", "swapped", "cpu", "float32", ROUTER), FAST)
    assert {r["status"] for r in wrong} == {"incorrect"}
    assert "output1: 64 of 64 elements differ, compared exactly (an integer output)" in wrong[0]["message"]


@pytest.mark.parametrize("op, impl, params", [
    ("rowmax", "sort", {"batch_size": 8, "dim": 256}),  # its input requires no grad
    ("router", "inference", ROUTER),  # a forward-only implementation of an operator with a backward
    ("into", "out", {"batch_size": 8, "dim": 256}),  # written into a buffer it is given (Target.writes)
])
def test_with_no_backward_the_forward_is_timed_and_the_backward_unavailable(output_ops, op, impl, params):
    rows = run_cell(Cell.make(op, "op", impl, "cpu", "float32", params), FAST)
    assert [(r["pass"], r["status"]) for r in rows] == [
        ("forward", "ok"), ("backward", "unavailable"), ("forward_backward", "unavailable")]
    assert rows[0]["correct"] is True and rows[0]["n"] >= 3
    assert {r["message"] for r in rows[1:]} == {NO_BACKWARD}


def test_a_call_that_hands_back_a_buffer_it_filled_once_is_incorrect(output_ops):
    rows = run_cell(Cell.make("into", "op", "stale", "cpu", "float32", {"batch_size": 8, "dim": 256}), FAST)
    assert rows[0]["status"] == "incorrect"


def test_a_pass_its_partner_lacks_is_timed_alone_and_says_so(output_ops):
    cell = replace(Cell.make("router", "op", "py", "cpu", "float32", ROUTER), paired_with="inference")
    rows = {r["pass"]: r for r in run_cell(cell, FAST)}
    assert rows["forward"]["status"] == "ok" and rows["forward"]["paired_with"] == "inference"
    for name in ("backward", "forward_backward"):
        assert rows[name]["status"] == "ok" and rows[name].get("paired_with") is None
        assert "timed alone: inference has no backward" in rows[name]["message"]

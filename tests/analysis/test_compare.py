"""compare: real slowdowns are flagged, noise is not, environment differences are reported."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from benchctl.errors import UsageError
from benchctl.analysis import compare
from benchctl.analysis import verdict
from benchctl.results import storage


def timed(median: float, seed: int, n: int = 30, noise: float = 0.03) -> list[float]:
    return list(median * np.random.default_rng(seed).lognormal(0.0, noise, n))


def row(impl: str = "cpp", samples: list[float] | None = None, status: str = "ok", batch: int = 8,
        pass_name: str = "forward", host: str = "box", torch_version: str = "2.4.0", **facts) -> dict:
    """A row measured in three worker processes that agreed within 1%, unless `facts` say otherwise."""
    out = {"op": "hoconv2d", "target": "module", "impl": impl, "device": "cpu", "dtype": "float32",
           "params": json.dumps({"batch_size": batch}), "axis": "batch_size", "axis_value": float(batch),
           "pass": pass_name, "status": status, "host": host, "torch_version": torch_version, "threads": 8,
           "processes": 3, "process_spread": 0.01}
    if samples is not None:
        out.update(samples_s=samples, median_s=float(np.median(samples)), n=len(samples))
    return {**out, **facts}


def frame(rows: list[dict]) -> pd.DataFrame:
    return storage.to_table(rows).to_pandas()


def test_a_real_twenty_percent_slowdown_is_a_regression():
    result = compare.compare(frame([row(samples=timed(10e-3, 1))]), frame([row(samples=timed(12e-3, 2))]))
    (cell,) = result.cells
    assert cell.verdict == "slower"
    assert cell.ratio == pytest.approx(1.2, rel=0.03) and 1.05 < cell.ratio_low < 1.2 < cell.ratio_high
    assert cell.p_value < 1e-6 and cell.base_n == cell.new_n == 30
    assert result.regressions == [cell] and result.counts["slower"] == 1


def test_noise_around_the_same_median_is_the_same():
    result = compare.compare(frame([row(samples=timed(10e-3, 1))]), frame([row(samples=timed(10e-3, 2))]))
    (cell,) = result.cells
    assert cell.verdict == "same" and abs(cell.ratio - 1) < 0.03
    assert not result.regressions


def test_a_side_whose_rounds_split_gives_the_interval_of_its_median_s_mode():
    """NEW's rounds split: two of three at 9.25 ms (its median), one at 10 ms. The interval was once all the
    samples' (-7.5% [-3, -1]); it is now of the samples the median came from, and holds the change."""
    fast, slow = timed(9.25e-3, 3, n=20) + timed(9.25e-3, 4, n=20), timed(10e-3, 5, n=40)
    new = row(samples=fast + slow, mode_fast_s=9.25e-3, mode_slow_s=10e-3, mode_aside=[False] * 40 + [True] * 40)
    new["median_s"] = float(np.median(fast))
    (cell,) = compare.compare(frame([row(samples=timed(10e-3, 1))]), frame([new])).cells
    assert cell.ratio == pytest.approx(0.925, rel=0.02) and cell.new_n == 40
    assert cell.ratio_low < cell.ratio < cell.ratio_high < 0.97
    assert cell.verdict == "unsure" and cell.reason == verdict.ROUNDS_SPLIT


def test_samples_that_agree_beside_medians_that_do_not_are_unsure_not_same():
    """One process in a slow mode: the row keeps that mode's median (pooling.py), 26% over the other run's,
    while the pooled samples' interval is within 5%."""
    base, new = row(samples=timed(10e-3, 1)), row(samples=timed(10e-3, 2))
    new["median_s"] = 12.6e-3
    (cell,) = compare.compare(frame([base]), frame([new])).cells
    assert 0.95 < cell.ratio_low < cell.ratio_high < 1.05 and cell.ratio == pytest.approx(1.26, rel=0.02)
    assert cell.verdict == "unsure"


@pytest.mark.parametrize("facts, reason", [
    ({"stop": "disturbed"}, "disturbed"),
    ({"noisy": True}, "noisy"),
    ({"other_cores": 1.0}, "beside other work"),
    ({"processes": None, "process_spread": None}, "one process"),
    ({"process_spread": 0.25}, "within the spread between processes"),
    ({"process_spread": 0.15}, "within the spread between processes"),  # 1.2 is not past 1.15 by 5%
    ({"mode_fast_s": 9e-3, "mode_slow_s": 12e-3}, "its rounds split into two modes"),
    ({"canary_ratio": 1.16}, "one side in a slow phase, one at speed"),
])
def test_a_change_the_samples_call_real_is_unsure_when_a_side_cannot_be_trusted(facts, reason):
    base = frame([row(samples=timed(10e-3, 1))])
    new = frame([row(samples=timed(12e-3, 2), **facts)])
    (cell,) = compare.compare(base, new).cells
    assert (cell.verdict, cell.reason) == ("unsure", reason)
    assert cell.ratio == pytest.approx(1.2, rel=0.03) and cell.p_adjusted < 1e-6  # the samples alone say slower


def test_an_a_a_pair_whose_second_process_ran_slow_is_not_a_regression():
    """The same code, two runs: the second landed in a slower mode (1.67x, every sample clean). Measured
    in one process, nothing tells that from a regression, so it is unsure; beyond the one-process bound,
    a change is still found."""
    base = frame([row(samples=timed(0.124e-3, 1), processes=None, process_spread=None)])
    slow = frame([row(samples=timed(0.207e-3, 2), processes=None, process_spread=None)])
    (cell,) = compare.compare(base, slow).cells
    assert (cell.verdict, cell.reason) == ("unsure", "one process")
    far = frame([row(samples=timed(0.124e-3 * (1 + verdict.ONE_PROCESS_BOUND) * 1.2, 3), processes=None)])
    (cell,) = compare.compare(base, far).cells
    assert (cell.verdict, cell.reason) == ("slower", None)


def test_an_a_a_pair_across_the_slow_phase_line_is_unsure_and_one_within_a_phase_is_judged():
    """The same code right after `env --calibrate` and a minute later, one process each: 2.0x apart, canaries
    1.16x and 1.01x calibrated (14% apart: within what two rows of one phase read). Both in a slow phase, or
    both at speed, the same change is judged."""
    def side(median, seed, canary_ratio):
        return frame([row(samples=timed(median, seed), processes=None, process_spread=None,
                          canary_s=300e-6 * canary_ratio, canary_ratio=canary_ratio)])

    (cell,) = compare.compare(side(0.210e-3, 1, 1.157), side(0.105e-3, 2, 1.012)).cells
    assert cell.ratio == pytest.approx(0.5, rel=0.03) and cell.p_adjusted < 1e-6
    assert (cell.verdict, cell.reason) == ("unsure", verdict.PHASES)
    for base, new in ((1.30, 1.20), (1.10, 1.01)):
        (cell,) = compare.compare(side(0.210e-3, 1, base), side(0.105e-3, 2, new)).cells
        assert (cell.verdict, cell.reason) == ("faster", None)


def test_a_change_the_machine_made_is_unsure():
    """NEW ran 1.2x slower, and so did the machine's canary around it: the code did not change."""
    base = frame([row(samples=timed(10e-3, 1), canary_s=300e-6, mem_gbps=30.0)])
    new = frame([row(samples=timed(12e-3, 2), canary_s=360e-6, mem_gbps=30.0)])
    (cell,) = compare.compare(base, new).cells
    assert (cell.verdict, cell.reason) == ("unsure", "the machine changed speed (canary +20%)")
    faster_box = frame([row(samples=timed(8e-3, 3), canary_s=240e-6, mem_gbps=37.5)])
    (cell,) = compare.compare(base, faster_box).cells
    assert (cell.verdict, cell.reason) == ("unsure", "the machine changed speed (canary -20%)")


def test_a_canary_within_its_own_noise_holds_the_change_against_it_and_the_gpu_clock_does_not_move():
    """Both runs in the same phase of the machine, their canaries 10% apart (as two rows of one slow phase
    read): a 1.3x change is still 1.18x once divided by it; a 1.12x change is the canary's 10%. The SM clock
    is read, not timed: 10% apart is another machine."""
    base = frame([row(samples=timed(10e-3, 1), canary_s=300e-6, mem_gbps=30.0)])
    new = frame([row(samples=timed(13e-3, 2), canary_s=330e-6, mem_gbps=30.0)])
    (cell,) = compare.compare(base, new).cells
    assert (cell.verdict, cell.reason) == ("slower", None)
    near = frame([row(samples=timed(11.2e-3, 2), canary_s=330e-6, mem_gbps=30.0)])
    (cell,) = compare.compare(base, near).cells
    assert (cell.verdict, cell.reason) == ("unsure", "the machine was slower (+10%)")
    gpu = frame([row(samples=timed(10e-3, 1), device="cuda", sm_clock_mhz=1980.0)])
    gpu_new = frame([row(samples=timed(13e-3, 2), device="cuda", sm_clock_mhz=1800.0)])
    (cell,) = compare.compare(gpu, gpu_new).cells
    assert (cell.verdict, cell.reason) == ("unsure", "the machine changed speed (sm clock +10%)")


def test_a_change_must_hold_in_machine_normalised_time():
    """The canary steady, the memory 1.2x slower in NEW: a 1.2x slower memory-bound cell is the memory's doing,
    while a 1.44x slower one is still 1.2x slower once divided by it."""
    base = frame([row(samples=timed(10e-3, 1), canary_s=300e-6, mem_gbps=30.0)])
    new = frame([row(samples=timed(12e-3, 2), canary_s=303e-6, mem_gbps=25.0)])
    (cell,) = compare.compare(base, new).cells
    assert (cell.verdict, cell.reason) == ("unsure", "the machine was slower (+20%)")
    assert cell.machine == pytest.approx({"canary": 1.01, "memory": 1.2})
    worse = frame([row(samples=timed(14.4e-3, 2), canary_s=303e-6, mem_gbps=25.0)])
    (cell,) = compare.compare(base, worse).cells
    assert (cell.verdict, cell.reason) == ("slower", None)


def test_a_gpu_change_is_confirmed_on_the_same_sm_clock():
    """NEW's GPU ran at 1650 MHz against BASE's 1980: its kernels took 1.2x as long, the code the same."""
    base = frame([row(samples=timed(10e-3, 1), device="cuda", sm_clock_mhz=1980.0)])
    new = frame([row(samples=timed(12e-3, 2), device="cuda", sm_clock_mhz=1650.0)])
    (cell,) = compare.compare(base, new).cells
    assert (cell.verdict, cell.reason) == ("unsure", "the machine changed speed (sm clock +20%)")


def test_cpu_cells_given_other_counts_of_torchs_threads_get_no_verdict():
    """The same code on 1 thread in BASE and 2 in NEW reads about twice as fast: not a change of the code. A GPU
    cell's threads only issue its kernels, and are not held against each other."""
    base = frame([row(samples=timed(20e-3, 1), threads=1), row(samples=timed(5e-3, 3), device="cuda", threads=1)])
    new = frame([row(samples=timed(10e-3, 2), threads=2), row(samples=timed(5e-3, 4), device="cuda", threads=2)])
    result = compare.compare(base, new)
    cpu, gpu = sorted(result.cells, key=lambda c: c.device)
    assert (cpu.verdict, cpu.reason) == ("unsure", "timed differently: on 1 thread in BASE, 2 in NEW")
    assert gpu.verdict == "same" and gpu.reason is None
    assert "1 of 2 cells were timed differently: on 1 thread in BASE, 2 in NEW: they get no verdict; time both " \
           "runs the same way (--threads) to compare them" in result.warnings()


def test_cpu_cells_run_under_another_allocator_get_no_verdict():
    """Under glibc's allocator a large buffer is faulted in afresh each call; under tcmalloc it is kept: the same
    code reads 2-10x apart. A GPU cell's kernels do not allocate from it."""
    base = frame([row(samples=timed(90e-3, 1), allocator="system"),
                  row(samples=timed(5e-3, 3), device="cuda", allocator="system")])
    new = frame([row(samples=timed(45e-3, 2), allocator="tcmalloc"),
                 row(samples=timed(5e-3, 4), device="cuda", allocator="tcmalloc")])
    result = compare.compare(base, new)
    cpu, gpu = sorted(result.cells, key=lambda c: c.device)
    assert (cpu.verdict, cpu.reason) == ("unsure", "timed differently: under the system allocator in BASE, tcmalloc "
                                                   "in NEW")
    assert gpu.verdict == "same" and gpu.reason is None
    assert any(w.endswith("time both runs the same way (--allocator) to compare them") for w in result.warnings())
    old = frame([row(samples=timed(90e-3, 1))])  # a row from before the allocator was recorded: judged
    assert compare.compare(old, new.iloc[:1]).cells[0].reason is None


@pytest.mark.parametrize("base_timing, new_timing, said", [
    ({"timing_mode": "eager", "flush_l2": False}, {"timing_mode": "cuda_graph", "flush_l2": False},
     "timed differently: eager in BASE, cuda_graph in NEW"),
    ({"timing_mode": "eager", "flush_l2": False}, {"timing_mode": "eager", "flush_l2": True},
     "timed differently: eager in BASE, eager, L2 flushed in NEW"),
    ({"timing_mode": "eager", "flush_l2": False}, {"timing_mode": "eager", "flush_l2": False}, None),
    ({}, {"timing_mode": "eager", "flush_l2": True}, None),  # a row from before the flush was recorded
])
def test_passes_timed_differently_get_no_verdict(base_timing, new_timing, said):
    """On an H100, hoconv2d's cuda forward at B=4 read 0.119 ms eager (the host's issue time) and 0.0145 ms
    as CUDA-graph replays: the same code, 8x apart. Neither `faster` nor `same` would be true."""
    for new_ms, unjudged in ((1.45e-3, "faster"), (11.9e-3, "same")):
        base = frame([row(samples=timed(11.9e-3, 1), device="cuda", **base_timing)])
        new = frame([row(samples=timed(new_ms, 2), device="cuda", **new_timing)])
        result = compare.compare(base, new)
        (cell,) = result.cells
        assert (cell.verdict, cell.reason) == (("unsure", said) if said else (unjudged, None))
        assert [w for w in result.warnings() if "timed" in w] == ([
            f"1 of 1 cells were {said}: they get no verdict; time both runs the same way (--cuda-graph, "
            "--flush-caches) to compare them"] if said else [])


def test_compare_judges_the_clean_samples_only():
    samples = timed(10e-3, 1)
    flagged = samples + [50e-3] * 10  # ten samples that waited for a CPU, kept in the row
    base = frame([row(samples=samples)])
    new = frame([row(samples=flagged, disturbed=[False] * 30 + [True] * 10)])
    (cell,) = compare.compare(base, new).cells
    assert cell.new_n == 30 and cell.verdict == "same"


def test_a_speedup_is_an_improvement():
    result = compare.compare(frame([row(samples=timed(10e-3, 1))]), frame([row(samples=timed(7e-3, 2))]))
    assert result.cells[0].verdict == "faster"


def test_a_significant_change_below_the_threshold_does_not_count():
    base, new = timed(10e-3, 1, noise=0.002), timed(10.2e-3, 2, noise=0.002)
    (cell,) = compare.compare(frame([row(samples=base)]), frame([row(samples=new)]), threshold=0.05).cells
    assert cell.p_value < 0.05 and cell.verdict == "same"  # a real 2% is within the minimum effect
    # with a 1% minimum effect, and past the spread between processes (0.5%) by that
    steady = {"process_spread": 0.005}
    (cell,) = compare.compare(frame([row(samples=base, **steady)]), frame([row(samples=new, **steady)]),
                              threshold=0.01).cells
    assert cell.verdict == "slower"


def test_a_large_change_with_too_few_samples_is_not_significant():
    # 3 vs 3 samples can never reach p < 0.05 two-sided: unsure, with its p-value.
    (cell,) = compare.compare(frame([row(samples=[1.0, 1.1, 1.2])]), frame([row(samples=[2.0, 2.1, 2.2])])).cells
    assert cell.ratio == pytest.approx(2.1 / 1.1) and cell.p_value == pytest.approx(0.1)
    assert cell.verdict == "unsure"


def test_cells_in_one_run_only_and_status_changes_are_counted():
    base = [row("py", timed(5e-3, 1)), row("cpp", timed(2e-3, 2)), row("cuda", status="unavailable"),
            row("jit", timed(1e-3, 3))]
    new = [row("py", timed(5e-3, 4)), row("cpp", status="crashed"), row("cuda", status="unavailable"),
           row("compile", timed(1e-3, 5))]
    result = compare.compare(frame(base), frame(new))
    verdicts = {c.impl: c.verdict for c in result.cells}
    assert verdicts == {"py": "same", "cpp": "broken", "cuda": "not timed", "jit": "only in base",
                        "compile": "only in new"}
    assert result.counts["only in base"] == 1 and result.counts["only in new"] == 1
    assert [c.impl for c in result.regressions] == ["cpp"]  # a cell that stopped working is a regression


def test_cells_are_matched_by_params_and_pass():
    base = [row(samples=timed(1e-3, 1), batch=8), row(samples=timed(2e-3, 2), batch=16, pass_name="backward")]
    new = [row(samples=timed(2e-3, 3), batch=16, pass_name="backward"), row(samples=timed(1e-3, 4), batch=8)]
    assert [c.verdict for c in compare.compare(frame(base), frame(new)).cells] == ["same", "same"]


def test_a_cell_repeated_in_merged_runs_compares_its_latest_measurement():
    new = [{**row(samples=timed(2e-3, 1)), "run_id": "20240102-000000-bbbbbb"},
           {**row(samples=timed(1e-3, 2)), "run_id": "20240101-000000-aaaaaa"}]
    (cell,) = compare.compare(frame([row(samples=timed(1e-3, 3))]), frame(new)).cells
    assert cell.verdict == "slower" and cell.ratio == pytest.approx(2, rel=0.05)


def test_ordered_puts_regressions_first_worst_first():
    base = [row("a", timed(1e-3, 1)), row("b", timed(1e-3, 2)), row("c", timed(1e-3, 3)), row("d", timed(1e-3, 4))]
    new = [row("a", timed(0.5e-3, 5)), row("b", timed(1.3e-3, 6)), row("c", timed(1e-3, 7)), row("d", timed(2e-3, 8))]
    result = compare.compare(frame(base), frame(new))
    assert [(c.impl, c.verdict) for c in result.ordered()] == [
        ("d", "slower"), ("b", "slower"), ("a", "faster"), ("c", "same")]


def test_differing_hosts_and_torch_versions_are_reported():
    base = frame([row(samples=timed(1e-3, 1))])
    new = frame([row(samples=timed(1e-3, 2), host="other", torch_version="2.5.0")])
    result = compare.compare(base, new)
    assert {d.field: (d.base, d.new) for d in result.env_differences} == {
        "host": ("box", "other"), "torch_version": ("2.4.0", "2.5.0")}
    (warning,) = result.warnings()
    assert "host: box -> other" in warning and "torch_version: 2.4.0 -> 2.5.0" in warning
    assert compare.compare(base, base).warnings() == []


def test_runs_measured_at_different_memory_bandwidth_get_a_warning():
    def run(cpp_gbps: float, py_gbps: float, seed: int) -> pd.DataFrame:
        return frame([{**row(samples=timed(1e-3, seed)), "mem_gbps": cpp_gbps},
                      {**row("py", samples=timed(1e-3, seed + 1)), "mem_gbps": py_gbps}])

    base, slower = run(40.0, 44.0, 1), run(30.0, 32.0, 3)
    result = compare.compare(base, slower)
    assert result.bandwidth == (42.0, 31.0)
    (warning,) = result.warnings()
    assert "42.0 GB/s in base, 31.0 GB/s in new" in warning
    assert result.to_dict()["bandwidth_gbps"] == {"base": 42.0, "new": 31.0}
    within = frame([{**row(samples=timed(1e-3, 2)), "mem_gbps": 38.0}])
    assert compare.compare(base, within).warnings() == []  # 10% apart
    assert compare.compare(base, frame([row(samples=timed(1e-3, 2))])).warnings() == []  # no probes in new


def test_a_run_other_work_shared_the_machine_with_gets_a_warning():
    base, new = frame([row(samples=timed(1e-3, 1))]), frame([row(samples=timed(1e-3, 2))])
    result = compare.compare(base, new, base_meta=[{"busy_stretch": None}],
                             new_meta=[{"busy_stretch": {"cores": 1.0, "share": 0.48}}])
    (warning,) = result.warnings()
    assert warning.startswith("other work kept about 1.0 cores busy through 48% of the new run: its CPU cells may")
    assert result.to_dict()["busy_stretch"] == {"base": None, "new": {"cores": 1.0, "share": 0.48}}
    assert compare.compare(base, new).warnings() == []


def test_a_run_whose_machine_had_no_calibration_gets_a_warning_naming_the_side_and_what_it_went_without():
    base, new = frame([row(samples=timed(1e-3, 1))]), frame([row(samples=timed(1e-3, 2))])
    result = compare.compare(base, new, base_meta=[{"peaks": {}}], new_meta=[{"peaks": {"cpu": {"canary_s": 2e-4}}}])
    (warning,) = result.warnings()
    assert warning.startswith("the base run's machine had no calibration of its CPU: its CPU passes had no wait")
    assert "no change held against the machine's speed in `compare`" in warning
    assert result.to_dict()["warnings"] == [warning]
    assert compare.compare(base, new, base_meta=[{}], new_meta=[{"peaks": None}]).warnings() == []  # not recorded


def test_environment_comes_from_run_json_when_rows_lack_it():
    base = frame([row(samples=timed(1e-3, 1), host=None)])
    new = frame([row(samples=timed(1e-3, 2), host=None)])
    result = compare.compare(base, new, base_meta=[{"host": "a"}], new_meta=[{"environment": {"host": "b"}}])
    assert [d.field for d in result.env_differences] == ["host"]


def test_to_dict_is_plain_json():
    result = compare.compare(frame([row(samples=timed(10e-3, 1))]), frame([row(samples=timed(12e-3, 2))]))
    data = json.loads(json.dumps(result.to_dict()))
    assert data["counts"]["slower"] == 1 and data["cells"][0]["verdict"] == "slower"
    assert data["cells"][0]["pass"] == "forward" and data["threshold"] == 0.05


def test_mann_whitney_edge_cases():
    assert verdict.mann_whitney_p([1.0], [2.0, 3.0]) is None
    assert verdict.mann_whitney_p([1.0, 1.0], [1.0, 1.0]) == 1.0


def test_load_side_reads_a_run_folder_and_a_parquet_file(tmp_path):
    writer = storage.RunWriter(tmp_path, "20240101-000000-aaaaaa", {"host": "meta-host"})
    part = writer.write([row(samples=timed(1e-3, 1))])
    writer.finish()
    for path in (writer.dir, part):
        rows, metas = compare.load_side(path)
        assert len(rows) == 1 and metas[0]["host"] == "meta-host"


def gpu_row(gpu: str, samples: list[float], impl: str = "cuda") -> dict:
    return {**row(impl=impl, samples=samples), "device": "cuda", "gpu_name": gpu}


def test_cells_on_different_gpu_kinds_are_not_compared_unless_asked():
    base = frame([gpu_row("NVIDIA A100-SXM4-80GB", timed(10e-3, 1))])
    new = frame([gpu_row("NVIDIA H100 80GB HBM3", timed(5e-3, 2))])
    with pytest.raises(UsageError, match="cuda cells ran on NVIDIA A100-SXM4-80GB in BASE and on NVIDIA H100"):
        compare.compare(base, new)
    (cell,) = compare.compare(base, new, across_hosts=True).cells
    assert cell.verdict == "faster" and cell.ratio == pytest.approx(0.5, rel=0.03)


def test_a_run_over_two_gpu_kinds_matches_each_cell_to_its_own_kind():
    base = frame([gpu_row("A100", timed(10e-3, 1)), gpu_row("H100", timed(5e-3, 2))])
    new = frame([gpu_row("A100", timed(10e-3, 3)), gpu_row("H100", timed(6e-3, 4))])
    verdicts = sorted((round(c.ratio, 1), c.verdict) for c in compare.compare(base, new).cells)
    assert verdicts == [(1.0, "same"), (1.2, "slower")]  # never A100 against H100


@pytest.mark.parametrize("noise", [0.01, 0.05, 0.3])
def test_an_a_a_comparison_is_same_or_unsure_never_slower_or_faster(noise):
    """The same sweep twice: 200 cells whose samples come from one distribution on both sides."""
    base = [row(f"i{i}", timed(1e-3, 2 * i, n=15, noise=noise)) for i in range(200)]
    new = [row(f"i{i}", timed(1e-3, 2 * i + 1, n=15, noise=noise)) for i in range(200)]
    result = compare.compare(frame(base), frame(new))
    assert result.counts["slower"] == result.counts["faster"] == 0
    assert result.counts["same"] + result.counts["unsure"] == 200
    if noise == 0.01:
        assert result.counts["same"] == 200  # quiet samples: the interval is narrow enough to say so


def test_the_interval_of_the_ratio_covers_the_true_ratio():
    low, high = verdict.ratio_interval(timed(1e-3, 1, n=40), timed(1.3e-3, 2, n=40))
    assert low < 1.3 < high and high - low < 0.1
    assert verdict.ratio_interval([1.0], [1.0, 2.0]) is None


def test_a_change_past_twice_is_said_as_a_factor_and_a_smaller_one_in_percent():
    from benchctl.analysis.comparison import time_change

    assert time_change(1.352, 1.30, 1.41) == "+35.2% [+30,+41]"
    assert time_change(0.8) == "-20.0%"
    assert time_change(267.11, 260.2, 275.0) == "267x slower [260-275]"  # not +26611.0%
    assert time_change(1 / 27, 1 / 29, 1 / 25) == "27.0x faster [25.0-29.0]"  # not -96.3%: its interval turned round
    assert time_change(2.0) == "2.00x slower" and time_change(0.5) == "2.00x faster"


def test_unsure_cells_are_counted_by_their_reason():
    """Two noisy cells and one whose few samples cannot tell: the counts line and --json say which is which."""
    base = [row(samples=timed(10e-3, 1), batch=8, noisy=True), row(samples=timed(10e-3, 2), batch=16, noisy=True),
            row(samples=[1.0, 1.1, 1.2], batch=32), row(samples=timed(10e-3, 3), batch=64)]
    new = [row(samples=timed(13e-3, 4), batch=8), row(samples=timed(13e-3, 5), batch=16),
           row(samples=[2.0, 2.1, 2.2], batch=32), row(samples=timed(13e-3, 6), batch=64)]
    result = compare.compare(frame(base), frame(new))
    assert result.counts["unsure"] == 3 and result.counts["slower"] == 1
    assert result.unsure_reasons == {"noisy": 2, "the samples cannot tell": 1}
    assert json.loads(json.dumps(result.to_dict()))["unsure_reasons"] == {"noisy": 2, "the samples cannot tell": 1}


def quick(median: float, seed: int, **facts) -> pd.DataFrame:
    """A row as `run --quick` leaves it: one process, so no spread between processes."""
    return frame([row(samples=timed(median, seed), processes=None, process_spread=None, **facts)])


def test_a_change_past_gross_is_called_though_a_side_was_noisy():
    """silu's fused forward made to call silu three times, measured as a bisect does (one process): 2.66x
    slower, p 1e-302, the new side noisy. Within GROSS (a 2.2x change: A/A runs moved a cell up to 2.48x as
    timed) the noise still decides nothing; both ways past it, the change is called, and says what it
    outgrew."""
    base = quick(18.3e-6, 1)
    (cell,) = compare.compare(base, quick(18.3e-6 * 2.66, 2, noisy=True)).cells
    assert (cell.verdict, cell.reason, cell.despite) == ("slower", None, verdict.NOISY)
    assert cell.gross_at == verdict.GROSS and cell.words() == "slower (past 2.5x, though noisy)"
    (cell,) = compare.compare(base, quick(18.3e-6 * 2.2, 2, noisy=True)).cells
    assert (cell.verdict, cell.reason, cell.despite) == ("unsure", verdict.NOISY, None)
    (cell,) = compare.compare(quick(18.3e-6 * 2.66, 2, noisy=True), base).cells
    assert (cell.verdict, cell.despite) == ("faster", verdict.NOISY)


def test_a_gross_change_must_pass_the_sides_own_disagreement():
    """NEW's rounds split into modes 3x apart: a 2.7x change is within what the run itself read, a 4x one is
    past it by more than the minimum effect."""
    modes = {"mode_fast_s": 10e-3, "mode_slow_s": 30e-3}
    base = frame([row(samples=timed(10e-3, 1))])
    (cell,) = compare.compare(base, frame([row(samples=timed(27e-3, 2), **modes)])).cells
    assert cell.gross_at == pytest.approx(3 * 1.05)
    assert (cell.verdict, cell.reason) == ("unsure", verdict.ROUNDS_SPLIT)
    (cell,) = compare.compare(base, frame([row(samples=timed(40e-3, 2), **modes)])).cells
    assert (cell.verdict, cell.despite) == ("slower", verdict.ROUNDS_SPLIT)


def test_a_gross_change_is_held_against_the_machine_s_change_and_a_neighbour_s_is_never_called():
    """A 4.2x change while the canary moved 23% is 3.4x once divided by it: called. The same change while the
    canary read 2x is 2.1x: the machine's doing as far as anyone can tell. A disturbed side (a neighbour made
    rounds 100-300x slower) outgrows nothing."""
    base = quick(10e-3, 1, canary_s=300e-6)
    (cell,) = compare.compare(base, quick(42e-3, 2, canary_s=369e-6)).cells
    assert (cell.verdict, cell.despite) == ("slower", "the machine changed speed (canary +23%)")
    (cell,) = compare.compare(base, quick(42e-3, 2, canary_s=600e-6)).cells
    assert (cell.verdict, cell.reason) == ("unsure", "the machine changed speed (canary +100%)")
    (cell,) = compare.compare(base, quick(100e-3, 2, canary_s=300e-6, stop="disturbed")).cells
    assert (cell.verdict, cell.reason, cell.despite) == ("unsure", verdict.DISTURBED, None)

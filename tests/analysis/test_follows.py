"""follows: which cells' times follow the machine's probes across their runs of the same code."""

import pandas as pd
import pytest

from benchctl.analysis import follows
from benchctl.analysis.history import Point, Series
from benchctl.results.schema import BUSY_WARN_CORES

GBPS = [80.0, 42.0, 61.0, 35.0, 74.0, 50.0, 39.0, 66.0]
CANARY = [1.02, 1.30, 1.10, 1.21, 1.05, 1.40, 1.15, 1.25]


def series(times, impl="py", code=None, gbps=GBPS, canary=CANARY, other_cores=None) -> Series:
    """One cell's runs, oldest first: its times with the probes' readings, all of code "c1" unless `code` says."""
    codes = code or ["c1"] * len(times)
    busy = other_cores or [0.0] * len(times)
    points = tuple(Point(f"run{i}", None, False, f"2026-01-{i + 1:02d}", t, t, t,
                         pd.Series({"op": "grid_sample", "target": "sample", "impl": impl, "pass": "forward",
                                    "axis": "image_size", "axis_value": 1024.0, "device": "cpu", "impl_code": c,
                                    "median_s": t, "mem_gbps": g, "canary_ratio": k, "other_cores": b}))
                   for i, (t, c, g, k, b) in enumerate(zip(times, codes, gbps, canary, busy)))
    return Series(("grid_sample", "sample", impl, "cpu", "float32", "{}", "forward"), "EPYC", points)


def test_a_cell_whose_time_falls_as_the_memory_probe_rises_follows_the_memory_probe():
    cached = series([1e-3 * 40 / g for g in GBPS])  # twice the bandwidth, half the time
    found = follows.follows([cached])
    assert len(found) == 1 and found[0].probe == "memory probe"
    assert found[0].rho == pytest.approx(-1.0) and found[0].spread == pytest.approx(80 / 35)
    assert found[0].text() == ("grid_sample/sample py forward at image_size=1024: 0.5 ms with the memory probe at "
                               "80 GB/s, 1.14 ms at 35 GB/s (rho -1.00 over 8 runs)")


def test_a_cell_that_follows_neither_probe_is_not_named():
    steady = series([1.00e-3, 1.02e-3, 0.99e-3, 1.01e-3, 1.00e-3, 0.98e-3, 1.03e-3, 0.97e-3])
    assert follows.follows([steady]) == []


def test_the_canary_names_a_cell_it_follows_more_closely_than_the_memory_probe():
    compute = series([1e-4 * k for k in CANARY], impl="cpp")
    found = follows.follows([compute])
    assert [f.probe for f in found] == ["canary"] and found[0].rho == pytest.approx(1.0)
    assert "0.102 ms with the canary at 1.02x its calibrated time, 0.14 ms at 1.40x" in found[0].text()


def test_only_the_latest_codes_runs_left_alone_count_and_too_few_say_nothing():
    times = [1e-3 * 40 / g for g in GBPS]
    older = series(times, code=["c0", "c0", "c0"] + ["c1"] * 5)
    assert follows.readings(older, "mem_gbps") == tuple((t, g) for t, g in zip(times[3:], GBPS[3:]))
    assert follows.follows([older]) == []  # five runs of the latest code: under MIN_RUNS
    beside = series(times, other_cores=[BUSY_WARN_CORES] * 3 + [0.0] * 5)
    assert len(follows.readings(beside, "mem_gbps")) == 5 and follows.follows([beside]) == []


def test_the_p_values_are_adjusted_over_every_cell_tried():
    # rho -0.86 over 8 runs: p 0.0065 alone; among twelve tries of cells that follow nothing, adjusted 0.085
    loose = series([1e-3 * 40 / g for g in [80.0, 42.0, 61.0, 35.0, 74.0, 50.0, 39.0, 66.0]],
                   gbps=[80.0, 42.0, 38.0, 35.0, 74.0, 50.0, 39.0, 66.0], canary=[1.1] * 8)
    assert len(follows.follows([loose])) == 1
    others = [series([1e-3 + 1e-6 * ((i * 7 + j * 3) % 8) for j in range(8)], impl=f"x{i}") for i in range(6)]
    assert follows.follows([loose, *others]) == []


def test_the_line_counts_each_probe_and_names_the_widest_spread():
    found = follows.follows([series([1e-3 * 40 / g for g in GBPS]), series([1e-4 * k for k in CANARY], impl="cpp")])
    said = follows.line(found, 150)
    assert said.startswith("2 of 150 cells' times follow the machine across their runs of the same code")
    assert "1 the memory probe, 1 the canary; the widest, grid_sample/sample py forward" in said
    assert follows.line([], 150) is None


def runs(count: int = 8) -> pd.DataFrame:
    """One cell's rows in `count` runs, oldest first: its time halves where the memory probe doubles."""
    return pd.DataFrame([{"run_id": f"2026010{i}-000000-aaaaaa", "op": "grid_sample", "target": "sample",
                          "impl": "py", "device": "cpu", "dtype": "float32", "params": '{"image_size": 1024}',
                          "pass": "forward", "axis": "image_size", "axis_value": 1024.0, "status": "ok",
                          "cpu_name": "EPYC", "impl_code": "c1", "median_s": 1e-3 * 40 / g, "ci_lo_s": 1e-3,
                          "ci_hi_s": 1e-3, "mem_gbps": g, "canary_ratio": 1.1, "timestamp": f"2026-01-0{i}"}
                         for i, g in enumerate(GBPS[:count], start=1)])


def test_a_run_names_its_passes_that_follow_the_machine_with_its_probe_against_the_earlier_runs():
    rows = runs()
    last = rows["run_id"] == rows["run_id"].max()
    said = follows.run_line(rows[last], rows[~last])
    assert said == ("1 of this run's 1 passes follow the machine across it and the earlier runs of the same code in "
                    "its folder (1 the memory probe): the memory probe read a median 66 GB/s through "
                    "this run, 35-80 in the earlier runs; the widest, grid_sample/sample py forward at "
                    "image_size=1024: 0.5 ms with the memory probe at 80 GB/s, 1.14 ms at 35 GB/s (rho -1.00 over 8 "
                    "runs). `benchctl history` draws them")
    assert follows.run_line(rows[last], None) is None
    assert follows.run_line(runs(5).iloc[-1:], runs(5).iloc[:-1]) is None  # five runs: too few to tell


def test_a_gpu_pass_follows_its_sm_clock():
    clocks = [1980.0, 1410.0, 1755.0, 1200.0, 1890.0, 1590.0, 1305.0, 1830.0]
    cpu = series([1e-3 * 1980 / c for c in clocks])
    gpu = Series(cpu.key, "H100", tuple(
        Point(p.run_id, None, False, p.time, p.median_s, p.median_s, p.median_s,
              pd.Series({**p.row.drop(["mem_gbps", "canary_ratio"]), "device": "cuda", "sm_clock_mhz": c}))
        for p, c in zip(cpu.points, clocks)))
    (found,) = follows.follows([gpu])
    assert found.probe == "SM clock" and found.rho == pytest.approx(-1.0)
    assert "1 ms with the SM clock at 1980 MHz, 1.65 ms at 1200 MHz" in found.text()
    assert follows.line([found], 1).split(": ")[1].startswith("1 the SM clock;")
    assert "--flush-caches" not in follows.line([found], 1)  # the cold-cache pointer is for the memory probe's


def folder(gbps: list[float], **changed) -> pd.DataFrame:
    """A run per reading of the memory probe, each with py (time 40 / GB/s ms, speedup GB/s / 20 over its partner)
    and cpp (1 ms in every run)."""
    rows = [{"run_id": f"run{i}", "op": "grid_sample", "target": "sample", "impl": impl, "device": "cpu",
             "dtype": "float32", "params": "{}", "pass": "forward", "status": "ok", "impl_code": "c1",
             "partner_code": "p1", "mem_gbps": g, "median_s": 40e-3 / g if impl == "py" else 1e-3,
             "paired_speedup": g / 20 if impl == "py" else 2.0} for i, g in enumerate(gbps) for impl in ("py", "cpp")]
    return pd.DataFrame(rows).assign(**changed)


def test_the_rows_of_a_run_whose_cell_follows_the_memory_probe_across_it_and_the_earlier_runs_are_flagged():
    now = folder([75.0], run_id="run9").iloc[::-1]  # cpp first: a flag goes to its own row
    assert follows.memory_followers(now, folder(GBPS)).tolist() == [False, True]
    assert follows.memory_followers(now, folder(GBPS), "paired_speedup").tolist() == [False, True]
    assert follows.memory_followers(now, folder(GBPS[:4])).tolist() == [False, False]  # five runs: under MIN_RUNS
    assert follows.memory_followers(now, None).tolist() == [False, False]
    # the speedup is of other partner code now: its earlier runs are not of the same code, its time's are
    other = now.assign(partner_code="p2")
    assert follows.memory_followers(other, folder(GBPS), "paired_speedup").tolist() == [False, False]
    assert follows.memory_followers(other, folder(GBPS)).tolist() == [False, True]

"""The benchmark scripts' own logic that a GPU run depends on, checked here so that no GPU time is lost to it."""

import importlib.util
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def _module(name: str, monkeypatch):
    """benchmarks/NAME.py loaded as a module (registered while the test runs: its dataclasses look it up)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(p.stem for p in BENCHMARKS.glob("*.py")))
def test_every_benchmark_script_loads(name, monkeypatch):
    """What each script imports from benchctl is still there (a renamed or moved name fails here, not on a
    GPU machine whose minutes are counted)."""
    assert callable(_module(name, monkeypatch).main)


def test_the_cuda_ab_bench_stages_every_header_the_checkout_s_kernels_include(tmp_path, monkeypatch):
    """`--own` builds the checkout's hoconv2d_cuda.cu from one folder: each header it includes, and each
    header those include, must be staged beside it."""
    bench = _module("hoconv2d_cuda_ab_bench", monkeypatch)
    monkeypatch.setattr(bench.tempfile, "gettempdir", lambda: str(tmp_path))
    staged = bench.stage(bench.OWN, 0)
    wanted = {name for f in staged.iterdir() for name in INCLUDE.findall(f.read_text())}
    assert "hoconv2d_tile.h" in wanted and wanted <= {f.name for f in staged.iterdir()}


def test_the_cuda_ab_bench_takes_a_version_folder_as_gpu_checks_makes_it(tmp_path, monkeypatch):
    """gpu_checks.sh stages a version of hoconv2d_variants with the headers it includes; the checkout has one
    more (hoconv2d_tile.h), which an older version neither has nor needs."""
    bench = _module("hoconv2d_cuda_ab_bench", monkeypatch)
    script = (BENCHMARKS / "gpu_checks.sh").read_text()
    copied = re.search(r"^\s*cp (extensions/\S+ .*) \$d$", script, re.M).group(1).split()
    version = tmp_path / "b6"
    version.mkdir()
    for path in copied:
        (version / Path(path).name).write_text((BENCHMARKS.parent / path).read_text())
    variants = BENCHMARKS / "hoconv2d_variants" / "hoconv2d_backward_cuda.cu"
    (version / "hoconv2d_cuda.cu").write_text(variants.read_text())
    files = bench.version_files(version)
    assert [f.name for f in files] == ["hoconv2d_cuda.cu", "hoconv2d.h", "hoconv2d_checks.h", "benchctl_hd.h"]
    included = set(INCLUDE.findall(files[0].read_text()))
    assert included <= {f.name for f in files}
    with pytest.raises(SystemExit, match="no hoconv2d_cuda.cu there"):
        bench.version_files(tmp_path)


def _gpu_row(impl: str, pass_name: str, median: float, host: float, mode: str = "eager", **kw) -> dict:
    nbytes = 398.2e6 if pass_name == "forward" else 757.9e6  # hoconv2d filter's at B=64
    return {"op": "hoconv2d", "target": "filter", "impl": impl, "device": kw.pop("device", "cuda"),
            "dtype": "float32", "params": '{"batch_size": 64}', "axis": "batch_size", "axis_value": 64.0,
            "pass": pass_name, "status": kw.pop("status", "ok"), "median_s": median, "host_s": host,
            "timing_mode": mode, "flush_l2": False, "bytes": nbytes, "gbps": nbytes / median * 1e-9,
            "pct_of_peak": 100 * nbytes / 3000e9 / median, "peak_level": "DRAM", **kw}


def test_the_floor_table_holds_each_gpu_pass_against_the_calibrated_floor(tmp_path, monkeypatch):
    """The floor table of the CUDA kernels from a run as `run` stores it: the copy bandwidth from the run's
    calibration, a pass at the goal and one under it, a host-bound pass that never meets it (its time is the
    host's), each way of timing a line of its own; other devices, failed passes and the implementations not
    asked for left out (every one where none is named)."""
    from benchctl.results import storage

    table = _module("floor_table", monkeypatch)
    peaks = {"environment": {"peaks": {"cuda": {"gbps": 3000}}}}
    writer = storage.RunWriter(tmp_path, "20261127-000000-aaaaaa", peaks)
    writer.write([_gpu_row("cuda", "backward", 0.355e-3, 0.02e-3), _gpu_row("triton", "backward", 0.895e-3, 0.03e-3),
                  _gpu_row("cuda", "forward", 0.2e-3, 0.19e-3),
                  _gpu_row("cuda", "forward", 0.17e-3, 0.01e-3, "cuda_graph"),
                  _gpu_row("cuda", "forward_backward", 1e-3, 0, status="error"), _gpu_row("py", "forward", 2e-3, 0),
                  _gpu_row("cpp", "forward", 5e-3, 0, device="cpu")])
    writer.finish()
    folders = storage.run_folders([tmp_path])
    rows, metas = storage.load_run(folders[0]), storage.run_metas(folders)
    copy = table.copy_bandwidth(rows, metas, "cuda")
    lines = table.floor_rows(rows, copy, ["cuda", "triton"], "cuda")
    assert copy == 3000
    assert [line[2:5] + line[7:] for line in lines] == [
        ("forward", "cuda", "cuda_graph", "2342", "78%", "78% (DRAM)", "yes"),
        ("forward", "cuda", "eager", "1991", "66%", "66% (DRAM)", "host"),
        ("backward", "cuda", "eager", "2135", "71%", "71% (DRAM)", "yes"),
        ("backward", "triton", "eager", "847", "28%", "28% (DRAM)", "no")]
    assert lines[0][:2] == ("hoconv2d/filter", "batch_size=64") and lines[2][5:7] == ("757.9", "0.355")
    assert table.markdown(lines).splitlines()[0].startswith("| operator | params | pass | impl | timed | MB |")
    assert [line[3] for line in table.floor_rows(rows, copy, None, "cuda")] == ["cuda", "cuda", "py", "cuda", "triton"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU these cells would run")
def test_the_gpu_checks_seed_sweeps_name_params_the_operators_take(tmp_path):
    """Each seed-size sweep of gpu_checks.sh, as `run` parses it here: it gets as far as finding no GPU, so
    no operator, target or param of it was renamed under it."""
    from click.testing import CliRunner

    from benchctl.cli import cli

    script = (BENCHMARKS / "gpu_checks.sh").read_text()
    seeds = re.findall(r'"([a-z,-]+ [a-z_0-9]+ --[^"]+)"', script[script.index("SEED=("):])
    assert [s.split()[1] for s in seeds] == ["hoconv2d", "naflex_posembed", "lstm_cell", "grid_sample"]
    for seed in seeds:
        impls, *words = seed.split()
        result = CliRunner().invoke(cli, ["run", impls, "gpu", "--op", *words, "--out", str(tmp_path)])
        assert result.exit_code != 0 and "nothing can run here: no CUDA device" in result.output, seed


def test_gpu_checks_puts_the_checkout_on_pythonpath_for_the_scripts_it_runs(tmp_path):
    """floor_table.py and the A/B bench, run as scripts, import benchctl, which a GPU machine without a network
    has not installed: gpu_checks.sh puts the checkout (the folder it runs from) on PYTHONPATH, whether or not
    .whl/ holds the wheels it installs."""
    script = (BENCHMARKS / "gpu_checks.sh").read_text()
    preamble = script[:script.index("\nleft()")]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OUT=str(tmp_path / "out"), WORK=str(tmp_path / "work"))
    checkout = tmp_path / "checkout"  # no .whl/ in it
    checkout.mkdir()
    shown = subprocess.run(["bash", "-c", preamble + '\necho "$PYTHONPATH"'], cwd=checkout, env=env,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert str(checkout) in shown.stdout.strip().split(":")


def _run_part(script: str, name: str) -> int:
    """Runs gpu_checks.sh's part NAME here, in this process (`$PY -m benchctl ...` or `$PY -c CODE`); its cap."""
    from click.testing import CliRunner

    from benchctl.cli import cli

    cap, command = re.search(rf"^\S* ?part {name} (\d+) \$PY (.+)$", script, re.M).groups()
    words = shlex.split(command)
    if words[:2] == ["-m", "benchctl"]:
        result = CliRunner().invoke(cli, words[2:])
        assert result.exit_code == 0, result.output
    else:
        assert words[0] == "-c", command
        exec(words[1], {})
    return int(cap)


def test_the_gpu_checks_calibration_times_the_gpu_alone_well_within_its_cap(tmp_path, monkeypatch):
    """The floors gpu_checks.sh is for come from the GPU's calibrated peaks. A calibration of the CPU as well (six
    windows of copies at every size between its cache levels: 121 s on the 2-core VM) runs past the part's cap, and
    one stopped stores nothing: every run after it had no `% of peak`, floor.md no shares. Run here on fake copies
    and matmuls, the part times the GPU alone and stores its peaks, and the least time its policies allow (each copy
    and matmul warmed up and sampled for their minimum) is under half its cap."""
    from benchctl.machine import caches, load
    from benchctl.measure import calibrate, copies, matmul_peaks

    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path))
    monkeypatch.setattr("benchctl.ops.registry.cuda_device_reason", lambda: None)  # as on the GPU machine
    timed = []
    monkeypatch.setattr(copies, "copy_gbps", lambda device, nbytes: timed.append(("copy", device)) or 3000.0)
    monkeypatch.setattr(copies, "cache_sizes", lambda device: [caches.CacheSize("L2", 50 << 20, 1)])  # an H100's
    monkeypatch.setattr(matmul_peaks, "matmul_gflops", lambda device, dtype: timed.append(("matmul", device)) or 5e4)
    monkeypatch.setattr(calibrate, "canary_window", lambda counts: calibrate.Window({n: 2e-4 for n in counts}, [50.0]))
    monkeypatch.setattr(matmul_peaks, "matmul_reading", lambda: 200.0)
    monkeypatch.setattr(load, "others_busy", lambda: 0.0)
    monkeypatch.setattr(load.Timeline, "__enter__", lambda self: self)  # a quiet machine all through

    cap = _run_part((BENCHMARKS / "gpu_checks.sh").read_text(), "calibrate")
    assert {device for _, device in timed} == {"cuda"}
    assert calibrate.load_peaks()["cuda"]["gbps"] == 3000.0  # what floor_table.py holds the kernels to
    copy_s = copies.COPY_POLICY.warmup_min_time + copies.COPY_POLICY.min_time
    matmul_s = matmul_peaks.SIZING.warmup_min_time + matmul_peaks.POLICY.warmup_min_time + matmul_peaks.POLICY.min_time
    least_s = sum(copy_s if what == "copy" else matmul_s for what, _ in timed)
    assert 20 < least_s < cap / 2  # 42 copies (6 sizes, 7 windows) and 5 matmul rates: 29 s


def test_the_history_bench_writes_its_slowdown_into_the_operators_file(monkeypatch):
    """The planted slowdown must be code (a constant the digest sees), not the environment variable the
    A/A bench uses."""
    bench = _module("history_bench", monkeypatch)
    text = bench.operator(1.2)
    assert "SLOWDOWN = 1.2" in text and "os.environ" not in text
    compile(text, "slowed.py", "exec")


def test_the_settle_bench_plays_back_the_rule_the_sweep_waits_by(monkeypatch):
    """A wait the bench plays back from a trace under the sweep's rule ends at the reading the sweep's own wait
    (canary.wait_for_speed) ends at, on the same readings; the first-reading rule ends at the first under the bar."""
    from benchctl.machine import canary

    bench = _module("settle_bench", monkeypatch)
    ratios = [1.5, 1.1, 1.5, 1.4, 1.1, 1.12, 2.0, 1.0]
    readings, now = iter(ratios), [0.0]
    _, waited = canary.wait_for_speed(1.0, 60.0, read=lambda: next(readings),
                                      sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0])
    assert bench.waits(ratios, canary.SPEED_READINGS, after=1)[0] == (waited / canary.POLL_S, 2.0) == (5, 2.0)
    assert bench.waits(ratios, 1, after=1)[0] == (1, 1.5)


def test_the_canary_track_bench_matches_passes_and_measures_what_the_canary_explains(monkeypatch):
    bench = _module("canary_track_bench", monkeypatch)
    base = pd.DataFrame({"op": "x", "target": "op", "impl": ["py", "cpp", "cpp"], "device": ["cpu", "cpu", "cuda"],
                         "dtype": "float32", "params": "{}", "pass": "forward", "status": "ok",
                         "median_s": 1e-3, "canary_ratio": [1.0, 1.0, None]})
    # py slowed with its canary, cpp slowed by as much with its canary still: the canary explains one of two
    new = base.assign(median_s=[1.3e-3, 1.3e-3, 2e-3], canary_ratio=[1.3, 1.0, None])
    pairs = bench.matched(base, new)
    assert len(pairs) == 2  # the GPU pass has no canary
    found = bench.tracking(pairs)
    assert found["correlation"] != found["correlation"]  # NaN: one of the two changes does not vary
    assert found["timed"] == pytest.approx(math.log(1.3)) and found["divided"] == pytest.approx(math.log(1.3) / 2)
    assert found["moved_passes"] == 1 and found["moved"] == pytest.approx(math.log(1.3))
    assert found["still"] == pytest.approx(math.log(1.3))
    tracked = bench.tracking(bench.matched(base, base.assign(median_s=[1.3e-3, 1.1e-3, 0], canary_ratio=[1.3, 1.1, 0])))
    assert tracked["correlation"] == pytest.approx(1.0) and tracked["divided"] == pytest.approx(0.0)


def test_the_memory_state_bench_counts_a_reading_outside_the_range_by_more_than_memory_near(monkeypatch):
    bench = _module("memory_state_bench", monkeypatch)
    assert [bench.outside(g, 40.0, 50.0) for g in (57.6, 57.4, 45.0, 34.9, 34.7)] == [1, 0, 0, 0, -1]
    assert bench.outside(math.nan, 40.0, 50.0) == 0 and bench.outside(45.0, math.nan, math.nan) == 0


def test_the_earlier_range_bench_counts_times_within_their_earlier_runs_range(monkeypatch):
    bench = _module("earlier_range_bench", monkeypatch)
    assert [bench.expected(n) for n in (2, 3, 10)] == pytest.approx([1 / 3, 0.5, 9 / 11])
    assert [bench.band(n) for n in (2, 3, 4, 10)] == ["2-3", "2-3", "4-6", "7-10"]

    def timed(run_id, medians_ms, **changed):
        return pd.DataFrame({"run_id": run_id, "op": "silu", "target": "op", "impl": "py", "device": "cpu",
                             "dtype": "float32", "params": [f'{{"batch_size": {8 << i}}}' for i in range(3)],
                             "pass": "forward", "status": "ok", "median_s": [m / 1e3 for m in medians_ms],
                             "canary_ratio": 1.0, "cpu_name": "AMD EPYC", "threads": 2, "torch_version": "2.14.1",
                             "allocator": "system", "impl_code": "aaaa"}).assign(**changed)

    earlier = pd.concat([timed("r1", [1.0, 1.0, 1.0]), timed("r2", [2.0, 2.0, 2.0]),
                         timed("r3", [9.0, 9.0, 9.0], other_cores=1.5)])  # r3 beside other work: not counted
    now = timed("r4", [1.5, 2.5, 0.5])
    assert bench.times_inside(now, earlier) == [(2, True), (2, False), (2, False)]
    assert bench.times_inside(now, earlier.iloc[:3]) == []  # one earlier run: no range
    inside = bench.standing(timed("r4", [1.5, 1.5, 1.5]), earlier)  # none outside where 3 x 2/3 = 2 were expected
    assert inside.outside == 0 and bench.z(inside) == pytest.approx(-2 / (3 * 2 / 9) ** 0.5)

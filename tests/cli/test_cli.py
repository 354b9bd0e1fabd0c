"""The command line through click's CliRunner: list, env, run, check, and what bad input gets."""

import json
import os
import re
import time

import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from benchctl.measure import matmul_peaks
from benchctl.results import storage
from benchctl.results.schema import own_aside, slow_machine
from benchctl.cli import cli
from benchctl.vocab import Stop


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def test_help_lists_every_command():
    result = invoke("--help")
    assert result.exit_code == 0
    for name in ("list", "env", "build", "check", "run", "profile", "report", "compare", "maxbatch", "history",
                 "bisect"):
        assert name in result.output


def test_list_json_has_reasons(example_ops_dir):
    result = invoke("list", "--json", "--ops-dir", str(example_ops_dir))
    rows = json.loads(result.stdout)  # warnings go to stderr
    mine = {(r["implementation"], r["device"]): r for r in rows if r["operator"] == "scale_shift"}
    assert mine[("py", "cpu")]["available"] is True
    if not torch.cuda.is_available():
        assert mine[("py", "cuda")]["available"] is False and "CUDA" in mine[("py", "cuda")]["reason"]


def test_list_prints_a_row_per_implementation_and_a_line_for_a_device_where_nothing_runs():
    from benchctl.cli.list_cmd import by_device

    def row(op, impl, device, reason=""):
        return {"operator": op, "implementation": impl, "device": device, "available": not reason, "reason": reason}

    gpu = "no CUDA device"
    rows = [row("mine", "", "", "operator file mine.py failed to import: SyntaxError at line 3"),
            row("op", "py", "cpu"), row("op", "py", "cuda", gpu), row("op", "cuda", "cuda", gpu),
            row("op", "triton", "cpu", "Triton runs on a GPU"), row("op", "triton", "cuda", gpu)]
    assert by_device(rows) == (["operator", "implementation", "cpu"],
                               [["op", "py", "yes"], ["op", "cuda", "(cuda only)"],
                                ["op", "triton", "Triton runs on a GPU"]],
                               ["mine: operator file mine.py failed to import: SyntaxError at line 3",
                                f"cuda: {gpu} (every implementation)"])
    rows[3] = row("op", "cuda", "cuda")  # a GPU: the device keeps its column
    assert by_device(rows)[:2] == (["operator", "implementation", "cpu", "cuda"],
                                   [["op", "py", "yes", gpu], ["op", "cuda", "(cuda only)", "yes"],
                                    ["op", "triton", "Triton runs on a GPU", gpu]])
    rows[3]["dtypes"] = ["float32", "float64"]  # declared: a bfloat16 cell is unavailable, said before it is asked
    assert by_device(rows)[1][1] == ["op", "cuda", "(cuda only)", "yes (float32, float64 only)"]


def test_list_params_says_what_each_param_takes():
    result = invoke("list", "--params")
    assert result.exit_code == 0, result.output
    rows = {tuple(c.strip() for c in line.split("│")[1:3]): [c.strip() for c in line.split("│")[3:-1]]
            for line in result.stdout.splitlines() if line.count("│") == 6}
    assert rows[("hoconv2d", "k")] == ["5", "", "integers, at least 1, odd"]
    assert rows[("hoconv2d", "batch_size (axis)")] == ["8", "[1, 2, 4]", "positive integers"]
    assert rows[("lstm_cell", "I")] == ["unset", "", "integers, at least 1 or null (unset)"]
    data = json.loads(invoke("list", "--params", "--json").stdout)
    grid = {r["param"]: r for r in data if r["operator"] == "grid_sample"}
    assert grid["image_size"] == {"operator": "grid_sample", "param": "image_size", "default": 256,
                                  "quick": [256, 1024, 4096], "takes": "integers, at least 1", "axis": True}



def test_list_takes_op_as_the_other_commands_do():
    rows = json.loads(invoke("list", "--json", "--op", "lstm_cell,grid_sample").stdout)
    assert {r["operator"] for r in rows} == {"lstm_cell", "grid_sample"}
    assert {("lstm_cell", "cpp", "cpu"), ("grid_sample", "py", "cpu")} <= {
        (r["operator"], r["implementation"], r["device"]) for r in rows}
    params = json.loads(invoke("list", "--params", "--json", "--op", "hoconv2d").stdout)
    assert {r["operator"] for r in params} == {"hoconv2d"} and "k" in {r["param"] for r in params}
    result = invoke("list", "--op", "nope")
    assert result.exit_code == 2 and "unknown operator 'nope'; choose from grid_sample" in result.output

def test_env_json_has_the_facts():
    facts = json.loads(invoke("env", "--json").stdout)
    assert facts["torch_version"] == torch.__version__ and facts["threads"] >= 1
    assert facts["memory_read_gbps_now"] > 0


def test_env_shows_the_canary_calibrated_on_each_thread_count(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path))
    peaks = {"cpu": {"gbps": 30.0, "gflops": 100.0, "canary_s_by_threads": {"2": 2.48e-4, "1": 3.97e-4}}}
    monkeypatch.setattr("benchctl.measure.calibrate.load_peaks", lambda: peaks)
    facts = json.loads(invoke("env", "--json").stdout)
    assert facts["cpu_canary"] == "397 us on 1 thread, 248 us on 2 threads"
    peaks["cpu"].update(canary_s=2.48e-4, threads=2, canary_windows_s=[3.1e-4, 2.48e-4, 3.2e-4, 2.6e-4])
    facts = json.loads(invoke("env", "--json").stdout)
    assert facts["cpu_canary"] == ("397 us on 1 thread, 248 us on 2 threads; its 4 windows against the fastest: "
                                   "1.00-1.29x on 2 threads")  # a calibration from before each count's were kept
    peaks["cpu"]["canary_windows_by_threads"] = {"1": [3.97e-4, 4.0e-4], "2": [2.48e-4, 4.29e-4]}
    facts = json.loads(invoke("env", "--json").stdout)
    assert facts["cpu_canary"] == ("397 us on 1 thread, 248 us on 2 threads; its 2 windows against the fastest: "
                                   "1.00-1.01x on 1 thread, 1.00-1.73x on 2 threads: it moved on 2 threads, held on "
                                   "one")


def test_env_calibrate_warns_where_the_new_canary_reads_far_slower_than_the_calibration_it_replaced(monkeypatch,
                                                                                                   tmp_path):
    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path))
    stored = [{"cpu": {"gbps": 30.0, "gflops": 100.0, "canary_s_by_threads": {"2": 2.49e-4}}}]
    monkeypatch.setattr("benchctl.measure.calibrate.load_peaks", lambda: stored[-1])
    monkeypatch.setattr("benchctl.measure.calibrate.calibrate", lambda devices: stored.append(
        {"cpu": {**stored[-1]["cpu"], "canary_s_by_threads": {"2": 3.18e-4}}}))
    result = invoke("env", "--calibrate", "--json")
    assert result.exit_code == 0 and len(stored) == 2
    assert "warning: the canary calibrated at 318 us on 2 threads, 1.28x the calibration it replaced (249 us)" in \
        " ".join(result.stderr.split())
    assert "the calibration it replaced" not in invoke("env", "--calibrate", "--json").stderr  # 318 us again


def test_env_says_how_much_each_cache_level_s_copy_held(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path))
    levels = {"L2": {"bytes": 4 << 20, "gbps": 173.9, "copy_bytes": 2 << 20},
              "L3": {"bytes": 480 << 20, "gbps": 57.3}}  # a calibration from before it said
    peaks = {"cpu": {"gbps": 27.5, "gflops": 396.5, "levels": levels}}
    monkeypatch.setattr("benchctl.measure.calibrate.load_peaks", lambda: peaks)
    facts = json.loads(invoke("env", "--json").stdout)
    assert facts["peak_cpu_L2"] == "173.9 GB/s copy of 2 MiB within 4 MiB"
    assert facts["peak_cpu_L3"] == "57.3 GB/s copy within 480 MiB"
    assert facts["peak_cpu"] == "27.5 GB/s copy, 396.5 GFLOP/s matmul"
    peaks["cpu"]["copy_bytes"] = 1920 << 20  # the DRAM copy's, four times that L3
    assert json.loads(invoke("env", "--json").stdout)["peak_cpu"] == "27.5 GB/s copy of 1.88 GiB, 396.5 GFLOP/s matmul"
    assert "peak_cpu_by_size" not in facts
    peaks["cpu"]["copy_sizes"] = [{"copy_bytes": 2 << 20, "gbps": 173.9}, {"copy_bytes": 128 << 20, "gbps": 40.2},
                                  {"copy_bytes": 1920 << 20, "gbps": 27.5}]
    assert json.loads(invoke("env", "--json").stdout)["peak_cpu_by_size"] == (
        "GB/s of a copy holding 2 MiB 174, 128 MiB 40, 1.88 GiB 28")


def test_env_reads_the_canary_now_against_its_calibrated_time_and_says_how_old_the_calibration_is(
        monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path))
    threads = torch.get_num_threads()
    peaks = {"cpu": {"gbps": 30.0, "gflops": 100.0, "canary_s_by_threads": {str(threads): 2.48e-4}}}
    monkeypatch.setattr("benchctl.measure.calibrate.load_peaks", lambda: peaks)
    monkeypatch.setattr("benchctl.machine.canary.canary_on", lambda n: 3.72e-4 if n == threads else None)
    from benchctl.measure.calibrate import calibration_path
    calibration_path().write_text("{}")
    two_hours_ago = time.time() - 2 * 3600
    os.utime(calibration_path(), (two_hours_ago, two_hours_ago))
    facts = json.loads(invoke("env", "--json").stdout)
    assert facts["cpu_canary_now"] == f"372 us on {threads} thread{'s' if threads > 1 else ''}, 1.50x calibrated"
    assert facts["calibration_file"] == f"{calibration_path()} (written 2.0 h ago)"


def test_env_reads_the_canary_now_on_each_calibrated_thread_count_and_says_when_only_one_thread_is_at_speed(
        monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path))
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    peaks = {"cpu": {"gbps": 30.0, "gflops": 100.0, "canary_s_by_threads": {"1": 3.96e-4, "2": 2.56e-4}}}
    monkeypatch.setattr("benchctl.measure.calibrate.load_peaks", lambda: peaks)
    now = {1: 4.0e-4, 2: 4.35e-4}  # the 2-core VM with its two threads in their slow state, one thread at speed
    monkeypatch.setattr("benchctl.machine.canary.canary_on", now.get)
    assert json.loads(invoke("env", "--json").stdout)["cpu_canary_now"] == (
        "400 us on 1 thread, 1.01x calibrated; 435 us on 2 threads, 1.70x calibrated: slow on 2 threads, at speed "
        "on one")
    now[1] = 4.6e-4  # one thread slow too (1.16x): the whole machine, and nothing more to say
    assert json.loads(invoke("env", "--json").stdout)["cpu_canary_now"] == (
        "460 us on 1 thread, 1.16x calibrated; 435 us on 2 threads, 1.70x calibrated")
    now.update({1: 3.9e-4, 2: 1.98e-4})  # 0.77x on 2 threads: the calibration ran in a slow phase
    assert json.loads(invoke("env", "--json").stdout)["cpu_canary_now"] == (
        "390 us on 1 thread, 0.98x calibrated; 198 us on 2 threads, 0.77x calibrated: over 15% faster than "
        "calibrated, so the calibration ran in a slow phase, and a pass as slow as it was cannot read slow; calibrate "
        "again")


def test_env_says_which_matmul_rates_were_timed_in_a_slow_moment_and_raised(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path))
    peaks = {"cpu": {"gbps": 30.0, "gflops": 187.2, "gflops_by_dtype": {"float32": 187.2, "float64": 65.0},
                     "matmul_slowdown": {"float32": 1.44, "float64": 1.0},
                     "matmul_raised_by": matmul_peaks.MATMUL_RAISED_BY}}
    monkeypatch.setattr("benchctl.measure.calibrate.load_peaks", lambda: peaks)
    facts = json.loads(invoke("env", "--json").stdout)
    assert facts["peak_cpu_matmul"] == "float32 187 (raised 1.44x: timed in a slow moment), float64 65"


def test_run_py_cpu_writes_parquet_with_all_passes(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path / "cache"))  # a machine never calibrated: said at the start
    result = invoke("run", "py", "cpu", "--op", "hoconv2d", "--batch-sizes", "1,2", "--param", "H=24",
                    "--param", "W=20", "--min-time", "0.01", "--warmup-time", "0", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    df = storage.load(root=tmp_path)
    assert set(df["pass"]) == {"forward", "backward", "forward_backward"}
    assert set(df["status"]) == {"ok"} and set(df["batch_size"]) == {1, 2} and len(df) == 12
    assert df["correct"].all() and (df["max_rel_err"] < 2e-4).all()
    # n counts the clean samples: those the worker set aside as disturbed, and the audit's probes, are kept,
    # flagged, and left out, unless every one is (a busy machine): then the row counts them all and stops `disturbed`
    for _, row in df.iterrows():
        s, set_aside = row["samples_s"], sum(own_aside(row))
        assert 0 < sum(row["probe"]) and row["n"] == (len(s) if set_aside == len(s) else len(s) - set_aside)
        assert set_aside < len(s) or row["stop"] == Stop.DISTURBED
    assert "warning: no calibration of this machine's CPU (`benchctl env --calibrate` first" in result.stderr
    assert "no calibration of this machine's GPU" not in result.stderr  # no GPU cell ran
    assert re.search(r"speedup\s+vs\s+py", result.output)  # the title wraps at the table's width, which its cells set
    # outside a terminal each cell's line as it ends: a log keeps no progress bar
    done = re.findall(r"^cell (\d+)/(\d+) hoconv2d/(\w+) py cpu float32 \[.*\] \(\d+\.\d s(.*)\)$", result.output, re.M)
    assert [int(n) for n, *_ in done] == list(range(1, len(done) + 1)) and {t for _, t, *_ in done} == {str(len(done))}
    assert len(done) % 4 == 0 and {target for _, _, target, _ in done} == {"module", "filter"}  # 2 targets x 2 batches
    # and how long the cells left will take, from those done (the first also started the worker); none after the last
    lefts = [left for *_, left in done]
    assert all(re.fullmatch(r", (under a minute|about \d+ min) left", left) for left in lefts[:-1]) and lefts[-1] == ""


def test_a_busy_machine_is_warned_about_and_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr("benchctl.machine.facts.busy_cores", lambda: 1.5)
    through = {"cores": 1.5, "share": 0.5}  # and through the run
    monkeypatch.setattr("benchctl.machine.load.busy_stretch", lambda samples: through)
    result = invoke("run", "py", "cpu", "--op", "hoconv2d", "--target", "filter", "--batch-sizes", "1",
                    "--param", "H=12", "--param", "W=12", "--passes", "forward",
                    "--min-time", "0", "--warmup-time", "0",
                    "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "about 1.5 of" in result.output and "busy with other work" in result.output
    (run,) = tmp_path.iterdir()
    meta = json.loads((run / "_run.json").read_text())
    assert meta["busy_cores_at_start"] == 1.5 and meta["busy_stretch"] == through
    assert "other work kept about 1.5 of" in result.output and "through 50% of this run" in result.output
    assert meta["references"] == {"hoconv2d": "py"}  # the report's default baseline
    assert meta["tf32"] == "default"


@pytest.mark.parametrize("now, warned", [(20.0, True), (40.0, False)])
def test_busy_memory_is_warned_about_and_recorded(tmp_path, monkeypatch, now, warned):
    monkeypatch.setattr("benchctl.machine.membw.probe", lambda: now)
    monkeypatch.setattr("benchctl.measure.calibrate.load_peaks",
                        lambda: {"cpu": {"gbps": 30.0, "gflops": 100.0, "read_gbps": 50.0}})
    result = invoke("run", "py", "cpu", "--op", "hoconv2d", "--target", "filter", "--batch-sizes", "1",
                    "--param", "H=8", "--param", "W=8", "--passes", "forward", "--min-time", "0",
                    "--warmup-time", "0", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert ("memory bandwidth is 20 GB/s now, 40% of the 50 GB/s calibrated" in result.output) is warned
    (run,) = tmp_path.iterdir()
    assert json.loads((run / "_run.json").read_text())["mem_gbps_at_start"] == now


@pytest.mark.parametrize("raised_by, warned", [(None, True), (matmul_peaks.MATMUL_RAISED_BY, False)])
def test_a_calibration_whose_matmul_peaks_the_canary_raised_is_warned_about(tmp_path, monkeypatch, raised_by, warned):
    cpu = {"gbps": 30.0, "gflops": 363.0, "gflops_by_dtype": {"float32": 363.0, "float64": 180.0},
           "matmul_slowdown": {"float32": 1.74, "float64": 1.0}}
    monkeypatch.setattr("benchctl.measure.calibrate.load_peaks",
                        lambda: {"cpu": {**cpu, **({"matmul_raised_by": raised_by} if raised_by else {})}})
    result = invoke("run", "py", "cpu", "--op", "hoconv2d", "--target", "filter", "--batch-sizes", "1",
                    "--param", "H=8", "--param", "W=8", "--passes", "forward", "--min-time", "0",
                    "--warmup-time", "0", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    said = "raised its CPU matmul peaks by the compute canary's slowdown (float32 1.74x)"
    assert (said in " ".join(result.output.split())) is warned
    facts = json.loads(invoke("env", "--json").stdout)
    assert ("calibrate again" in facts["peak_cpu_matmul"]) is warned


def test_the_tf32_mode_is_recorded_and_a_wrong_one_refused(tmp_path):
    args = ("run", "py", "cpu", "--op", "hoconv2d", "--target", "filter", "--batch-sizes", "1", "--param", "H=8",
            "--param", "W=8", "--passes", "forward", "--min-time", "0", "--warmup-time", "0", "--out", str(tmp_path))
    result = invoke(*args, "--tf32", "off")
    assert result.exit_code == 0, result.output
    (run,) = tmp_path.iterdir()
    assert json.loads((run / "_run.json").read_text())["tf32"] == "off"
    refused = invoke(*args, "--tf32", "maybe")
    assert refused.exit_code == 2 and "'maybe' is not one of 'default', 'on', 'off'" in refused.output


def test_a_comma_list_param_is_swept(tmp_path):
    result = invoke("run", "py", "cpu", "--op", "hoconv2d", "--batch-sizes", "1", "--param", "H=12,16",
                    "--param", "W=20", "--passes", "forward",
                    "--min-time", "0", "--warmup-time", "0", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    df = storage.load(root=tmp_path)
    assert sorted(json.loads(p)["H"] for p in df["params"]) == [12, 12, 16, 16]  # two targets each


def test_operators_are_given_as_a_comma_list_as_implementations_are(tmp_path):
    result = invoke("run", "py", "cpu", "--op", "hoconv2d,lstm_cell", "--batch-sizes", "1", "--param", "H=8",
                    "--param", "W=8", "--passes", "forward", "--min-time", "0", "--warmup-time", "0",
                    "--processes", "1", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert sorted(set(storage.load(root=tmp_path)["op"])) == ["hoconv2d", "lstm_cell"]
    unknown = invoke("run", "py", "cpu", "--op", "hoconv2d,nope", "--out", str(tmp_path))
    assert unknown.exit_code == 2 and "unknown operator 'nope'" in unknown.output


def test_rounds_pool_every_cell_into_one_row(tmp_path):
    # --remeasure 0: a late re-measurement of a noisy cell would pool more rounds (tests/sweep/test_remeasure.py)
    result = invoke("run", "py", "cpu", "--op", "hoconv2d", "--target", "filter", "--batch-sizes", "1,2",
                    "--param", "H=12", "--param", "W=12", "--passes", "forward",
                    "--min-time", "0", "--warmup-time", "0",
                    "--rounds", "3", "--processes", "1", "--remeasure", "0", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    df = storage.load(root=tmp_path)
    assert sorted(df["batch_size"]) == [1, 2] and set(df["rounds"]) == {3}
    assert all(len(s) >= n >= 3 * 2 for s, n in zip(df["samples_s"], df["n"]))  # 2+ clean samples a round
    assert (df["round_spread"] >= 0).all()
    (run,) = tmp_path.iterdir()
    assert json.loads((run / "_run.json").read_text())["rounds"] == 3
    assert [p.name for p in run.glob("part-*")] == ["part-00000.parquet"]  # the two cells' parts merged at the end


def test_user_operator_runs_from_ops_dir(tmp_path, example_ops_dir):
    result = invoke("run", "all", "cpu", "--op", "scale_shift", "--ops-dir", str(example_ops_dir),
                    "--batch-sizes", "4", "--min-time", "0", "--warmup-time", "0", "--out", str(tmp_path),
                    "--in-process")
    assert result.exit_code == 0, result.output
    df = storage.load(root=tmp_path)
    assert set(df["impl"]) == {"py", "addcmul"} and set(df["status"]) == {"ok"}
    fastest = [" ".join(line.split()) for line in result.stdout.splitlines() if line.startswith("fastest, ")]
    assert [line.split(": ")[1] for line in fastest] == ["CPU forward", "CPU backward", "CPU forward+backward"]
    assert all(line.startswith("fastest, scale_shift/op: ") for line in fastest)  # the answer, under the tables
    assert " ".join(result.stdout.split()).count("fastest: each speedup is over its operator's baseline") == 1


@pytest.mark.parametrize("option", ["--flush-caches", "--flush-l2"])
def test_a_cpu_run_on_flushed_caches_says_so_in_every_row(tmp_path, example_ops_dir, option):
    result = invoke("run", "py,addcmul", "cpu", "--op", "scale_shift", "--ops-dir", str(example_ops_dir),
                    "--batch-sizes", "4", "--passes", "forward", "--min-time", "0", "--warmup-time", "0", option,
                    "--out", str(tmp_path), "--in-process")
    assert result.exit_code == 0, result.output
    assert "(eager, caches flushed)" in " ".join(result.output.split())  # the table's title
    df = storage.load(root=tmp_path)
    assert set(df["status"]) == {"ok"} and set(df["flush_l2"]) == {True}


def test_pair_with_times_the_other_implementation_in_alternation_through_a_worker(tmp_path, example_ops_dir):
    result = invoke("run", "py,addcmul", "cpu", "--op", "scale_shift", "--ops-dir", str(example_ops_dir),
                    "--batch-sizes", "4", "--passes", "forward", "--min-time", "0", "--warmup-time", "0",
                    "--pair-with", "py", "--rounds", "2", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    rows = storage.load(root=tmp_path).set_index("impl")
    assert pd.isna(rows.loc["py", "paired_with"]) and rows.loc["addcmul", "paired_with"] == "py"
    mine = rows.loc["addcmul"]
    assert len(mine["partner_samples_s"]) == len(mine["samples_s"]) >= mine["n"]  # n: the clean ones
    assert mine["paired_ci_lo"] <= mine["paired_speedup"] <= mine["paired_ci_hi"]


@pytest.mark.parametrize("args, message", [
    (["run", "nope", "cpu"], "unknown implementation 'nope'"),
    (["run", "py", "tpu"], "unknown device 'tpu'"),
    (["run", "py", "cpu", "--op", "nope"], "unknown operator 'nope'"),
    (["run", "py", "cpu", "--op", "hoconv2d", "--batch-sizes", "0"], "batch_size must be a positive integer"),
    (["run", "py", "cpu", "--op", "lstm_cell", "--param", "I=0"], "lstm_cell: param I must be at least 1, got 0; null leaves it unset"),
    (["run", "py", "cpu", "--config", "missing.toml"], "config file not found"),
    (["run", "py", "cpu", "--rounds", "0"], "0 is not in the range x>=1"),
    (["run", "cpp", "cpu", "--op", "hoconv2d", "--pair-with", "py"], "--pair-with 'py': it is not among the"),
    (["run", "py", "cpu", "--op", "grid_sample", "--param", "image_size=big"], "image_size takes numbers, got 'big'"),
    (["check", "py", "cpu", "--op", "nope"], "unknown operator 'nope'"),
    (["list", "--ops-dir", "/no/such/folder"], "operators folder not found"),
    (["run", "py", "cpu", "--op", "lstm_cell", "--min-time", "-1"], "-1.0 is not in the range x>=0"),
    (["run", "py", "cpu", "--op", "lstm_cell", "--max-time", "-2"], "-2.0 is not in the range x>=0"),
    (["run", "py", "cpu", "--op", "lstm_cell", "--timeout", "0"], "0.0 is not in the range x>0"),
    (["maxbatch", "lstm_cell", "py", "cpu", "--mem-limit", "0"], "--mem-limit 0 leaves no memory"),
    (["maxbatch", "lstm_cell", "py", "cpu", "--start", "100", "--limit", "10"], "--start 100 is above --limit 10"),
    (["maxbatch", "lstm_cell", "py", "cpu", "--timeout", "0"], "0.0 is not in the range x>0"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_unwritable_out_is_exit_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = invoke("run", "py", "cpu", "--op", "hoconv2d", "--out", str(blocker / "sub"))
    assert result.exit_code == 2 and "cannot write results" in result.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_run_on_gpu_without_one_says_why_and_fails(tmp_path):
    result = invoke("run", "py", "gpu", "--op", "hoconv2d", "--out", str(tmp_path))
    assert result.exit_code == 1
    assert "nothing can run here" in result.output and "no CUDA" in result.output
    assert storage.latest_run(tmp_path) is None  # nothing half-written


def test_check_param_compares_at_the_size_run_would_time(fixture_ops_dir):
    own = invoke("check", "tail", "cpu", "--op", "faulty", "--ops-dir", str(fixture_ops_dir))
    assert own.exit_code == 0, own.output  # its own case, dim 3, misses the bug
    result = invoke("check", "py,tail", "cpu", "--op", "faulty", "--ops-dir", str(fixture_ops_dir),
                    "--param", "dim=8,10", "--json")
    assert result.exit_code == 1
    rows = json.loads(result.stdout)
    failed = {(r["impl"], r["case"].split(" seed=")[0]) for r in rows if r["kind"] == "reference" and not r["passed"]}
    assert failed == {("tail", "batch_size=4 dim=10")}  # the batch run would time (4), within the gate's cases
    assert {r["case"] for r in rows if r["kind"] == "gradcheck"} == {"batch_size=2 dim=3"}
    assert "first: faulty/op tail on cpu reference float32 batch_size=4 dim=10" in result.output


def test_check_fails_on_a_wrong_implementation_and_names_it(fixture_ops_dir):
    result = invoke("check", "py,wrong", "cpu", "--op", "faulty", "--ops-dir", str(fixture_ops_dir))
    assert result.exit_code == 1
    assert "faulty/op wrong on cpu reference" in result.output
    assert "pass" in result.output  # py passed


def test_run_names_an_incorrect_cell_with_its_status_once(fixture_ops_dir, tmp_path):
    result = invoke("run", "wrong", "cpu", "--op", "faulty", "--ops-dir", str(fixture_ops_dir), "--batch-sizes", "2",
                    "--passes", "forward", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "faulty/op wrong cpu float32 [batch_size=2,dim=8]: incorrect vs float64 reference: output:" in result.output
    assert "incorrect incorrect" not in result.output


UPCAST_OP = """
import torch
from benchctl.ops.registry import Operator, Target, randn, register

OP = register(Operator(name="upcast", description="y = 2x", params={"batch_size": 2, "dim": 8},
                       targets=(Target("op", lambda case: {"x": randn(case, case.generator(), 2, 8)}),)))


@OP.implementation("py", devices=("cpu",))
def py(x):
    return x * 2


@OP.implementation("double", devices=("cpu",))
def double(x):
    return x.double() * 2
"""


def test_an_output_in_another_dtype_than_asked_is_incorrect_in_check_and_run(tmp_path):
    """Computed and returned in float64 for a float32 cell: as close to the reference as can be, and not what was
    asked for (nor what would be timed against the others)."""
    ops = tmp_path / "ops"
    ops.mkdir()
    (ops / "upcast.py").write_text(UPCAST_OP)
    result = invoke("check", "py,double", "cpu", "--op", "upcast", "--ops-dir", str(ops))
    assert result.exit_code == 1
    assert "upcast/op double on cpu reference float32 batch_size=2 dim=8 seed=0: output: dtype float64, not the " \
           "cell's float32" in result.output
    assert "upcast/op py on cpu" not in result.output  # float64 cells of both, and float32 py, pass
    result = invoke("check", "py,double", "cpu", "--op", "upcast", "--ops-dir", str(ops), "--dtype", "bfloat16")
    assert result.exit_code == 1 and "reference bfloat16 batch_size=2 dim=8 seed=0: output: dtype float64, not " \
        "the cell's bfloat16" in result.output
    assert "reference float32" not in result.output and "upcast/op py on cpu" not in result.output
    result = invoke("run", "double", "cpu", "--op", "upcast", "--ops-dir", str(ops), "--passes", "forward",
                    "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "incorrect vs float64 reference: output: dtype float64, not the cell's float32" in result.output


def test_check_passes_on_correct_implementations(fixture_ops_dir):
    result = invoke("check", "py", "cpu", "--op", "faulty", "--ops-dir", str(fixture_ops_dir))
    assert result.exit_code == 0, result.output
    assert "gradcheck" in result.output
    assert "checked faulty py cpu in " in result.output  # each implementation's time, as it finishes


def test_an_operator_whose_file_failed_to_import_is_an_error_where_it_is_asked_for(tmp_path):
    (tmp_path / "typo_op.py").write_text("import torch\nx = (\n")
    listed = json.loads(invoke("list", "--json", "--ops-dir", str(tmp_path)).stdout)
    broken = [r for r in listed if r["operator"] == "typo_op"]
    assert broken == [{"operator": "typo_op", "implementation": "", "device": "", "available": False,
                       "reason": f"operator file {tmp_path / 'typo_op.py'} failed to import: SyntaxError at line 2: "
                                 "'(' was never closed", "description": ""}]
    for command in (["check", "py", "cpu"], ["run", "py", "cpu", "--out", str(tmp_path / "out")]):
        result = invoke(*command, "--op", "typo_op", "--ops-dir", str(tmp_path))
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert f"operator file {tmp_path / 'typo_op.py'} failed to import: SyntaxError at line 2" in result.output
    assert not (tmp_path / "out").exists() or not storage.run_dirs(tmp_path / "out")


@pytest.mark.parametrize("asked, recorded", [((), 0), (("--remeasure", "2"), 2)])
def test_a_quick_sweep_flags_noisy_cells_without_measuring_them_again_unless_asked(tmp_path, asked, recorded):
    result = invoke("run", "py", "cpu", "--op", "lstm_cell", "--quick", "--passes", "forward", "--max-time", "0.02",
                    "--warmup-time", "0", *asked, "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    (run,) = tmp_path.iterdir()
    assert json.loads((run / "_run.json").read_text())["remeasure"] == recorded
    assert len(storage.load(root=tmp_path)) == 3  # the quick sizes, B=16, 64, 256


def test_processes_three_measures_each_cell_in_three_workers_and_keeps_their_medians(tmp_path):
    # --remeasure 0: on a noisy machine a late re-measurement pools its rounds with these (6 rounds), which
    # is tested in tests/sweep/test_remeasure.py
    result = invoke("run", "py", "cpu", "--op", "hoconv2d", "--target", "filter", "--batch-sizes", "1", "--param",
                    "H=16", "--param", "W=16", "--passes", "forward", "--min-time", "0.02", "--warmup-time", "0",
                    "--processes", "3", "--remeasure", "0", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    (row,) = storage.load(root=tmp_path).to_dict("records")
    assert row["status"] == "ok" and row["processes"] == 3 and row["rounds"] == 3
    medians = list(row["process_medians_s"])
    assert len(medians) == 3 and min(medians) > 0
    assert row["process_spread"] == pytest.approx(max(medians) / min(medians) - 1)
    meta = json.loads(next(tmp_path.glob("*/_run.json")).read_text())
    assert meta["processes"] == 3 and isinstance(meta["timeline"], list) and meta["timeline_started"]


@pytest.mark.parametrize("flags, says", [
    (["--in-process"], "--processes needs worker processes"),
    (["--fresh-worker"], "--processes keeps its workers for the whole sweep"),
    (["--executor", "pool"], "--processes is not supported by the pool executor yet"),
])
def test_processes_that_cannot_be_kept_are_a_one_line_usage_error(tmp_path, flags, says):
    result = invoke("run", "py", "cpu", "--op", "hoconv2d", "--batch-sizes", "1", "--processes", "2", *flags,
                    "--out", str(tmp_path))
    assert result.exit_code == 2 and says in result.output and "Traceback" not in result.output


def test_a_second_run_into_the_same_folder_says_how_the_first_runs_paired_speedups_fell_against_its_intervals(
        tmp_path):
    args = ("run", "py,jit", "cpu", "--op", "lstm_cell", "--batch-sizes", "16", "--passes", "forward",
            "--max-time", "0.1", "--warmup-time", "0", "--remeasure", "0", "--processes", "1", "--out", str(tmp_path))
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    assert "paired speedups" not in first.output  # nothing before it
    second = invoke(*args)
    assert second.exit_code == 0, second.output
    said = " ".join(second.output.split())
    # the first run is held against only where its jit row met the machine in the same state as the second's
    states = {slow_machine(r) for r in storage.load([tmp_path]).query("impl == 'jit'").to_dict("records")}
    line = re.search(r"(\d of )?1 paired speedups measured before \(in up to 1 earlier run\(s\) of the same code on "
                     r"this machine, in the same state: both in a slow phase or both at speed\) read, at their median, "
                     r"(in|out)side this run's interval", said)
    assert bool(line) == (len(states) == 1), said

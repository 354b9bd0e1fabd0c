"""`benchctl profile` through click's CliRunner: real short profiles of hoconv2d py, and the errors."""

from __future__ import annotations

import csv
import html
import json
import re
import stat
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from benchctl.profile import profilers as profiling
from benchctl.profile import torch_events
from benchctl.profile.stacks import GENERATED, parse_collapsed
from benchctl.cli import cli

SMALL = ["hoconv2d", "py", "cpu", "--target", "filter", "--batch-size", "2", "--param", "H=32", "--param", "W=32"]


@pytest.fixture
def one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # On a busy 2-core machine OpenMP's barrier waits swamp these tiny ops; one thread keeps the
    # child's repetitions (and so the test) fast. The profiled loop is the same.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.skipif(profiling.find_py_spy() is None, reason="py-spy is not installed")
def test_py_spy_profile_names_native_aten_frames(tmp_path: Path, one_thread: None) -> None:
    """Profiled for 4 s: in one CI run of 2 s, the loop ran 7 repetitions (0.4 s timed) while two py-spys (as
    there were then) attached, and neither sampled the timed code."""
    out = tmp_path / "prof"
    result = invoke("profile", *SMALL, "--pass", "backward", "--duration", "4", "--rate", "200", "--out", str(out))
    assert result.exit_code == 0, result.output
    for name in ("stacks.txt", "flamegraph.svg", "speedscope.json", "profile.json"):
        assert (out / name).stat().st_size > 0, name
    assert json.loads((out / "speedscope.json").read_text())["profiles"][0]["type"] == "sampled"
    manifest = json.loads((out / "profile.json").read_text())
    assert manifest["pass"] == "backward" and manifest["cell"]["target"] == "filter" and manifest["reps"] >= 1
    timed = manifest["samples"]["timed"]
    assert timed > 0
    assert f"<title>timed loop: {timed} of {timed} samples" in (out / "flamegraph.svg").read_text()
    total = [r["function"] for r in manifest["top_total"]]
    # ATen's own C++ frames by name (at::native::..., at::TensorIteratorBase::...): which of them make
    # the top list moves with how the samples fall.
    assert any(f.startswith("at::") for f in total), total[:20]
    assert any(r["op"] == "slice_backward" and r["total_samples"] > 0 for r in manifest["top_ops_sampled"])
    assert not any("benchctl/" in r["location"] for r in manifest["top_total"])
    assert "Top frames by self time" in result.output and "at::" in result.output


CONV_OP = """
import torch
from benchctl.ops.registry import Operator, Target, randn, register


def make_inputs(case):
    gen = case.generator()
    return {"x": randn(case, gen, case.params["batch_size"], 3, 64, 64), "w": randn(case, gen, 16, 3, 5, 5)}


OP = register(Operator(name="conv_generated", description="a convolution, as oneDNN runs it",
                       params={"batch_size": 8}, targets=(Target("op", make_inputs),)))


@OP.implementation("py", devices=("cpu",))
def py(x, w):
    return torch.nn.functional.conv2d(x, w, padding=2)
"""


@pytest.mark.skipif(profiling.find_py_spy() is None, reason="py-spy is not installed")
@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="this torch has no oneDNN")
def test_convolution_kernels_generated_at_run_time_are_named(tmp_path: Path, one_thread: None) -> None:
    """A CPU convolution runs oneDNN kernels generated at run time; py-spy alone shows them as addresses
    (`0x7f… (?)`), the child's perf map names them, and the map is removed."""
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "conv_generated.py").write_text(CONV_OP)
    maps_before = set(Path("/tmp").glob("perf-*.map"))
    out = tmp_path / "prof"
    result = invoke("profile", "conv_generated", "py", "cpu", "--ops-dir", str(tmp_path / "ops"), "--pass",
                    "backward", "--duration", "2", "--out", str(out))
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "profile.json").read_text())
    generated = [r for r in manifest["top_self"] if r["location"] == GENERATED]
    assert generated and all(r["function"].startswith("jit_") for r in generated), manifest["top_self"][:10]
    unnamed = sum(r["samples"] for r in manifest["top_self"] if r["location"] == "?")
    assert sum(r["samples"] for r in generated) > unnamed  # only addresses outside the map stay unnamed
    assert f"({GENERATED})" in (out / "stacks.txt").read_text()
    # The flame graph is of the same samples: the widest generated frame is a box in it, with its samples.
    widest = max(generated, key=lambda r: r["samples"])
    boxes = re.findall(r"<title>([^<]*): (\d+) of \d+ samples", (out / "flamegraph.svg").read_text())
    assert sum(int(n) for name, n in boxes if html.unescape(name) == widest["frame"]) >= widest["samples"]
    assert set(Path("/tmp").glob("perf-*.map")) <= maps_before


def test_torch_profiler_writes_trace_and_top_ops(tmp_path: Path, one_thread: None) -> None:
    out = tmp_path / "torchprof"
    result = invoke("profile", *SMALL, "--pass", "forward_backward", "--duration", "0.5", "--profiler", "torch",
                    "--memory", "--out", str(out))
    assert result.exit_code == 0, result.output
    trace = json.loads((out / "trace.json").read_text())
    assert any(e.get("name") == torch_events.TORCH_RANGE for e in trace["traceEvents"])
    rows = list(csv.DictReader((out / "top_ops.csv").open()))
    names = {r["name"] for r in rows}
    assert {"aten::mul", "aten::add"} <= names and torch_events.TORCH_RANGE not in names
    manifest = json.loads((out / "profile.json").read_text())
    assert manifest["profiler"] == "torch" and manifest["peak_mem_bytes"] is not None
    assert sum(r["pct"] for r in manifest["top_ops"]) == pytest.approx(100.0)
    assert "Top operators by self time" in result.output and "aten::mul" in result.output
    # The flame graph is of the operator stacks the child wrote: the same CPU time as the table's, by caller.
    stacks = parse_collapsed((out / "op_stacks.txt").read_text())
    assert all(stack[0] == torch_events.TORCH_RANGE for stack, _ in stacks)
    in_ops = sum(us for stack, us in stacks if len(stack) > 1)
    assert in_ops == pytest.approx(sum(float(r["self_cpu_us"]) for r in rows), rel=0.01)
    assert manifest["files"]["flamegraph"] == "flamegraph.svg"
    svg = (out / "flamegraph.svg").read_text()
    assert "of CPU time in the timed loop" in svg and "<title>aten::mul: " in svg


def test_a_torch_profile_on_cold_caches_leaves_the_flush_out_of_the_timed_operators(tmp_path: Path,
                                                                                      one_thread: None) -> None:
    """The flush reads its buffer with a sum before each repetition: the trace holds those sums, the timed
    operators (a forward of muls and adds, no sum of its own) none of them."""
    out = tmp_path / "cold"
    result = invoke("profile", *SMALL, "--pass", "forward", "--duration", "0.3", "--profiler", "torch",
                    "--flush-caches", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "each repetition started on cold caches" in result.output
    names = {r["name"] for r in csv.DictReader((out / "top_ops.csv").open())}
    assert "aten::mul" in names and "aten::sum" not in names
    trace = json.loads((out / "trace.json").read_text())["traceEvents"]
    assert any(e.get("name") == "aten::sum" for e in trace)  # the flushes ran, outside the timed ranges
    manifest = json.loads((out / "profile.json").read_text())
    assert manifest["flush_caches"] is True and "(caches flushed)" in (out / "flamegraph.svg").read_text()


def test_missing_py_spy_is_one_line_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profiling.sys, "executable", str(tmp_path / "python"))  # nothing beside it
    monkeypatch.setenv("PATH", str(tmp_path))
    assert profiling.find_py_spy() is None
    result = invoke("profile", *SMALL, "--duration", "1", "--out", str(tmp_path / "p"))
    assert result.exit_code == 1
    line = one_line(result.output)
    assert "py-spy not found" in line and "pip install py-spy" in line


def test_py_spy_without_ptrace_permission_says_how_to_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "py-spy"
    fake.write_text("#!/bin/sh\necho 'Error: Operation not permitted (os error 1)' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(profiling, "find_py_spy", lambda: str(fake))
    result = invoke("profile", *SMALL, "--duration", "1", "--out", str(tmp_path / "p"))
    assert result.exit_code == 1
    line = one_line(result.output)
    assert "ptrace" in line and "SYS_PTRACE" in line and "ptrace_scope" in line


FAKE_PY_SPY = """#!{python}
import json, sys
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps(args) + "\\n")
open(args[args.index("--output") + 1], "w").write(open({fixture!r}).read())
"""


def test_py_spy_arguments_and_files_with_a_stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in py-spy that logs its arguments and writes the fixture's stacks, attached to the real child."""
    log, fake = tmp_path / "argv.jsonl", tmp_path / "py-spy"
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "profile_stacks.txt"
    fake.write_text(FAKE_PY_SPY.format(python=sys.executable, log=str(log), fixture=str(fixture)))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(profiling, "find_py_spy", lambda: str(fake))
    out = tmp_path / "p"
    result = invoke("profile", *SMALL, "--no-native", "--rate", "77", "--pass", "forward", "--duration", "0.2",
                    "--out", str(out))
    assert result.exit_code == 0, result.output
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) == 1  # one py-spy: the tables and the flame graph are of its samples
    argv = calls[0]
    assert argv[0] == "record" and argv[argv.index("--format") + 1] == "raw" and "--native" not in argv
    assert argv[argv.index("--rate") + 1] == "77" and argv[argv.index("--pid") + 1].isdigit()  # the child's
    manifest = json.loads((out / "profile.json").read_text())
    assert manifest["samples"]["timed"] == 65 and manifest["reps"] >= 1 and not manifest["native"]
    assert manifest["pass"] == "forward" and manifest["cell"]["params"] == {"C": 3, "H": 32, "W": 32, "batch_size": 2, "k": 5}
    assert manifest["top_self"][0]["samples"] == 30
    assert "fill_kernel" in (out / "flamegraph.svg").read_text() and manifest["files"]["flamegraph"] == "flamegraph.svg"
    # The child timed the loop before the stand-in attached; the slowdown is the two per-repetition times.
    assert manifest["unprofiled_s_per_rep"] > 0
    per_rep = manifest["timed_s"] / manifest["reps"]
    assert manifest["slowdown"] == pytest.approx(per_rep / manifest["unprofiled_s_per_rep"])
    assert "it took alone" in result.output
    assert "fill_kernel" in result.output and "slice_backward" in result.output


def test_child_failure_is_one_line(tmp_path: Path, one_thread: None, fixture_ops_dir: Path) -> None:
    # A negative size fails in the child, while it builds the inputs (faulty declares no rules for its params).
    result = invoke("profile", "faulty", "py", "cpu", "--ops-dir", str(fixture_ops_dir), "--param", "dim=-3",
                    "--profiler", "torch", "--duration", "0.2", "--out", str(tmp_path / "p"))
    assert result.exit_code == 1
    line = one_line(result.output)
    assert "faulty/op py cpu" in line and "RuntimeError" in line and "negative dimension" in line


def test_a_param_its_operator_rules_out_stops_before_the_child(tmp_path: Path) -> None:
    result = invoke("profile", *SMALL, "--param", "H=-3", "--out", str(tmp_path / "p"))
    assert result.exit_code == 2
    assert one_line(result.output) == "error: hoconv2d: param H must be at least 1, got -3"
    assert not (tmp_path / "p").exists()


def test_an_out_folder_that_cannot_be_written_stops_before_the_child(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = invoke("profile", *SMALL, "--out", str(blocker / "p"))
    assert result.exit_code == 2
    assert one_line(result.output).startswith(f"error: cannot write results to {blocker / 'p'}")


@pytest.mark.parametrize("args, needle", [
    (["profile", "hoconv2d", "nope", "cpu"], "no implementation 'nope'"),
    (["profile", "nope", "py", "cpu"], "unknown operator"),
    (["profile", "hoconv2d", "py", "tpu"], "unknown device"),
    (["profile", "hoconv2d", "py", "cpu", "--target", "x"], "no target 'x'"),
    (["profile", "hoconv2d", "py", "cpu", "--param", "Q=1"], "--param 'Q=1'"),
    (["profile", "hoconv2d", "py", "cpu", "--memory"], "--memory needs --profiler torch"),
])
def test_usage_errors_exit_2(args: list[str], needle: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert needle in one_line(result.output)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_unavailable_device_exit_1() -> None:
    result = invoke("profile", "hoconv2d", "py", "gpu")
    assert result.exit_code == 1
    assert "unavailable on cuda" in one_line(result.output)


def test_user_operator_from_ops_dir_reaches_the_child(tmp_path: Path, example_ops_dir: Path) -> None:
    out = tmp_path / "p"
    result = invoke("profile", "scale_shift", "addcmul", "cpu", "--ops-dir", str(example_ops_dir), "--profiler",
                    "torch", "--pass", "forward", "--duration", "0.2", "--out", str(out))
    assert result.exit_code == 0, result.output
    names = {r["name"] for r in csv.DictReader((out / "top_ops.csv").open())}
    assert "aten::addcmul" in names


def test_help_lists_the_options() -> None:
    from benchctl.ops.cells import DTYPES
    from benchctl.vocab import DTYPE_NAMES

    result = invoke("profile", "--help")
    assert result.exit_code == 0
    for option in ("--pass", "--native / --no-native", "--profiler", "--duration", "--rate", "--out", "--memory",
                   "--flush-caches, --flush-l2"):
        assert option in result.output
    assert DTYPE_NAMES == tuple(DTYPES)  # names only, so --help does not import torch


def test_a_loop_the_profiler_slowed_past_the_limit_is_a_warning_naming_generated_code(
        capsys: pytest.CaptureFixture[str]) -> None:
    from benchctl.cli.profile import render_slowdown
    from benchctl.profile.stacks import FrameStat, TopFrames

    frames = (FrameStat("k (generated code)", "k", GENERATED, True, 30, 60.0),
              FrameStat("f (libtorch_cpu.so)", "f", "libtorch_cpu.so", True, 20, 40.0))
    top = TopFrames({"total": 50, "timed": 50, "setup": 0, "startup": 0}, frames, frames, ())
    slowed = profiling.ProfileResult(Path("p"), "py-spy", 2, 1.4, top=top, unprofiled_s=0.1)
    render_slowdown(slowed)
    said = capsys.readouterr()
    assert "a repetition took 700 ms under py-spy, 7.0x the 100 ms it took alone" in said.out
    assert "slowed the loop 7.0x" in said.err and "60% of the timed samples are in generated code" in said.err
    assert "--rate" in said.err
    render_slowdown(profiling.ProfileResult(Path("p"), "py-spy", 2, 0.3, top=top, unprofiled_s=0.1))
    said = capsys.readouterr()
    assert "1.5x the 100 ms" in said.out and not said.err  # under the limit: said, not warned


def test_a_slowdown_says_how_much_was_the_threads_own_work_and_how_much_time_off_the_cpu(
        capsys: pytest.CaptureFixture[str]) -> None:
    from benchctl.cli.profile import render_slowdown

    # 400 ms a repetition under py-spy, 100 ms alone; the thread ran 120 ms of it (100 ms alone), and waited
    # for a core 60 ms (20 ms alone)
    held = profiling.ProfileResult(Path("p"), "py-spy", 2, 0.8, unprofiled_s=0.1, cpu_s=0.24, unprofiled_cpu_s=0.1,
                                   waited_s=0.12, unprofiled_waited_s=0.02)
    render_slowdown(held)
    said = capsys.readouterr()
    said_first = ("4.0x the 100 ms it took alone: its thread ran 1.20x as long, and was off the CPU 70% of the time "
                  "(10% waiting for a core)")
    assert said_first in said.out
    assert "off the CPU 70% of the time, 60% held stopped (py-spy stops it to read its stacks)" in said.err
    assert "a lower --rate (e.g. --rate 25)" in said.err  # a quarter of the default 100/s
    render_slowdown(held, rate_hz=20)
    assert "(e.g. --rate 5)" in capsys.readouterr().err  # a quarter of the rate it was profiled at
    assert "as long as alone" not in said.err  # its own work barely changed: not blamed
    # the work itself changed: 2.5x the thread's time alone, with little time off the CPU
    worked = profiling.ProfileResult(Path("p"), "torch", 2, 0.6, unprofiled_s=0.1, cpu_s=0.5, unprofiled_cpu_s=0.1)
    render_slowdown(worked)
    said = capsys.readouterr()
    assert "its thread ran 2.5x as long as alone: the profiler changed the work itself" in said.err
    assert "overstate its shortest, most frequent operators" in said.err and "Its cost is per operator" in said.err
    assert "--rate" not in said.err.split("Its cost")[0]  # the torch profiler has no rate to lower
    assert "off the CPU 17% of the time" in said.out and "held stopped" not in said.err


def test_a_profile_beside_other_work_says_so_whatever_it_cost(capsys: pytest.CaptureFixture[str]) -> None:
    from benchctl.cli.profile import render_shared

    render_shared(profiling.ProfileResult(Path("p"), "py-spy", 2, 0.3, other_cores=1.0))
    assert "about 1.0 of" in capsys.readouterr().err  # no time alone measured: still warned
    render_shared(profiling.ProfileResult(Path("p"), "py-spy", 2, 0.3, other_cores=0.2))
    render_shared(profiling.ProfileResult(Path("p"), "py-spy", 2, 0.3))  # no /proc: nothing to say
    assert not capsys.readouterr().err



def test_a_gpu_torch_profile_shows_its_kernels_then_the_operators_that_launched_them(capsys) -> None:
    from benchctl.cli.profile import render_ops

    def op(name: str, device_us: float, cpu_us: float, device: bool) -> dict:
        return {"name": name, "calls": 4, "self_cpu_us": cpu_us, "self_device_us": device_us, "self_cpu_mem_bytes": 0,
                "self_device_mem_bytes": 0, "pct": 100 * device_us / 40.0, "device": device}

    render_ops([op("add_kernel", 30.0, 0.0, True), op("aten::add", 30.0, 6.0, False),
                op("mul_kernel", 10.0, 0.0, True), op("aten::mul", 10.0, 8.0, False)], 4, 10)
    out = " ".join(capsys.readouterr().out.split())  # the titles wrap over the narrow tables
    kernels, ops = out.split("Operators by the GPU time of the kernels they launched")
    assert "GPU kernels and copies by time (4 repetitions)" in kernels and "aten::add" not in kernels
    assert "│ 75.0 │ 4 │ 0.03 │ add_kernel │" in kernels and "self CPU ms" not in kernels
    assert "│ 75.0 │ 4 │ 0.01 │ 0.03 │ aten::add │" in ops and "mul_kernel" not in ops


def test_a_profile_mostly_in_openmps_runtime_says_whose_work_py_spy_did_not_see():
    """py-spy reads only threads that run Python: the sampled thread's time in libgomp is its wait for torch's other
    threads, whose work is in no share (the fixture: 25 of 65 timed samples there)."""
    from dataclasses import replace

    from benchctl.cli.profile import openmp_line
    from benchctl.profile.stacks import parse_collapsed, top_frames

    top = top_frames(parse_collapsed((Path(__file__).parents[1] / "fixtures" / "profile_stacks.txt").read_text()))
    line = openmp_line(top)
    assert line.startswith("38% of the timed samples were in OpenMP's runtime (libgomp.so.1): there the sampled")
    assert "py-spy does not sample (it reads only threads that run Python)" in line
    few = replace(top, by_self=tuple(replace(r, samples=6) if r.location == "libgomp.so.1" else r for r in top.by_self))
    assert openmp_line(few) is None  # 6 of 65: under a tenth

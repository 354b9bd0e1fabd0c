"""The GPU self-test without a GPU: its steps, the verdict from scripted outcomes, the figures of its
sweeps from runs on disk, and the one line it gives where there is no GPU."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from benchctl.cli import cli
from benchctl.errors import UsageError
from benchctl.results.storage import RunWriter
from benchctl.selftest import figures, steps, verdict


def test_the_steps_cover_every_gpu_feature_the_issue_names(tmp_path):
    todo = steps.steps(tmp_path, Path("tests"))
    lines = [" ".join(s.argv[1:]) for s in todo]
    assert lines[0] == "-m pytest -q -m gpu tests"
    wanted = ["check all gpu", "run all gpu", "--flush-l2", "--cuda-graph", "profile hoconv2d cuda gpu --duration",
              "--profiler torch", "maxbatch hoconv2d cuda gpu", "-m benchctl.selftest.timer"]
    assert all(any(w in line for line in lines) for w in wanted)
    assert steps.steps(tmp_path, None)[0].name == "check all gpu"  # no test suite at hand: no test step


def test_the_verdict_says_pass_or_fail_with_the_failures_tail_and_the_timer_figures(tmp_path):
    todo = [steps.Step("check all gpu", ("benchctl", "check"), "checks"),
            steps.Step("maxbatch", ("benchctl", "maxbatch"), "fits"),
            steps.Step("timer agreement", ("timer",), "agrees", shows_output=True)]
    answers = {"benchctl check": (0, "all passed"), "benchctl maxbatch": (1, "a\nb\nerror: out of memory at 8"),
               "timer": (0, "| hoconv2d | forward | 1.0 | 1.01 | 0.990 |")}
    outcomes = verdict.run_steps(todo, runner=lambda step: answers[" ".join(step.argv)])
    text = verdict.markdown(outcomes, "H100, driver 580")
    assert text.startswith("# GPU self-test: FAIL (2 of 3 steps)")
    assert "| maxbatch | FAIL |" in text and "error: out of memory at 8" in text
    assert "## Figures\n\n| hoconv2d | forward | 1.0 | 1.01 | 0.990 |" in text


def test_the_verdict_is_rewritten_after_each_step_and_says_unfinished_until_the_last(tmp_path):
    todo = [steps.Step("check all gpu", ("check",), "checks"), steps.Step("maxbatch", ("maxbatch",), "fits")]
    seen = []
    verdict.run_steps(todo, runner=lambda step: (0, "ok"),
                      on_done=lambda done: seen.append(verdict.markdown(done, "H200", pending=todo[len(done):])))
    assert seen[0].startswith("# GPU self-test: UNFINISHED (1 of 2 steps)")
    assert "| maxbatch | not run yet | | fits |" in seen[0]
    assert seen[1].startswith("# GPU self-test: PASS (2 of 2 steps)") and "not run yet" not in seen[1]


def test_resume_keeps_the_steps_that_passed_and_runs_the_failed_and_unrun_ones_again(tmp_path):
    todo = [steps.Step("GPU tests", ("tests",), "t"), steps.Step("check all gpu", ("check",), "c"),
            steps.Step("maxbatch", ("maxbatch",), "m")]
    saved = tmp_path / "steps.json"
    first = verdict.run_steps(todo[:2], runner=lambda step: (0 if step.argv == ("tests",) else 124, "first"))
    verdict.save(saved, first)  # stopped after two steps: one passed, one timed out
    assert "| check all gpu | FAIL (timed out) |" in verdict.markdown(first, "H100")
    ran = []
    outcomes = verdict.run_steps(todo, runner=lambda step: ran.append(step.argv) or (0, "second"),
                                 passed_before=verdict.passed(saved, todo))
    assert ran == [("check",), ("maxbatch",)]
    assert [(o.ok, o.earlier, o.tail) for o in outcomes] == [(True, True, "first"), (True, False, "second"),
                                                               (True, False, "second")]
    text = verdict.markdown(outcomes, "H100")
    assert text.startswith("# GPU self-test: PASS (3 of 3 steps)") and "| GPU tests | pass (earlier run) |" in text
    assert verdict.passed(tmp_path / "none.json", todo) == {}


@pytest.mark.parametrize("damaged", ["{not json", "{}", '[{"step": "GPU tests"}]'])
def test_resume_from_a_file_that_holds_no_saved_steps_is_a_usage_error(tmp_path, damaged):
    (tmp_path / "steps.json").write_text(damaged)
    with pytest.raises(UsageError, match="^cannot resume from .*steps.json: it holds no self-test's saved steps; run "
                                         "without --resume$"):
        verdict.passed(tmp_path / "steps.json", [steps.Step("GPU tests", ("tests",), "t")])


def test_a_self_test_whose_folder_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr("benchctl.ops.registry.cuda_device_reason", lambda: None)  # as on a GPU machine
    (tmp_path / "file").write_text("")
    result = CliRunner().invoke(cli, ["selftest", "--out", str(tmp_path / "file" / "out")])
    assert result.exit_code == 2 and result.output == f"error: cannot write results to {tmp_path / 'file' / 'out'}: " \
                                                      "Not a directory\n", result.output


def test_a_step_past_its_time_limit_fails_and_its_whole_process_group_is_stopped(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    script = ("import subprocess, sys, time; print('started', flush=True); "
              f"p = subprocess.Popen(['sleep', '60']); open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    began = time.monotonic()
    code, output = verdict.process_runner(2, tmp_path)(steps.Step("sleeper", (sys.executable, "-c", script), ""))
    assert code == verdict.TIMED_OUT and time.monotonic() - began < 20
    assert "started" in output and output.endswith("selftest: timed out after 2 s")
    assert_gone(int(pid_file.read_text()))


def assert_gone(pid: int) -> None:
    for _ in range(50):  # killed by the group signal; reaped by init shortly after
        if not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]:
            return
        time.sleep(0.1)
    raise AssertionError(f"the step's own child {pid} outlived the time limit")


def test_a_self_test_stopped_from_outside_stops_its_steps_whole_process_group(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    step = ("import subprocess, time; "
            f"p = subprocess.Popen(['sleep', '60']); open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    parent = ("import sys; from pathlib import Path; from benchctl.selftest import steps, verdict; "
              f"verdict.process_runner(60, Path({str(tmp_path)!r}))(steps.Step('s', (sys.executable, '-c', {step!r}), ''))")
    selftest = subprocess.Popen([sys.executable, "-c", parent])
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.1)
    selftest.send_signal(signal.SIGTERM)  # as timeout(1) stops it
    assert selftest.wait(timeout=20) == 128 + signal.SIGTERM
    assert_gone(int(pid_file.read_text()))


def test_a_step_in_time_gives_its_exit_status_and_output_and_leaves_its_log(tmp_path):
    step = steps.Step("check all gpu", (sys.executable, "-c", "print('hi'); raise SystemExit(3)"), "")
    code, output = verdict.process_runner(30, tmp_path / "logs")(step)
    assert (code, output) == (3, "hi\n")
    assert (tmp_path / "logs" / "check-all-gpu.log").read_text() == "hi\n"


def test_a_step_stopped_from_outside_leaves_what_it_printed_in_its_log(tmp_path):
    script = "import time; print('checked hoconv2d cuda gpu in 3.1 s'); time.sleep(60)"
    runner = verdict.process_runner(1, tmp_path)  # the step's own limit stands in for a stop from outside
    runner(steps.Step("check all gpu", (sys.executable, "-c", script), ""))
    assert (tmp_path / "check-all-gpu.log").read_text().startswith("checked hoconv2d cuda gpu in 3.1 s")


def row(impl, median, **kw):
    return {"op": "hoconv2d", "target": "filter", "impl": impl, "device": "cuda", "dtype": "float32",
            "params": json.dumps({"batch_size": 1}), "pass": "forward", "status": "ok", "median_s": median,
            "noisy": False, **kw}


def test_the_figures_compare_cuda_graph_with_eager_on_the_same_cells(tmp_path):
    for name, rows in {"eager": [row("cuda", 1e-3, sm_clock_mhz=1980.0, throttled=False, host_s=0.1e-3),
                                 row("py", 4e-3, host_s=3.9e-3)],
                       "graph": [row("cuda", 0.5e-3), row("py", 3e-3)]}.items():
        writer = RunWriter(tmp_path / name, "run", {})
        writer.write(rows)
        writer.finish()
    outcomes = [verdict.Outcome(steps.Step("quick GPU sweep", (), "", str(tmp_path / "eager")), 0, 1.0, ""),
                verdict.Outcome(steps.Step("quick GPU sweep --cuda-graph", (), "", str(tmp_path / "graph")), 0, 1.0, "")]
    lines = figures.sweep_figures(outcomes)
    assert lines[0] == "- quick GPU sweep: 2 of 2 passes ok, 0 noisy, 1 host-bound; median SM clock 1980 MHz, 0 throttled"
    assert lines[2] == ("- quick GPU sweep --cuda-graph against eager, same cells: median time ratio 0.625 "
                        "(0.500 to 0.750) over 2 passes; over the 1 GPU-bound in eager: 0.500")


def test_a_comparison_of_host_bound_passes_only_says_it_compares_host_overhead(tmp_path):
    for name, median in {"eager": 1e-3, "flush": 1.2e-3}.items():
        writer = RunWriter(tmp_path / name, "run", {})
        writer.write([row("cuda", median, host_s=0.95e-3)])
        writer.finish()
    outcomes = [verdict.Outcome(steps.Step(name, (), "", str(tmp_path / folder)), 0, 1.0, "")
                for name, folder in ((steps.EAGER, "eager"), ("quick GPU sweep --flush-l2", "flush"))]
    lines = figures.sweep_figures(outcomes)
    assert lines[0].endswith("0 noisy, 1 host-bound; no NVML clock samples")
    assert lines[2].endswith("over 1 passes; every pass was host-bound in eager, so this compares host overhead, "
                             "not kernels")


def test_the_self_test_prints_its_verdict_as_it_wrote_it(tmp_path, monkeypatch):
    """A GPU machine lent for one call hands back what the call printed (and files under a folder of its own),
    not OUT/verdict.md, which goes with the machine: the verdict is printed whole, failed step's tail too, as written.
    Run here on steps that stand in for the GPU's."""
    todo = [steps.Step("check all gpu", (sys.executable, "-c", "print('checked')"), "checks"),
            steps.Step("maxbatch", (sys.executable, "-c", "raise SystemExit('out of memory at 8')"), "fits")]
    monkeypatch.setattr("benchctl.ops.registry.cuda_device_reason", lambda: None)
    monkeypatch.setattr(steps, "steps", lambda out, tests: todo)
    monkeypatch.setattr("benchctl.machine.facts.environment", lambda: {"gpu_name": "NVIDIA H100 80GB HBM3"})
    result = CliRunner().invoke(cli, ["selftest", "--out", str(tmp_path)])
    assert result.exit_code == 1
    written = (tmp_path / "verdict.md").read_text()
    assert written.startswith("# GPU self-test: FAIL (1 of 2 steps)\n\nNVIDIA H100 80GB HBM3, driver None")
    assert "| check all gpu | pass |" in written and "out of memory at 8" in written
    assert written in result.output


def test_a_self_test_stopped_from_outside_prints_what_it_found_so_far(tmp_path, monkeypatch):
    """A device call's time limit stops the self-test (SIGTERM, here sent by its second step): the first step's
    result is printed all the same, and a verdict left by an earlier self-test at OUT is not."""
    stop = "import os, signal, time; time.sleep(0.5); os.kill(os.getppid(), signal.SIGTERM); time.sleep(60)"
    todo = [steps.Step("check all gpu", (sys.executable, "-c", "print('checked')"), "checks"),
            steps.Step("maxbatch", (sys.executable, "-c", stop), "fits")]
    monkeypatch.setattr("benchctl.ops.registry.cuda_device_reason", lambda: None)
    monkeypatch.setattr(steps, "steps", lambda out, tests: todo)
    monkeypatch.setattr("benchctl.machine.facts.environment", lambda: {"gpu_name": "NVIDIA H100 80GB HBM3"})
    (tmp_path / "verdict.md").write_text("# GPU self-test: PASS (9 of 9 steps)\n")  # an earlier one's
    result = CliRunner().invoke(cli, ["selftest", "--out", str(tmp_path)])
    assert result.exit_code == 128 + signal.SIGTERM
    assert "# GPU self-test: UNFINISHED (1 of 2 steps)" in result.output and "| check all gpu | pass |" in result.output
    assert "| maxbatch | not run yet | | fits |" in result.output and "PASS (9 of 9" not in result.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: the self-test would run for real (minutes)")
def test_without_a_gpu_selftest_says_so_in_one_line_and_exits_0(tmp_path):
    result = CliRunner().invoke(cli, ["selftest", "--out", str(tmp_path)])
    assert result.exit_code == 0 and result.output.count("\n") == 1
    assert result.output.startswith("selftest: no GPU here (")
    assert not any(tmp_path.iterdir())

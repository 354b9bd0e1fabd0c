"""`benchctl selftest`: every GPU feature once on this machine's GPU, and one Markdown verdict."""

from __future__ import annotations

from pathlib import Path

import click

from benchctl.cli.options import Seconds, check_writable


@click.command("selftest")
@click.option("--out", default="results/selftest", show_default=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the verdict (verdict.md), each step's output (logs/) and the runs behind it.")
@click.option("--step-timeout", default=1200.0, show_default=True, type=Seconds(min=1),
              help="Seconds a step may run before it is stopped and counted failed.")
@click.option("--resume", is_flag=True,
              help="Keep the steps that passed in OUT's last self-test and run only the others.")
def command(out: Path, step_timeout: float, resume: bool) -> None:
    """Run the GPU tests, `check all gpu`, quick GPU sweeps (eager, --flush-l2, --cuda-graph), `profile`
    with both profilers, `maxbatch` and the timer agreement on the GPU; write OUT/verdict.md and print it. Without a
    GPU, say so in one line and exit 0."""
    from benchctl import console
    from benchctl.errors import BenchError
    from benchctl.machine.facts import environment
    from benchctl.ops.registry import cuda_device_reason
    from benchctl.selftest import figures, steps, verdict

    reason = cuda_device_reason()
    if reason:
        console.out.print(f"selftest: no GPU here ({reason}); nothing to test")
        return
    check_writable(out)
    tests = Path(__file__).resolve().parents[2] / "tests"
    todo = steps.steps(out, tests if tests.is_dir() else None)
    env = environment()
    machine = f"{env.get('gpu_name')}, driver {env.get('gpu_driver')}, torch {env.get('torch_version')}, " \
              f"CUDA {env.get('cuda_version')}, host {env.get('host')}"
    path, saved = out / "verdict.md", out / "steps.json"

    def write(done: list[verdict.Outcome]) -> None:
        verdict.save(saved, done)
        verdict.write(path, verdict.markdown(done, machine, figures.sweep_figures(done), pending=todo[len(done):]))

    if not resume:
        path.unlink(missing_ok=True)  # the verdict printed below is this self-test's
    try:
        outcomes = verdict.run_steps(todo, verdict.process_runner(step_timeout, out / "logs"),
                                     on_step=lambda step: console.err.print(f"selftest: {step.name} ..."),
                                     on_done=write, passed_before=verdict.passed(saved, todo) if resume else None)
    finally:  # stopped from outside too (SIGTERM, as timeout(1) sends it): what it found so far
        if path.is_file():  # whole: from a machine lent for one call, what it printed comes back and OUT does not
            click.echo(path.read_text())
    console.out.print(str(path))
    failed = [o.step.name for o in outcomes if not o.ok]
    if failed:
        raise BenchError(f"selftest: {len(failed)} step(s) failed: {', '.join(failed)} (see {path})")

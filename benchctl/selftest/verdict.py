"""Runs the self-test's steps and writes the verdict: a table of steps (passed or not, how long, the last
lines of a failure) and the figures of its sweeps, including the timer agreement on the GPU."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from benchctl.errors import UsageError
from benchctl.selftest.steps import Step

TAIL_LINES = 12
TIMED_OUT = 124  # the exit status a step gets when it ran past its time limit (as timeout(1) gives)


@dataclass(frozen=True)
class Outcome:
    """How one step of the self-test ended."""
    step: Step
    code: int  # its exit status: 0 passed, TIMED_OUT ran past its limit
    seconds: float
    tail: str  # the last lines of its output
    earlier: bool = False  # kept from an earlier self-test at the same folder (--resume), not run again

    @property
    def ok(self) -> bool:
        return self.code == 0


Runner = Callable[[Step], tuple[int, str]]


def log_name(step: Step) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in step.name.lower()) + ".log"


def stop_with(child: subprocess.Popen) -> None:
    """The self-test is stopped from outside (SIGTERM, as timeout(1) sends): its step's process group goes
    with it, so no GPU work of the step runs on beside whatever runs next."""
    os.killpg(child.pid, signal.SIGKILL)
    raise SystemExit(128 + signal.SIGTERM)


def process_runner(limit_s: float, logs: Path) -> Runner:
    """Runs a step in its own process group, its output going to logs/<step>.log as it comes (a self-test
    stopped from outside still leaves how far each step got); past `limit_s` the whole group (the workers
    a sweep started too) is killed and the step fails saying so, so one hung step cannot stop the rest."""
    def run(step: Step) -> tuple[int, str]:
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / log_name(step), "w+") as log:
            child = subprocess.Popen(list(step.argv), stdout=log, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
            before = signal.signal(signal.SIGTERM, lambda *_: stop_with(child))
            try:
                code, note = child.wait(timeout=limit_s), ""
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                code, note = TIMED_OUT, f"\nselftest: timed out after {limit_s:.0f} s"
            finally:
                signal.signal(signal.SIGTERM, before)
            log.seek(0)
            return code, log.read() + note
    return run


def run_steps(steps: Sequence[Step], runner: Runner,
              on_step: Callable[[Step], None] = lambda step: None,
              on_done: Callable[[list[Outcome]], None] = lambda outcomes: None,
              passed_before: dict[str, Outcome] | None = None) -> list[Outcome]:
    """Runs the steps in order; `on_done` sees the outcomes so far after each (the verdict is rewritten
    then, so a self-test stopped midway still leaves what it found). A step in `passed_before` keeps that
    outcome and is not run again."""
    outcomes: list[Outcome] = []
    for step in steps:
        if step.name in (passed_before or {}):
            outcomes.append(passed_before[step.name])
            continue
        on_step(step)
        began = time.monotonic()
        code, output = runner(step)
        tail = "\n".join(output.strip().splitlines()[-TAIL_LINES:])
        outcomes.append(Outcome(step, code, time.monotonic() - began, tail))
        on_done(outcomes)
    return outcomes


def result(outcome: Outcome) -> str:
    if not outcome.ok:
        return "FAIL (timed out)" if outcome.code == TIMED_OUT else "FAIL"
    return "pass (earlier run)" if outcome.earlier else "pass"


def markdown(outcomes: Sequence[Outcome], machine: str, figures: Sequence[str] = (),
             pending: Sequence[Step] = ()) -> str:
    """The verdict; steps still `pending` (a self-test under way or stopped) are listed and make it
    UNFINISHED rather than PASS."""
    passed = sum(o.ok for o in outcomes)
    word = "FAIL" if passed < len(outcomes) else "UNFINISHED" if pending else "PASS"
    lines = [f"# GPU self-test: {word} ({passed} of {len(outcomes) + len(pending)} steps)",
             "", machine, "", "| step | result | seconds | what it proves |", "|---|---|---|---|"]
    lines += [f"| {o.step.name} | {result(o)} | {o.seconds:.0f} | {o.step.proves} |" for o in outcomes]
    lines += [f"| {step.name} | not run yet | | {step.proves} |" for step in pending]
    for o in (o for o in outcomes if not o.ok):
        lines += ["", f"## {o.step.name} failed", "", "```", " ".join(o.step.argv), o.tail, "```"]
    shown = [line for o in outcomes if o.step.shows_output for line in o.tail.splitlines()]
    if figures or shown:
        lines += ["", "## Figures", "", *shown, *figures]
    return "\n".join(lines) + "\n"


def save(path: Path, outcomes: Sequence[Outcome]) -> None:
    """Each step's outcome, for a later `--resume` (the step itself is matched by name)."""
    rows = [{"step": o.step.name, "ok": o.ok, "seconds": o.seconds, "tail": o.tail} for o in outcomes]
    write(path, json.dumps(rows, indent=1))


SAVED_KEYS = ("step", "ok", "seconds", "tail")  # what `save` writes of each step


def passed(path: Path, steps: Sequence[Step]) -> dict[str, Outcome]:
    """The steps that passed in the outcomes saved at `path` (none if there is no such file). A file that holds
    no saved outcomes is a usage error: --resume would skip steps on its word."""
    rows = _saved(path) if path.is_file() else []
    by_name = {step.name: step for step in steps}
    return {r["step"]: Outcome(by_name[r["step"]], 0, r["seconds"], r["tail"], earlier=True)
            for r in rows if r["ok"] and r["step"] in by_name}


def _saved(path: Path) -> list[dict]:
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError):
        rows = None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and all(k in r for k in SAVED_KEYS) for r in rows):
        raise UsageError(f"cannot resume from {path}: it holds no self-test's saved steps; run without --resume")
    return rows


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path

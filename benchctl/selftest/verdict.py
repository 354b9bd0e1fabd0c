"""Runs the self-test's steps and writes the verdict: a table of steps (passed or not, how long, the last
lines of a failure) and the figures of its sweeps, including the timer agreement on the GPU."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from benchctl.selftest.steps import Step

TAIL_LINES = 8


@dataclass(frozen=True)
class Outcome:
    step: Step
    ok: bool
    seconds: float
    tail: str  # the last lines of its output


Runner = Callable[[Sequence[str]], tuple[int, str]]


def run_process(argv: Sequence[str]) -> tuple[int, str]:
    done = subprocess.run(list(argv), capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def run_steps(steps: Sequence[Step], runner: Runner = run_process,
              on_step: Callable[[Step], None] = lambda step: None) -> list[Outcome]:
    outcomes = []
    for step in steps:
        on_step(step)
        began = time.monotonic()
        code, output = runner(step.argv)
        tail = "\n".join(output.strip().splitlines()[-TAIL_LINES:])
        outcomes.append(Outcome(step, code == 0, time.monotonic() - began, tail))
    return outcomes


def markdown(outcomes: Sequence[Outcome], machine: str, figures: Sequence[str] = ()) -> str:
    passed = sum(o.ok for o in outcomes)
    lines = [f"# GPU self-test: {'PASS' if passed == len(outcomes) else 'FAIL'} ({passed} of {len(outcomes)} steps)",
             "", machine, "", "| step | result | seconds | what it proves |", "|---|---|---|---|"]
    lines += [f"| {o.step.name} | {'pass' if o.ok else 'FAIL'} | {o.seconds:.0f} | {o.step.proves} |" for o in outcomes]
    for o in (o for o in outcomes if not o.ok):
        lines += ["", f"## {o.step.name} failed", "", "```", " ".join(o.step.argv), o.tail, "```"]
    shown = [line for o in outcomes if o.step.shows_output for line in o.tail.splitlines()]
    if figures or shown:
        lines += ["", "## Figures", "", *shown, *figures]
    return "\n".join(lines) + "\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path

"""Measure the cell at the commit checked out, in a `benchctl run` subprocess (so the code is imported
afresh from the working tree: the extension cache keys on sources, so an unchanged extension is not built
again), and judge it against the good commit's run with compare.compare."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchctl.bisect.spec import Spec
from benchctl.errors import BenchError
from benchctl.analysis import compare, comparison
from benchctl.results import storage
from benchctl.results.params import params_text
from benchctl.results.schema import left_alone
from benchctl.vocab import CommitVerdict, Status, Verdict

TRIES = 2  # an unsure commit is measured again once before it is skipped
BAD_VERDICTS = comparison.REGRESSIONS  # slower, or stopped working
GOOD_VERDICTS = (Verdict.SAME, Verdict.FASTER)


class MeasureFailed(BenchError):
    """`benchctl run` could not measure the cell at this commit."""


def cell_key(c: comparison.CellChange) -> str:
    """`py forward batch_size=8 (op, float32)`: a cell of the bisect's operator and device, by its lines' words."""
    return f"{_label(c)} ({c.target}, {c.dtype})"


def _label(c: comparison.CellChange) -> str:
    return f"{c.impl} {c.pass_name} {params_text(c.params) if c.params else ''}"


@dataclass(frozen=True)
class Judged:
    verdict: CommitVerdict  # good, bad or unsure (judge)
    changes: tuple[comparison.CellChange, ...]  # against GOOD's run
    against_bad: tuple[comparison.CellChange, ...] = ()  # against BAD's, where GOOD's could not decide

    def regressed(self) -> tuple[str, ...]:
        """The cells judged slower or broken (cell_key)."""
        return tuple(cell_key(c) for c in self.changes if c.verdict in BAD_VERDICTS)

    def summary(self) -> str:
        return _said(self.changes) + (f"; against BAD: {_said(self.against_bad)}" if self.against_bad else "")


def _said(changes: tuple[comparison.CellChange, ...]) -> str:
    """`py forward batch_size=8: +166% slower (past 2.5x, though noisy)`, a cell after another."""
    return "; ".join(f"{_label(c)}: " + (f"{(c.ratio - 1) * 100:+.0f}% " if c.ratio is not None else "") + c.words()
                     for c in changes)


def run_command(spec: Spec, out: Path) -> list[str]:
    ops = [a for d in spec.ops_dirs for a in ("--ops-dir", d)]
    passes = ["--passes", ",".join(spec.passes)] if spec.passes else []
    return [sys.executable, "-m", "benchctl", "run", spec.impl, spec.device, "--op", spec.op, *ops, *passes,
            *spec.run_args, "--out", str(out)]


def child_env() -> dict[str, str]:
    """This process's environment, with this benchctl first on the path: the commands run in the bisected
    repository, where `python -m benchctl` would not otherwise find it."""
    here = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}


def measure(spec: Spec, out: Path, cwd: Path) -> Path:
    """The new run folder under `out`."""
    done = subprocess.run(run_command(spec, out), cwd=cwd, capture_output=True, text=True, env=child_env())
    run = storage.latest_run(out)
    if done.returncode != 0 or run is None:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [f"exit {done.returncode}"]
        raise MeasureFailed(f"benchctl run failed: {last[0]}")
    return run


def measure_good(spec: Spec, cwd: Path) -> Path:
    """GOOD's run, which every commit is judged against: measured again, up to TRIES times in all, while the
    machine did not leave one of its passes alone (`disturbed`, or timed beside other work), since `compare`
    calls no change against such a pass; a run measured again replaces the one before."""
    run = measure(spec, spec.good_run, cwd)
    for _ in range(TRIES - 1):
        if _left_alone(run):
            break
        shutil.rmtree(run)
        run = measure(spec, spec.good_run, cwd)
    return run


def _left_alone(run: Path) -> bool:
    """The machine left every timed pass of the run alone (results/schema.py)."""
    rows = storage.load_run(run)
    return all(left_alone(row) for row in rows[rows["status"] == Status.OK].to_dict("records"))


def judge(spec: Spec, run: Path) -> Judged:
    """The run against GOOD's, on the cells BAD was slower in where they are known (`Spec.cells`): a cell that
    did not move between GOOD and BAD says nothing of the commits between them, and on a machine whose speed
    moves, one of the others left unsure was enough to skip a commit. One of them slower (or broken) makes the
    commit bad, all of them same or faster good. Where that leaves it unsure, the run is judged against BAD's
    (`Spec.bad_run`): all of them faster than BAD makes it good, all same or slower bad. Two runs of the same
    code on a drifting machine are seldom `same`, while BAD's slowdown, far enough past the drift to be called
    at all, is as far from a commit without it."""
    new = storage.load([run])
    cells = _hunted(spec, storage.load([spec.good_run]), new)
    if any(c.verdict in BAD_VERDICTS for c in cells):
        return Judged(CommitVerdict.BAD, cells)
    if _complete(spec, cells) and all(c.verdict in GOOD_VERDICTS for c in cells):
        return Judged(CommitVerdict.GOOD, cells)
    if not spec.bad_run:
        return Judged(CommitVerdict.UNSURE, cells)
    against = _hunted(spec, storage.load([spec.bad_run]), new)
    said = {c.verdict for c in against} if _complete(spec, against) else set()
    verdict = (CommitVerdict.GOOD if said == {Verdict.FASTER} else
               CommitVerdict.BAD if said and said <= {Verdict.SAME, Verdict.SLOWER} else CommitVerdict.UNSURE)
    return Judged(verdict, cells, against)


def _hunted(spec: Spec, base, new) -> tuple[comparison.CellChange, ...]:
    """NEW against BASE on the cells the bisect hunts (all of them until BAD is judged)."""
    result = compare.compare(base, new, spec.threshold, spec.alpha)
    return tuple(c for c in result.compared if not spec.cells or cell_key(c) in spec.cells)


def _complete(spec: Spec, cells: tuple[comparison.CellChange, ...]) -> bool:
    """Each hunted cell was measured (at least one cell, until BAD is judged)."""
    return len(cells) == len(spec.cells) if spec.cells else bool(cells)


def judged_at(spec: Spec, label: str, cwd: Path) -> tuple[Judged, int]:
    """The commit checked out in `cwd`, measured and judged; measured again while unsure, up to TRIES
    times in all. The verdict, and how many measurements it took."""
    for attempt in range(1, TRIES + 1):
        judged = judge(spec, measure(spec, spec.measured(label, attempt), cwd))
        if judged.verdict != CommitVerdict.UNSURE:
            break
    return judged, attempt

"""Drive `git bisect run` over a repository: measure GOOD (the reference every commit is judged against)
and BAD (which must be judged bad, or there is nothing to find), then let git pick the commits, step.py
measuring each. The repository is left as it was found: the bisect is reset and the branch checked out
again on every way out, Ctrl-C included. A dirty working tree is refused, since checking out commits would
carry or lose its changes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from benchctl.bisect.measure import Judged, child_env, judged_at, measure_good
from benchctl.bisect.spec import Spec
from benchctl.errors import BenchError, UsageError
from benchctl.results import commits
from benchctl.vocab import CommitVerdict

# What decides more where the machine left BAD's cells unsure: compare's advice, in bisect's own options.
UNSURE_HINT = "measured with --run-arg=--processes=3 (not --quick) on a quiet machine, more cells are decided"
FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.M)
ONLY_SKIPPED = re.compile(r"The first bad commit could be any of:\n((?:[0-9a-f]{40}\n?)+)")


@dataclass(frozen=True)
class Result:
    first_bad: commits.Commit | None  # None when skipped commits hide it
    candidates: tuple[commits.Commit, ...] = ()  # then: the commits it could be, oldest first
    tested: tuple[dict, ...] = field(default_factory=tuple)  # each commit measured: subject, verdict, cells
    cells: tuple[str, ...] = ()  # the cells each commit was judged on: those BAD was slower in (Spec.cells)


def repository(folder: Path | str) -> Path:
    top = commits.git(folder, "rev-parse", "--show-toplevel")
    if not top:
        raise UsageError(f"{folder} is not in a git repository")
    return Path(top)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"git {' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


def _resolve(repo: Path, rev: str) -> str:
    sha = commits.git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if not sha:
        raise UsageError(f"{rev!r} is not a commit of {repo}")
    return sha


def check_ready(repo: Path) -> None:
    if commits.git(repo, "status", "--porcelain", "--untracked-files=no"):
        raise UsageError(f"{repo} has uncommitted changes: commit or stash them first (a bisect checks out commits)")
    if commits.git(repo, "bisect", "log") is not None:
        raise UsageError(f"{repo} is already bisecting: finish it with `git bisect reset` first")


def check_order(repo: Path, good: str, bad: str) -> None:
    """GOOD must come before BAD: the same commit, or a GOOD that BAD does not descend from, has no commits
    between them to search."""
    if good == bad:
        raise UsageError(f"GOOD and BAD are the same commit {good[:12]}: nothing between them to bisect")
    if commits.git(repo, "merge-base", "--is-ancestor", good, bad) is None:
        raise UsageError(f"GOOD {good[:12]} is not an ancestor of BAD {bad[:12]} (given the other way round?): "
                         "a bisect searches the commits from GOOD to BAD")


def check_work(work: Path) -> None:
    """The measurements folder must be new or empty: every run under it is read as this bisect's (GOOD's folder
    whole, the latest run of each cell, and the log line by line), so an earlier bisect's runs there would stand
    in for cells this one did not measure, and its commits be listed as this one's."""
    if work.is_dir() and any(work.iterdir()):
        raise UsageError(f"--work {work} is not empty (an earlier bisect's measurements?): give a new or empty "
                         "folder, so no earlier run is judged as this bisect's")


def bisect(spec: Spec, repo: Path, good: str, bad: str, on_start: Callable[[], None] = lambda: None) -> Result:
    """`on_start` is called once the repository and both commits are known good, before anything is measured."""
    check_ready(repo)
    good_sha, bad_sha = _resolve(repo, good), _resolve(repo, bad)
    check_order(repo, good_sha, bad_sha)
    check_work(Path(spec.work))
    start = commits.git(repo, "symbolic-ref", "-q", "--short", "HEAD") or _git(repo, "rev-parse", "HEAD")
    try:  # made once the commits are known good: a bisect refused leaves no folder behind
        Path(spec.work).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write results to {spec.work}: {exc.strerror or exc}") from None
    on_start()
    try:
        spec = _measure_ends(spec, repo, good_sha, bad_sha)
        _git(repo, "checkout", "-q", start)
        _git(repo, "bisect", "start", bad_sha, good_sha)
        done = subprocess.run(["git", "-C", str(repo), "bisect", "run", sys.executable, "-m", "benchctl.bisect.step",
                               str(spec.save())], capture_output=True, text=True, env=child_env())
        return _result(repo, done.stdout + done.stderr, spec)
    finally:
        leave_as_found(repo, start)


def _measure_ends(spec: Spec, repo: Path, good: str, bad: str) -> Spec:
    """`spec` with the cells BAD was judged slower in, which every commit between is then judged on, and BAD's
    run."""
    _git(repo, "checkout", "-q", good)
    measure_good(spec, repo)
    _git(repo, "checkout", "-q", bad)
    judged, tries = judged_at(spec, "bad", repo)
    if judged.verdict != CommitVerdict.BAD:
        said = judged.summary() or "no cells"
        raise BenchError(f"BAD {bad[:12]} is not judged slower than GOOD {good[:12]} ({said}): {_why_not(judged)}")
    spec.record(bad, judged.verdict, tries, judged.summary())
    return replace(spec, cells=judged.regressed(), bad_run=str(spec.measured("bad", tries)))


def _why_not(judged: Judged) -> str:
    """What a BAD that is not judged slower leaves: nothing to find where it is as fast as GOOD, and where the
    machine left it unsure, what decides more."""
    if judged.verdict == CommitVerdict.GOOD:
        return "nothing to bisect"
    return f"the machine left it unsure, so nothing is known to bisect; {UNSURE_HINT}"


def leave_as_found(repo: Path, start: str) -> None:
    """Reset any bisect and check out what was checked out at the start."""
    if commits.git(repo, "bisect", "log") is not None:
        subprocess.run(["git", "-C", str(repo), "bisect", "reset"], capture_output=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", start], capture_output=True)


def _result(repo: Path, output: str, spec: Spec) -> Result:
    logged = [json.loads(line) for line in spec.log.read_text().splitlines()] if spec.log.exists() else []
    subjects = commits.describe(repo, [t["commit"] for t in logged])
    tested = tuple({**t, "subject": subjects[t["commit"]].subject if t["commit"] in subjects else ""} for t in logged)
    found = FIRST_BAD.search(output)
    if found:
        return Result(_described(repo, [found.group(1)])[0], (), tested, spec.cells)
    skipped = ONLY_SKIPPED.search(output)
    if skipped:
        return Result(None, _described(repo, skipped.group(1).split()), tested, spec.cells)
    lines = output.strip().splitlines()
    raise BenchError(f"git bisect run ended without naming a commit: {lines[-1] if lines else 'no output'}")


def _described(repo: Path, shas: list[str]) -> tuple[commits.Commit, ...]:
    """Each commit with its subject, oldest first (git lists a bisect's candidates in no set order)."""
    described, order = commits.describe(repo, shas), commits.git_order(repo, shas)
    return tuple(described.get(sha) or commits.Commit(sha, "", "")
                 for sha in sorted(shas, key=lambda sha: order.get(sha, len(order))))

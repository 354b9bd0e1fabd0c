"""`benchctl bisect` on a small repository made here, whose operator's call sleeps five times longer from a
known commit on: the bisect names that commit and leaves the repository as it was
found, also when it is interrupted; a dirty tree, a bisect already going and a BAD that is not slower are
refused with one line, and so is a --work folder that already holds measurements."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchctl.bisect import driver
from benchctl.bisect.spec import Spec
from benchctl.cli import cli
from benchctl.errors import BenchError
from benchctl.vocab import CommitVerdict

OPERATOR = '''import time

from benchctl.ops.registry import Operator, Target, randn, register

DELAY_S = {delay}  # {note}


def make_inputs(case):
    return {{"x": randn(case, case.generator(), case.params["batch_size"], 4)}}


OP = register(Operator(name="bisect_probe", description="x + 1", params={{"batch_size": 8}},
                       targets=(Target("op", make_inputs),)))


@OP.implementation("py")
def py(x):
    if DELAY_S:
        time.sleep(DELAY_S)
    return x + 1
'''
STEADY = Path(__file__).resolve().parents[1] / "fixtures" / "steady_canary"
SLOW_AT = 2  # the commit that makes the sleep longer
# The call sleeps rather than computes: a sleep's time hardly depends on how busy the machine is (a computed
# microsecond call moved by more than 5% between runs here, which is `unsure`, and a skipped commit), and
# five times longer is far past any run-to-run change.
BASE_S, SLOW_S = 0.02, 0.1
COMMITS = 4
# The fastest settings that still sample the slow call until its median's interval settles within 1% (or
# the row is noisy, and the verdict unsure).
FAST = ["--in-process", "--min-time", "0.5", "--max-time", "4", "--warmup-time", "0", "--remeasure", "0"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> tuple[Path, list[str]]:
    """A repository whose operator sleeps from commit SLOW_AT on; its commits, oldest first."""
    top = tmp_path / "repo"
    (top / "ops").mkdir(parents=True)
    git(top, "init", "-q", "-b", "main")
    shas = []
    for i in range(COMMITS):
        delay = SLOW_S if i >= SLOW_AT else BASE_S
        (top / "ops" / "bisect_probe.py").write_text(OPERATOR.format(delay=delay, note=f"version {i}"))
        git(top, "add", ".")
        git(top, "commit", "-q", "-m", "sleep longer in py" if i == SLOW_AT else f"version {i}")
        shas.append(git(top, "rev-parse", "HEAD"))
    return top, shas


@pytest.fixture(scope="module")
def steady_machine() -> dict[str, str]:
    """The environment of processes that read the canary as one real reading taken here (see
    tests/fixtures/steady_canary)."""
    from benchctl.machine import canary

    path = os.pathsep.join(filter(None, [str(STEADY), os.environ.get("PYTHONPATH")]))
    return {"PYTHONPATH": path, "BENCHCTL_TEST_CANARY_S": repr(canary.canary()), "COLUMNS": "200"}


def bisect(top: Path, env: dict[str, str], *extra: str):
    args = ["bisect", f"HEAD~{COMMITS - 1}", "HEAD", "--op", "bisect_probe", "--impl", "py", "--pass", "forward",
            "--ops-dir", str(top / "ops"), *(f"--run-arg={a}" for a in FAST), *extra]
    return CliRunner().invoke(cli, args, env=env)


def test_bisect_names_the_commit_that_slowed_the_cell_and_leaves_the_repository_as_found(repo, tmp_path,
                                                                                          steady_machine):
    top, shas = repo
    result = bisect(top, steady_machine, "--work", str(tmp_path / "work"))
    assert result.exit_code == 0, result.output
    assert f"first bad commit: {shas[SLOW_AT]} sleep longer in py" in result.output
    assert git(top, "symbolic-ref", "--short", "HEAD") == "main" and git(top, "rev-parse", "HEAD") == shas[-1]
    assert git(top, "status", "--porcelain") == "" and not (top / ".git" / "BISECT_LOG").exists()
    measured = [json.loads(line) for line in (tmp_path / "work" / "commits.jsonl").read_text().splitlines()]
    assert measured and all(m["verdict"] == ("bad" if shas.index(m["commit"]) >= SLOW_AT else "good")
                            for m in measured)
    assert all(m["cells"].startswith("py forward batch_size=8: ") for m in measured)  # the params as elsewhere
    assert f"{shas[SLOW_AT][:12]} sleep longer in py" in result.output  # each commit measured, with its subject


def test_an_interrupted_bisect_is_reset(repo, tmp_path, monkeypatch):
    """Ctrl-C while `git bisect run` runs (the ends' measurements left out: they take the time)."""
    top, shas = repo
    real = subprocess.run

    def interrupted(args, *a, **kw):
        if "bisect" in args and "run" in args:
            raise KeyboardInterrupt
        return real(args, *a, **kw)

    monkeypatch.setattr(driver.subprocess, "run", interrupted)
    def ends(spec, *args):  # the ends' measurements left out: GOOD checked out, the spec as it was
        driver._git(top, "checkout", "-q", shas[0])
        return spec

    monkeypatch.setattr(driver, "_measure_ends", ends)
    with pytest.raises(KeyboardInterrupt):
        driver.bisect(Spec("bisect_probe", "py", "cpu", str(tmp_path / "w"), ("forward",),
                                  (str(top / "ops"),), tuple(FAST)), top, shas[0], shas[-1])
    assert git(top, "symbolic-ref", "--short", "HEAD") == "main"
    assert subprocess.run(["git", "-C", str(top), "bisect", "log"], capture_output=True).returncode != 0


def test_a_bad_commit_that_is_not_slower_is_refused(repo, steady_machine):
    top, shas = repo
    result = CliRunner().invoke(cli, ["bisect", shas[0], shas[1], "--op", "bisect_probe", "--impl", "py", "--pass",
                                      "forward", "--ops-dir", str(top / "ops"), *(f"--run-arg={a}" for a in FAST)],
                                env=steady_machine)
    assert result.exit_code == 1 and "is not judged slower than GOOD" in result.output
    assert git(top, "symbolic-ref", "--short", "HEAD") == "main" and git(top, "rev-parse", "HEAD") == shas[-1]


@pytest.mark.parametrize("verdict, said", [
    (CommitVerdict.GOOD, "nothing to bisect"),
    (CommitVerdict.UNSURE, "the machine left it unsure, so nothing is known to bisect; measured with "
                           "--run-arg=--processes=3 (not --quick) on a quiet machine, more cells are decided"),
])
def test_a_bad_commit_not_judged_slower_says_whether_there_is_nothing_to_find(repo, tmp_path, monkeypatch,
                                                                             verdict, said):
    """BAD as fast as GOOD: nothing to find; BAD left unsure (the machine's doing): what decides more."""
    top, shas = repo
    monkeypatch.setattr(driver, "measure_good", lambda spec, cwd: None)
    monkeypatch.setattr(driver, "judged_at", lambda spec, label, cwd: (driver.Judged(verdict, ()), 2))
    spec = Spec("bisect_probe", "py", "cpu", str(tmp_path / "w"), ("forward",), (str(top / "ops"),))
    with pytest.raises(BenchError, match="is not judged slower than GOOD") as refused:
        driver.bisect(spec, top, shas[0], shas[-1])
    assert str(refused.value).endswith(f"(no cells): {said}")
    assert git(top, "symbolic-ref", "--short", "HEAD") == "main" and git(top, "rev-parse", "HEAD") == shas[-1]


def test_skipped_commits_are_named_with_their_subjects_oldest_first(repo, tmp_path):
    """git lists the commits a bisect could not tell apart in no set order (seen: the fourth, third, fifth)."""
    top, shas = repo
    output = (f"There are only 'skip'ped commits left to test.\nThe first bad commit could be any of:\n{shas[2]}\n"
              f"{shas[1]}\n{shas[3]}\nWe cannot bisect more!\n")
    result = driver._result(top, output, Spec("bisect_probe", "py", "cpu", str(tmp_path / "w")))
    assert result.first_bad is None
    assert [(c.sha, c.subject) for c in result.candidates] == [
        (shas[1], "version 1"), (shas[2], "sleep longer in py"), (shas[3], "version 3")]


def test_a_dirty_tree_and_unknown_commits_are_refused(repo):
    top, _ = repo
    result = CliRunner().invoke(cli, ["bisect", "nope", "HEAD", "--op", "bisect_probe", "--impl", "py",
                                      "--ops-dir", str(top / "ops")])
    assert result.exit_code == 2 and "'nope' is not a commit" in result.output
    assert "bisecting" not in result.output  # nothing said to start that did not
    (top / "ops" / "bisect_probe.py").write_text("# changed\n")
    result = bisect(top, {})
    assert result.exit_code == 2 and "has uncommitted changes" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("good, bad, message", [
    ("HEAD", "HEAD", "GOOD and BAD are the same commit"),
    ("HEAD", "HEAD~2", "is not an ancestor of BAD"),
])
def test_the_same_commit_or_the_ends_reversed_are_refused_before_anything_is_measured(repo, good, bad, message):
    top, shas = repo
    result = CliRunner().invoke(cli, ["bisect", good, bad, "--op", "bisect_probe", "--impl", "py",
                                      "--ops-dir", str(top / "ops"), "--work", str(top.parent / "work")])
    assert result.exit_code == 2 and message in result.output, result.output
    assert not (top.parent / "work").exists() and git(top, "rev-parse", "HEAD") == shas[-1]


def test_a_work_folder_holding_measurements_is_refused_and_kept(repo, tmp_path):
    """A bisect reads every run under --work as its own (GOOD's folder whole): an earlier bisect's runs
    there stood in for cells this one did not measure, and its log lines were listed as this bisect's commits."""
    top, shas = repo
    earlier = tmp_path / "work" / "good" / "20261207-140741-544998"
    earlier.mkdir(parents=True)
    (tmp_path / "work" / "commits.jsonl").write_text('{"commit": "0123", "verdict": "bad"}\n')
    result = bisect(top, {}, "--work", str(tmp_path / "work"))
    assert result.exit_code == 2 and f"--work {tmp_path / 'work'} is not empty" in result.output, result.output
    assert "bisecting" not in result.output and "Traceback" not in result.output
    assert earlier.is_dir() and (tmp_path / "work" / "commits.jsonl").read_text().startswith('{"commit": "0123"')
    assert git(top, "rev-parse", "HEAD") == shas[-1] and git(top, "status", "--porcelain") == ""

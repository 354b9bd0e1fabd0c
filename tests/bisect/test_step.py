"""The step `git bisect run` runs at each commit: its exit code from the verdict (0 good, 1 bad, 125 skip),
an unsure commit measured twice before it is skipped, a commit that cannot be measured skipped, and every
commit's line in the log. The measurement is replaced here (test_bisect.py measures for real)."""

from __future__ import annotations

import json

import pytest

from benchctl.bisect import measure, step
from benchctl.bisect.spec import ABORT, BAD, GOOD, SKIP, Spec


@pytest.fixture
def spec(tmp_path) -> str:
    return str(Spec("op", "py", "cpu", str(tmp_path)).save())


def judged(monkeypatch, verdicts: list[str]) -> list[str]:
    """Measurements that judge as `verdicts`, in turn; the labels measured, in order."""
    labels: list[str] = []
    monkeypatch.setattr(measure, "measure", lambda spec, out, cwd: labels.append(out.name) or out)
    monkeypatch.setattr(measure, "judge", lambda spec, run: measure.Judged(verdicts[len(labels) - 1], ()))
    return labels


@pytest.mark.parametrize("verdicts, code, tries", [(["good"], GOOD, 1), (["bad"], BAD, 1),
                                                    (["unsure", "bad"], BAD, 2), (["unsure", "unsure"], SKIP, 2)])
def test_the_exit_code_follows_the_verdict_and_unsure_is_measured_again(monkeypatch, spec, tmp_path, verdicts,
                                                                        code, tries):
    labels = judged(monkeypatch, verdicts)
    assert step.main([spec]) == code
    assert [label.rsplit("-", 1)[1] for label in labels] == [str(i) for i in range(1, tries + 1)]
    (line,) = (tmp_path / "commits.jsonl").read_text().splitlines()
    assert json.loads(line)["tries"] == tries and json.loads(line)["verdict"] == verdicts[-1]


def test_a_commit_that_cannot_be_measured_is_skipped(monkeypatch, spec, tmp_path):
    def fails(spec, out, cwd):
        raise measure.MeasureFailed("benchctl run failed: nothing can run here")

    monkeypatch.setattr(measure, "measure", fails)
    assert step.main([spec]) == SKIP
    assert json.loads((tmp_path / "commits.jsonl").read_text())["verdict"] == "failed"


def test_a_step_that_breaks_stops_the_bisect_rather_than_judging_bad(monkeypatch, spec, tmp_path):
    def broken(spec, out, cwd):
        raise RuntimeError("no such folder")

    monkeypatch.setattr(measure, "measure", broken)
    assert step.guarded([spec]) == ABORT and ABORT >= 128

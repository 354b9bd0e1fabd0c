"""The step `git bisect run` runs at each commit: its exit code from the verdict (0 good, 1 bad, 125 skip),
an unsure commit measured twice before it is skipped, a commit that cannot be measured skipped, and every
commit's line in the log. The measurement is replaced here (test_bisect.py measures for real)."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_a_good_run_the_machine_did_not_leave_alone_is_measured_again_once(monkeypatch, tmp_path):
    """Every commit is judged against GOOD's run, and `compare` calls no change against a pass timed beside other
    work: such a run is replaced by a second one (kept whatever it reads)."""
    from benchctl.results import storage

    def good(name: str, busy: list[float]) -> tuple[list[str], list[str]]:
        """The runs measured, and those left in GOOD's folder, where each reads the next of `busy`."""
        spec, made = Spec("op", "py", "cpu", str(tmp_path / name)), []

        def fake(spec, out, cwd):
            writer = storage.RunWriter(out, f"run-{len(made)}", {})
            writer.write([{"op": "op", "impl": "py", "device": "cpu", "pass": "forward", "status": "ok",
                           "median_s": 1e-3, "other_cores": busy[len(made)]}])
            writer.finish()
            made.append(writer.dir.name)
            return writer.dir

        monkeypatch.setattr(measure, "measure", fake)
        kept = measure.measure_good(spec, tmp_path)
        assert [p.name for p in spec.good_run.iterdir()] == [kept.name]
        return made, [kept.name]

    assert good("a", [1.0, 0.02]) == (["run-0", "run-1"], ["run-1"])
    assert good("b", [0.01]) == (["run-0"], ["run-0"])
    assert good("c", [1.0, 1.0, 0.0]) == (["run-0", "run-1"], ["run-1"])  # TRIES in all


def change(pass_name: str, verdict: str):
    from benchctl.analysis.comparison import CellChange

    return CellChange("op", "t", "py", "cpu", "float32", '{"batch_size": 8}', pass_name, verdict)


@pytest.mark.parametrize("fwd, bwd, hunted, verdict", [
    ("same", "unsure", ("forward",), "good"),  # the cell that did not move at BAD says nothing
    ("slower", "same", ("forward",), "bad"),
    ("unsure", "same", ("forward",), "unsure"),
    (None, "slower", ("forward", "backward"), "bad"),  # one hunted cell not measured: a slower one still decides
    (None, "same", ("forward", "backward"), "unsure"),  # ... but not good
    ("same", "unsure", (), "unsure"),  # BAD not judged yet: every cell counts
])
def test_a_commit_is_judged_on_the_cells_bad_was_slower_in(monkeypatch, tmp_path, fwd, bwd, hunted, verdict):
    from types import SimpleNamespace

    from benchctl.analysis import compare
    from benchctl.results import storage

    cells = [change(p, v) for p, v in (("forward", fwd), ("backward", bwd)) if v is not None]
    monkeypatch.setattr(storage, "load", lambda runs: None)
    monkeypatch.setattr(compare, "compare", lambda *args: SimpleNamespace(compared=cells))
    keys = tuple(measure.cell_key(change(p, "slower")) for p in hunted)
    assert keys[:1] in ((), ("py forward batch_size=8 (t, float32)",))
    judged = measure.judge(Spec("op", "py", "cpu", str(tmp_path), cells=keys), tmp_path)
    assert judged.verdict == verdict


@pytest.mark.parametrize("against_good, against_bad, verdict", [
    ("unsure", "faster", "good"),  # GOOD's noise leaves it unsure; BAD's slowdown is not in it
    ("unsure", "same", "bad"),
    ("unsure", "slower", "bad"),
    ("unsure", "unsure", "unsure"),
    ("same", "unsure", "good"),  # GOOD's word first: BAD's is not asked
    ("slower", "faster", "bad"),
])
def test_a_commit_good_s_run_cannot_decide_is_judged_against_bad_s(monkeypatch, tmp_path, against_good, against_bad,
                                                                   verdict):
    from types import SimpleNamespace

    from benchctl.analysis import compare
    from benchctl.results import storage

    answers = iter([[change("forward", against_good)], [change("forward", against_bad)]])
    monkeypatch.setattr(storage, "load", lambda runs: runs)
    monkeypatch.setattr(compare, "compare", lambda base, *args: SimpleNamespace(compared=next(answers)))
    hunted = (measure.cell_key(change("forward", "slower")),)
    spec = Spec("op", "py", "cpu", str(tmp_path), cells=hunted, bad_run=str(tmp_path / "bad-1"))
    judged = measure.judge(spec, tmp_path)
    assert judged.verdict == verdict
    asked = against_good not in ("same", "slower")
    assert [c.verdict for c in judged.against_bad] == ([against_bad] if asked else [])
    assert ("against BAD: py forward batch_size=8: " + against_bad in judged.summary()) == asked
    assert spec.measured("bad", 1) == Path(spec.bad_run)

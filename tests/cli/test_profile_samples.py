"""`benchctl profile` whose profiler caught no sample in the timed code: one line saying so, not empty tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from benchctl.cli import cli
from benchctl.profile import profilers as profiling
from benchctl.profile.stacks import FrameStat, OpStat, TopFrames


def test_a_profile_without_a_timed_sample_is_an_error_naming_duration(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "p"
    empty = TopFrames({"total": 3, "timed": 0, "setup": 1, "startup": 2}, (), (), ())
    monkeypatch.setattr(profiling, "profile_py_spy",
                        lambda req, folder: profiling.ProfileResult(folder, "py-spy", 2, 0.08, top=empty))
    result = CliRunner().invoke(cli, ["profile", "lstm_cell", "py", "cpu", "--duration", "0.1", "--out", str(out)])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [f"error: no samples in the timed code (2 repetitions, 0.08 s): profile for longer with a "
                     f"larger --duration; what was recorded is in {out}"]


def test_a_torch_profile_without_an_operator_in_the_timed_code_is_an_error_naming_py_spy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "p"
    monkeypatch.setattr(profiling, "profile_torch",
                        lambda req, folder: profiling.ProfileResult(folder, "torch", 5, 0.5, top_ops=()))
    result = CliRunner().invoke(cli, ["profile", "lstm_cell", "py", "cpu", "--profiler", "torch", "--out", str(out)])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [f"error: the torch profiler recorded no operator in the timed code (5 repetitions, 0.5 s): its "
                     f"work is not in torch's operators, which --profiler py-spy does not need; what was recorded is "
                     f"in {out}"]


def _profiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timed: int) -> str:
    """`profile`'s output for a stand-in profile of `timed` timed samples, a quarter of them in one frame
    and one operator, half in that operator or below it."""
    frame = FrameStat("f (a.py)", "f", "a.py", False, timed // 4, 25.0)
    top = TopFrames({"total": timed + 10, "timed": timed, "setup": 10, "startup": 0}, (frame,), (frame,),
                    (OpStat("add_", timed // 4, 25.0, timed // 2, 50.0),))
    monkeypatch.setattr(profiling, "profile_py_spy",
                        lambda req, folder: profiling.ProfileResult(folder, "py-spy", 4, 0.4, top=top))
    result = CliRunner().invoke(cli, ["profile", "lstm_cell", "py", "cpu", "--out", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    return result.output


def test_each_share_comes_with_its_interval_and_a_thin_profile_is_warned_of(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    output = _profiled(tmp_path, monkeypatch, 40)
    assert ("warning: only 40 timed samples: a 50% share is known to 35-65% in the tables and the flame graph; "
            "profile for longer (--duration) for finer shares") in " ".join(output.split())
    assert "│ 25.0 [14, 40] │ 50.0 [35, 65] │ add_" in output
    assert "│ 25.0 [14, 40] │ 10 " in output


def test_a_profile_of_fifty_timed_samples_is_not_warned_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = _profiled(tmp_path, monkeypatch, 120)
    assert "timed samples: a 50% share" not in output
    assert "│ 25.0 [18, 33] │ 50.0 [41, 59] │ add_" in output

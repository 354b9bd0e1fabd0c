"""`benchctl profile` whose profiler caught no sample in the timed code: one line saying so, not empty tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from benchctl.cli import cli
from benchctl.profile import profilers as profiling
from benchctl.profile.stacks import TopFrames


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

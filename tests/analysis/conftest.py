"""What the analysis tests share: `written`, a synthetic history on disk (tests/fixtures/history_runs.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from history_runs import write_history  # noqa: E402


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The results folder of a history of one cell across a git repository's commits, and the commits."""
    base = tmp_path_factory.mktemp("history")
    shas = write_history(base / "results", base / "repo")
    return base / "results", shas

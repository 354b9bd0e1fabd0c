"""Shared fixtures: the built-in operators, and folders of test-only operators."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchctl import registry

REPO = Path(__file__).resolve().parent.parent
FIXTURE_OPS = Path(__file__).resolve().parent / "fixtures" / "ops"


@pytest.fixture(scope="session")
def builtin_ops() -> dict:
    return registry.discover()


@pytest.fixture(scope="session")
def fixture_ops() -> dict:
    """Test-only operators: a wrong implementation, one that returns zeros, one that segfaults, one
    that hangs, one that allocates past any limit (see tests/fixtures/ops)."""
    return registry.discover([FIXTURE_OPS])


@pytest.fixture(scope="session")
def fixture_ops_dir() -> Path:
    return FIXTURE_OPS


@pytest.fixture(scope="session")
def example_ops_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's example operator, copied outside the repository as a user would (once: an
    operator name can be registered from one file per process)."""
    folder = tmp_path_factory.mktemp("user") / "my_ops"
    folder.mkdir()
    shutil.copy(REPO / "examples" / "ops" / "scale_shift.py", folder / "scale_shift.py")
    return folder

"""Shared fixtures: the built-in operators, folders of test-only operators, torch's TF32 switches."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch

from benchctl.ops import registry

# Every Ray a test starts listens on 127.0.0.1 only (Ray reads this when it is imported).
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
# No `benchctl run` a test starts waits for a slow machine (run --settle): a test's time must not hang on
# the VM's speed; the wait itself is tested with a fake canary (tests/machine/test_canary.py).
os.environ["BENCHCTL_SETTLE"] = "0"

REPO = Path(__file__).resolve().parent.parent
FIXTURE_OPS = Path(__file__).resolve().parent / "fixtures" / "ops"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `gpu` skip, saying why, where CUDA cannot run; on a GPU machine they run."""
    reason = registry.cuda_device_reason()
    if reason:
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=f"needs a GPU: {reason}"))


@pytest.fixture(scope="session")
def builtin_ops() -> dict:
    return registry.discover()


@pytest.fixture(scope="session")
def fixture_ops() -> dict:
    """Test-only operators: a wrong implementation, one that returns zeros, one that segfaults, one
    that hangs, one that allocates past any limit (see tests/fixtures/ops)."""
    return registry.discover([FIXTURE_OPS])


@pytest.fixture(scope="session")
def output_ops() -> dict:
    """Operators with outputs of other kinds: a router returning top-k indices, one whose input requires no grad,
    and one written into a preallocated output (see tests/fixtures/output_ops)."""
    return registry.discover([FIXTURE_OPS.parent / "output_ops"])


@pytest.fixture(scope="session")
def fixture_ops_dir() -> Path:
    return FIXTURE_OPS


@pytest.fixture(scope="session")
def example_ops_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fuller example operator (examples/ops/scale_shift.py), copied outside the repository as a
    user would (once: an operator name can be registered from one file per process)."""
    folder = tmp_path_factory.mktemp("user") / "my_ops"
    folder.mkdir()
    shutil.copy(REPO / "examples" / "ops" / "scale_shift.py", folder / "scale_shift.py")
    return folder


@pytest.fixture
def tf32():
    """Sets torch's two TF32 switches for one test; torch's own values come back afterwards."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32

    def set_(matmul: bool, conv: bool) -> None:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, conv
    yield set_
    set_(*saved)

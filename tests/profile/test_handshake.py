"""The profile child's and py-spy's readiness (benchctl.profile.handshake), with stand-in py-spys whose output
is known."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchctl.errors import BenchError
from benchctl.profile import handshake


def _spy(tmp_path: Path, name: str, script: str) -> tuple[subprocess.Popen[bytes], Path]:
    """A stand-in py-spy running `script`, its standard output in a file as the real one's is kept."""
    said = tmp_path / f"{name}.said"
    with open(said, "w") as out:
        return subprocess.Popen([sys.executable, "-c", script], stdout=out), said


ATTACHES = ("import time; time.sleep(0.3); print('py-spy> Sampling process 100 times a second.', flush=True); "
            "time.sleep(60)")


def test_the_loop_waits_until_py_spy_says_it_samples(tmp_path: Path) -> None:
    slow, said = _spy(tmp_path, "slow", ATTACHES)
    try:
        handshake.wait_attached(slow, said)
        assert handshake.ATTACHED in said.read_text() and slow.poll() is None  # said so, still sampling
    finally:
        slow.kill()
        slow.wait()


def test_the_loop_goes_on_once_py_spy_has_ended(tmp_path: Path) -> None:
    failed, said = _spy(tmp_path, "failed", "import sys; sys.exit(1)")  # its stderr says why
    handshake.wait_attached(failed, said)
    assert failed.poll() == 1 and handshake.ATTACHED not in said.read_text()


def test_a_py_spy_that_never_says_it_samples_is_a_one_line_error(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handshake, "ATTACH_TIMEOUT_S", 0.2)
    silent, said = _spy(tmp_path, "silent", "import time; time.sleep(60)")
    try:
        with pytest.raises(BenchError, match=r"^py-spy did not attach within 0.2 s$"):
            handshake.wait_attached(silent, said)
    finally:
        silent.kill()
        silent.wait()

"""The profile child's and py-spy's signals that each is ready, so the profiled loop starts once py-spy samples
it: the child says its cell is built (the `ready` file: imports, inputs and the first call stay out of the
profile), the parent attaches py-spy, py-spy says it samples (ATTACHED, on its standard output, once it has
read the symbols of the child's libraries), and the parent says go (the `go` file).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from benchctl.errors import BenchError

ATTACHED = "Sampling process"  # what `py-spy record` prints once it has attached
ATTACH_TIMEOUT_S = 60.0  # about 0.5 s for torch's libraries alone; far longer on a busy machine
BUILD_GRACE_S = 1800  # generous: the child may first compile an extension
POLL_S = 0.02


def wait_ready(child: subprocess.Popen[bytes], ready: Path) -> None:
    """Until the child has built its cell, or has ended (its summary then says why)."""
    deadline = time.monotonic() + BUILD_GRACE_S
    while not ready.exists():
        if child.poll() is not None or time.monotonic() > deadline:
            return
        time.sleep(POLL_S)


def wait_attached(spy: subprocess.Popen[bytes], said: Path) -> None:
    """Until py-spy says it samples (ATTACHED in its output file) or has ended (its stderr then says why)."""
    deadline = time.monotonic() + ATTACH_TIMEOUT_S
    while spy.poll() is None and ATTACHED not in said.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise BenchError(f"py-spy did not attach within {ATTACH_TIMEOUT_S:g} s")
        time.sleep(POLL_S)


def wait_for_go(ready: Path, go: Path) -> None:
    """(In the child.) Say the cell is built, then wait for the parent's go; goes on alone after twice the time
    py-spy is given to attach (the parent has then given up)."""
    ready.touch()
    deadline = time.monotonic() + 2 * ATTACH_TIMEOUT_S
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(POLL_S / 2)

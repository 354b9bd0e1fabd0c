"""The command line and environment that start a Python child running exactly this benchctl.

`python -m benchctl...` puts the working directory first on `sys.path`, so a child started from a
folder that holds another `benchctl/` (a second checkout, a git worktree beside an installed wheel)
would import that one while its parent runs this one. `-P` leaves the working directory out, and the
folder this benchctl was imported from goes first on PYTHONPATH.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[1]  # the folder that holds this benchctl/


def command(*args: str) -> list[str]:
    """`python -P ARGS`, with this interpreter."""
    return [sys.executable, "-P", *args]


def module_command(module: str, *args: str) -> list[str]:
    """`python -P -m MODULE ARGS`, with this interpreter."""
    return command("-m", module, *args)


def reply_channel(buffering: int = -1) -> TextIO:
    """In a child: the stdout its parent reads replies from, kept apart. Everything else printed to stdout
    (a compiler's output, the measured code's prints) goes to stderr from here on, never onto a reply line."""
    proto = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=buffering)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return proto


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment, with this benchctl's folder first on PYTHONPATH."""
    env = {**os.environ, **(extra or {})}
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != ROOT]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *rest])
    return env

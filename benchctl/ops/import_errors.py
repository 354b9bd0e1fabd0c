"""What a failed import of an operator file says, in one line: the error and the line of the file it came
from, or torch.library's refusal of a second TORCH_LIBRARY block, naming both files."""

from __future__ import annotations

import re
import traceback
from pathlib import Path

COLLISION = re.compile(r"register the namespace (\S+?);.*registered at (.+?):\d+; latest registration was "
                       r"registered at (.+?):\d+", re.S)


def described(exc: Exception, source: Path) -> str:
    """`SyntaxError at line 3: invalid syntax`: the error and the line of the operator file it came from."""
    line = exc.lineno if isinstance(exc, SyntaxError) else None
    if line is None:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == source]
        line = frames[-1].lineno if frames else None
    message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    where = f" at line {line}" if line else ""
    return f"{type(exc).__name__}{where}: {message}" if message else f"{type(exc).__name__}{where}"


def collision(message: str) -> str | None:
    """torch.library's refusal of a second TORCH_LIBRARY block, as one line naming both files."""
    found = COLLISION.search(message)
    if not found:
        return None
    namespace, first, second = found.groups()
    return (f"torch.library namespace {namespace} is defined by two operator files, {first} and {second}: "
            "give each its own namespace, or ask for one of them with --op")

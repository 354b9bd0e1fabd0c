"""Errors the CLI turns into one clear line: usage mistakes exit 2, failures exit 1; and the one line a
caught exception is recorded as."""

import traceback


class BenchError(Exception):
    """Something failed (a build, a missing tool, a regression): exit code 1."""

    exit_code = 1


class UsageError(BenchError):
    """The user asked for something that does not exist or cannot be: exit code 2."""

    exit_code = 2


def error_message(exc: BaseException) -> str:
    """The exception's own first line plus where it came from (never swallowed)."""
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    loc = f" ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})" if where else ""
    return f"{type(exc).__name__}: {first}{loc}"

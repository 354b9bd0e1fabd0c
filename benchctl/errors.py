"""Errors the CLI turns into one clear line: usage mistakes exit 2, failures exit 1; and the one line a
caught exception is recorded as."""

import re
import traceback

# A compiler's diagnostic (gcc, clang, nvcc, ptxas: "file.cpp:302:30: error: ..."), found below an exception's first
# line where that line is only a heading: torch's inductor raises "CppCompileError: C++ compile error", then the
# command line and some hundred lines of warnings before the one error that says why.
COMPILER_ERROR = re.compile(r"\berror\s*:")


class BenchError(Exception):
    """Something failed (a build, a missing tool, a regression): exit code 1."""

    exit_code = 1


class UsageError(BenchError):
    """The user asked for something that does not exist or cannot be: exit code 2."""

    exit_code = 2


def error_message(exc: BaseException) -> str:
    """The exception's own first line plus where it came from (never swallowed), and the first compiler error
    under it where there is one (its file named without its folder)."""
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    lines = str(exc).strip().splitlines() or [""]
    loc = f" ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})" if where else ""
    cause = next((line.strip() for line in lines[1:] if COMPILER_ERROR.search(line)), None)
    said = "" if cause is None else ": " + re.sub(r"^\S*/", "", cause)[:300]
    return f"{type(exc).__name__}: {lines[0][:300]}{loc}{said}"

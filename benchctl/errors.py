"""Errors the CLI turns into one clear line: usage mistakes exit 2, failures exit 1."""


class BenchError(Exception):
    """Something failed (a build, a missing tool, a regression): exit code 1."""

    exit_code = 1


class UsageError(BenchError):
    """The user asked for something that does not exist or cannot be: exit code 2."""

    exit_code = 2

"""What git says about the commits behind result rows: the commit a folder's code is at (with a dirty
flag), and, where the repository is at hand, the commits' order, dates and messages. Git is asked
directly (`git -C`); a folder outside any repository, or no git at all, gives nothing rather than an
error, since a row without its commit is still a measurement.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

TIMEOUT_S = 10


@dataclass(frozen=True)
class Commit:
    sha: str
    time: str  # committer date, ISO 8601
    subject: str


def git(folder: Path | str, *args: str) -> str | None:
    """`git -C folder args` stdout, stripped; None when git fails or is missing."""
    try:
        out = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def head(folder: Path | str) -> dict[str, Any]:
    """The code columns of a row whose code lives in `folder` (schema.py: code_sha, code_dirty, code_repo,
    code_time); empty when `folder` is not in a git repository."""
    top = git(folder, "rev-parse", "--show-toplevel")
    sha = git(folder, "rev-parse", "HEAD") if top else None
    if not top or not sha:
        return {}
    status = git(top, "status", "--porcelain", "--untracked-files=no")
    return {"code_sha": sha, "code_dirty": bool(status), "code_repo": top, "code_time": commit_time(top, sha)}


def commit_time(repo: Path | str, sha: str) -> str | None:
    stamp = git(repo, "show", "-s", "--format=%ct", sha)
    return datetime.fromtimestamp(int(stamp), timezone.utc).isoformat() if stamp and stamp.isdigit() else None


def describe(repo: Path | str, shas: Iterable[str]) -> dict[str, Commit]:
    """Date and subject of each commit the repository has (unknown ones are left out)."""
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    text = git(repo, "show", "-s", "--format=%H%x00%ct%x00%s", *wanted)
    if text is None:  # one unknown commit fails the lot: ask one at a time
        return {sha: c for sha in wanted for c in describe_one(repo, sha)}
    return {c.sha: c for c in map(_parsed, text.splitlines()) if c}


def describe_one(repo: Path | str, sha: str) -> list[Commit]:
    found = _parsed(git(repo, "show", "-s", "--format=%H%x00%ct%x00%s", sha) or "")
    return [found] if found else []


def _parsed(line: str) -> Commit | None:
    parts = line.split("\x00")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return Commit(parts[0], datetime.fromtimestamp(int(parts[1]), timezone.utc).isoformat(), parts[2])


def git_order(repo: Path | str, shas: Sequence[str]) -> dict[str, int]:
    """Each known commit's place in the repository's history (ancestors first, topological), for the
    commits among `shas`; a commit git does not know is left out."""
    text = git(repo, "rev-list", "--topo-order", "--reverse", "--all")
    if text is None:
        return {}
    wanted = set(shas)
    return {sha: i for i, sha in enumerate(text.splitlines()) if sha in wanted}

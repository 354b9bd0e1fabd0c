"""What `git bisect run` runs at each commit: measure the cell, judge it against the good commit, and exit
0 (good), 1 (bad) or 125 (skip). An unsure verdict is measured once more, then skipped, never guessed; so
is a commit where the cell cannot be measured at all. Each commit's verdict goes on a line of the bisect's
log. Run as `python -m benchctl.bisect.step SPEC`."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

from benchctl.bisect.measure import MeasureFailed, judged_at
from benchctl.bisect.spec import ABORT, BAD, GOOD, SKIP, Spec
from benchctl.results import commits
from benchctl.vocab import CommitVerdict

EXIT = {CommitVerdict.GOOD: GOOD, CommitVerdict.BAD: BAD}


def main(argv: list[str]) -> int:
    spec = Spec.load(argv[0])
    repo = Path.cwd()
    sha = commits.git(repo, "rev-parse", "HEAD") or "unknown"
    try:
        judged, tries = judged_at(spec, sha[:12], repo)
        verdict, summary = judged.verdict, judged.summary()
    except MeasureFailed as exc:
        verdict, summary, tries = CommitVerdict.FAILED, str(exc), 1
    spec.record(sha, verdict, tries, summary)
    return EXIT.get(verdict, SKIP)


def guarded(argv: list[str]) -> int:
    """main, but a step that breaks stops the bisect instead of exiting 1, which git would take for bad."""
    try:
        return main(argv)
    except Exception:
        traceback.print_exc()
        return ABORT


if __name__ == "__main__":
    sys.exit(guarded(sys.argv[1:]))

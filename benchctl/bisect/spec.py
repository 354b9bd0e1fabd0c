"""What a bisect measures and how it judges, written to a file for the step that `git bisect run` starts at
each commit (step.py), so every commit is measured with the same settings."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

# The exit codes `git bisect run` reads (git-bisect(1)).
GOOD, BAD, SKIP, ABORT = 0, 1, 125, 255  # 128 and up stop the bisect: a step that broke is no verdict
SPEC_FILE = "bisect.json"
LOG_FILE = "commits.jsonl"  # one line per commit measured: its verdict, and the change of each cell


@dataclass(frozen=True)
class Spec:
    """What a bisect measures at each commit: one operator's implementation on one device, and where."""
    op: str
    impl: str
    device: str
    work: str  # the folder measurements are written under
    passes: tuple[str, ...] = ()  # every pass when empty
    ops_dirs: tuple[str, ...] = ()
    run_args: tuple[str, ...] = ()  # further `benchctl run` options, the same at every commit
    threshold: float = 0.05
    alpha: float = 0.05
    # the cells BAD was judged slower (or broken) in, which every commit between is judged on (measure.cell_key);
    # empty until BAD is judged
    cells: tuple[str, ...] = ()
    # BAD's measurement (measured()), which a commit that GOOD's cannot decide is judged against; empty until then
    bad_run: str = ""

    @property
    def good_run(self) -> Path:
        """Where the good commit's measurement is (the folder of runs; its one run)."""
        return Path(self.work) / "good"

    def measured(self, label: str, attempt: int) -> Path:
        """Where a commit's `attempt`-th measurement is (a folder of runs)."""
        return Path(self.work) / f"{label}-{attempt}"

    @property
    def log(self) -> Path:
        return Path(self.work) / LOG_FILE

    def record(self, commit: str, verdict: str, tries: int, cells: str) -> None:
        """A commit's line in the log: its verdict, how many measurements it took, and each cell's change."""
        with open(self.log, "a") as log:
            log.write(json.dumps({"commit": commit, "verdict": verdict, "tries": tries, "cells": cells}) + "\n")

    def save(self) -> Path:
        path = Path(self.work) / SPEC_FILE
        path.write_text(json.dumps(asdict(self), indent=2))
        return path

    @staticmethod
    def load(path: Path | str) -> "Spec":
        data = json.loads(Path(path).read_text())
        return Spec(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

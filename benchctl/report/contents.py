"""What a report holds: a section per operator and target (its charts, its table, its failed cells) and the
run's environment. page.py builds it from the rows; render.py writes it as the pages."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from benchctl.analysis.run_notes import Note
from benchctl.report.fastest import Answer
from benchctl.report.profiles import ProfileEntry

Doing = Callable[[str], None]  # told each step of a page's build as it starts ("drawing the charts (2 of 21 done)")


def section_title(op: str, target: str, machine: str = "") -> str:
    """`hoconv2d / filter`, the operator alone for its only target (`op`), ` on <machine kind>` where the rows span
    several kinds."""
    return (op if target in ("op", "", "None") else f"{op} / {target}") + (f" on {machine}" if machine else "")


def unseen(step: str) -> None:
    """The steps of a build that nobody watches."""


@dataclass(frozen=True)
class Section:
    """One operator (and target): its charts, its table, its failed cells."""

    op: str
    target: str
    title: str
    baseline: str
    note: str  # why the baseline is not the one asked for, or ""
    figures: dict[str, list[Path]]  # kind (time / speedup / roofline) -> [png, svg]
    table: pd.DataFrame
    failures: pd.DataFrame
    absent: tuple[str, ...] = ()  # one line per device, or implementations on one, where nothing could run
    legend: tuple[str, ...] = ()  # lines under the table: what its marks and columns mean (tables.legend)
    fastest: tuple[Answer, ...] = ()  # the fastest implementation for each device and pass, at which sizes


@dataclass(frozen=True)
class Report:
    """The whole report: its sections, the run's environment and status counts, and the figures of the
    machine over the run."""

    out_dir: Path
    sections: list[Section]
    environment: list[dict[str, str]]
    statuses: dict[str, int]
    generated: str
    pages: list[Path] = field(default_factory=list)  # index.html and summary.md, once written
    superseded: int = 0  # cells measured again in a later run: only the latest is shown
    machine: list[Path] = field(default_factory=list)  # the memory bandwidth probes over the run [png, svg]
    load: list[Path] = field(default_factory=list)  # other processes' load and the canary over the run [png, svg]
    working_set: list[Path] = field(default_factory=list)  # each pass's GB/s against a copy of its size [png, svg]
    history: Path | None = None  # the history page of these cells across runs (report/history_page.py)
    profiles: list[ProfileEntry] = field(default_factory=list)  # `benchctl profile`'s of these operators
    notes: tuple[Note, ...] = ()  # what the numbers carry, the lines under `run`'s tables (analysis/run_notes.py)

    @property
    def figures(self) -> list[Path]:
        """Every chart file drawn for the report: the machine's, then each section's [png, svg] pairs."""
        return [*self.machine, *self.load, *self.working_set,
                *(p for s in self.sections for paths in s.figures.values() for p in paths)]

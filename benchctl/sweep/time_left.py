"""How long the rest of a sweep will take: what the progress bar and the log's cell lines say after the count
("about 4 min left"), and the seconds each cell took, kept in the run's metadata (`cell_s`) for the next.

A cell that cannot run here (no CUDA device, a failed build) finishes at once, and there can be more of them
than of the others (two thirds of the README's main job on a machine without a GPU), so only cells that run
are counted. A cell an earlier run under the same folder measured is expected to take what it took there
(the newest such run's median over its rounds); any other, what its series' last two cells say (the last,
grown by the power of the axis the two grew by), else the mean of its operator's finished cells on that
device, else of all finished cells. Each kind of guess is then scaled by what the cells finished so far
took over what it said of them: the machine may run slower than last time, and an operator not yet reached
may cost more than those before it. Re-measurements at the end of a sweep (`--remeasure`) are not counted:
which cells those are is known only once they ran.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Collection, Hashable, Iterable, Mapping, Sequence

from benchctl.ops.cells import Cell
from benchctl.results import storage

CELL_SECONDS = "cell_s"  # the run metadata's key: each cell's label -> the seconds each of its rounds took
RUNS_READ = 10  # the newest run folders read for what their cells took
GROWTH_MAX = 2.0  # the largest power of the axis a series' cell times are taken to grow by
MINUTE = 60.0
BEFORE, HERE = "before", "here"  # a guess from an earlier run, or from this run's finished cells


def taken_before(out: Path) -> dict[str, float]:
    """Each cell label's median seconds a round in the newest of the last RUNS_READ runs under `out` that has it
    (a run whose metadata cannot be read tells nothing: a guess needs none of it, and the sweep goes on)."""
    took: dict[str, float] = {}
    for run in storage.run_dirs(out)[-RUNS_READ:]:  # oldest first: a newer run overwrites
        try:
            said = storage.run_meta(run).get(CELL_SECONDS)
        except (OSError, ValueError):
            continue
        for label, seconds in (said if isinstance(said, dict) else {}).items():
            if seconds:
                took[label] = statistics.median(seconds)
    return took


class TimeLeft:
    """The seconds a sweep's unfinished cells will take. `planned` holds each cell as often as it runs (once a
    round); `runnable` the cells that can run here (None: all of them); `before` what cells took earlier."""

    def __init__(self, planned: Iterable[Cell], runnable: Collection[Cell] | None = None,
                 before: Mapping[str, float] | None = None) -> None:
        self._left = [c for c in planned if runnable is None or c in runnable]
        self._before = dict(before or {})
        self._series: dict[Hashable, list[tuple[float, float]]] = {}  # (axis value, seconds) of its last two
        self._kinds: dict[Hashable, list[float]] = {}
        self._all: list[float] = []
        self._said = {BEFORE: 0.0, HERE: 0.0}  # of the cells finished since a guess of the kind existed: what
        self._took = {BEFORE: 0.0, HERE: 0.0}  # it said, and what they took

    def finished(self, cell: Cell, seconds: float) -> None:
        """`cell` took `seconds` (a cell that cannot run here, or one run more often than planned, is ignored)."""
        if cell not in self._left:
            return
        self._left.remove(cell)
        guess = self._guess(cell)
        if guess is not None:
            self._said[guess[0]] += guess[1]
            self._took[guess[0]] += seconds
        self._series[cell.series_key] = [*self._series.get(cell.series_key, [])[-1:], (cell.axis_value, seconds)]
        self._kinds.setdefault((cell.op, cell.device), []).append(seconds)
        self._all.append(seconds)

    def seconds(self) -> float | None:
        """The unfinished cells' expected seconds; None while a cell has no guess (nothing like it done yet)."""
        guesses = [self._guess(cell) for cell in self._left]
        if None in guesses:
            return None
        return sum(seconds * self._scale(kind) for kind, seconds in guesses)

    def _guess(self, cell: Cell) -> tuple[str, float] | None:
        if cell.label() in self._before:
            return BEFORE, self._before[cell.label()]
        if cell.series_key in self._series:
            return HERE, _along(self._series[cell.series_key], cell.axis_value)
        if self._all:
            return HERE, statistics.fmean(self._kinds.get((cell.op, cell.device)) or self._all)
        return None

    def _scale(self, kind: str) -> float:
        return self._took[kind] / self._said[kind] if self._said[kind] else 1.0

    def text(self) -> str:
        """"about 4 min left", "under a minute left"; "" while nothing is known or once nothing is left."""
        left = self.seconds()
        if not left:
            return ""
        if left < MINUTE:
            return "under a minute left"
        if left < 90 * MINUTE:
            return f"about {left / MINUTE:.0f} min left"
        return f"about {left / (60 * MINUTE):.1f} h left"


def _along(done: Sequence[tuple[float, float]], value: float) -> float:
    """A series' cell at axis `value`, from its last two cells done: as the last, grown by the power of the
    axis the two grew by (between 0 and GROWTH_MAX: one noisy pair cannot make a series shrink or explode)."""
    (a1, t1), (a2, t2) = done[0], done[-1]
    if not 0 < a1 < a2 < value or t1 <= 0:
        return t2
    power = min(max(math.log(t2 / t1) / math.log(a2 / a1), 0.0), GROWTH_MAX)
    return t2 * (value / a2) ** power

"""How long the rest of a sweep will take, from the cells it has finished: what the progress bar and the log's
cell lines say after the count ("about 4 min left").

A cell that cannot run here (no CUDA device, a failed build) finishes at once, and there can be more of them
than of the others (two thirds of the README's main job on a machine without a GPU), so only cells that run
are counted, and cells of one kind take what that kind took: the last finished cell of the same series (its
operator, target, implementation, device and dtype: a series runs in ascending order, so the last is the
nearest size), else the mean of the operator's finished cells on that device, else of all finished cells.
Cells re-measured at the end of a sweep (`--remeasure`) are not in it: which cells those are is known only
once they ran.
"""

from __future__ import annotations

import statistics
from typing import Collection, Hashable, Iterable

from benchctl.ops.cells import Cell

MINUTE = 60.0


def _series(cell: Cell) -> Hashable:
    return cell.op, cell.target, cell.impl, cell.device, cell.dtype


def _kind(cell: Cell) -> Hashable:
    return cell.op, cell.device


class TimeLeft:
    """The seconds a sweep's unfinished cells will take, learned from its finished ones. `planned` holds each
    cell as often as it runs (once a round); `runnable` the cells that can run here (None: all of them)."""

    def __init__(self, planned: Iterable[Cell], runnable: Collection[Cell] | None = None) -> None:
        self._left = [c for c in planned if runnable is None or c in runnable]
        self._last: dict[Hashable, float] = {}
        self._kinds: dict[Hashable, list[float]] = {}
        self._all: list[float] = []

    def finished(self, cell: Cell, seconds: float) -> None:
        """`cell` took `seconds` (a cell that cannot run here, or one run more often than planned, is ignored)."""
        if cell not in self._left:
            return
        self._left.remove(cell)
        self._last[_series(cell)] = seconds
        self._kinds.setdefault(_kind(cell), []).append(seconds)
        self._all.append(seconds)

    def seconds(self) -> float | None:
        """The unfinished cells' expected seconds; None before any cell that runs has finished."""
        if not self._all:
            return None
        return sum(self._expected(cell) for cell in self._left)

    def _expected(self, cell: Cell) -> float:
        if _series(cell) in self._last:
            return self._last[_series(cell)]
        return statistics.fmean(self._kinds.get(_kind(cell)) or self._all)

    def text(self) -> str:
        """"about 4 min left", "under a minute left"; "" before anything is known or once nothing is left."""
        left = self.seconds()
        if not left:
            return ""
        if left < MINUTE:
            return "under a minute left"
        if left < 90 * MINUTE:
            return f"about {left / MINUTE:.0f} min left"
        return f"about {left / (60 * MINUTE):.1f} h left"

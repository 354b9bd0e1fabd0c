"""Drawing a page's figures: each `Job` builds one figure from its arguments and saves it (charts.save). A `Drawer`
runs a batch of jobs in worker processes, one per core, where the batch is large enough to be worth their start
(about 2 s each: a worker imports matplotlib and pandas afresh); else in this process.

Matplotlib draws a figure about three times to save it (its layout, the PNG, the SVG): 0.5-1 s a chart, some 25 s of a
report with a history page on a 2-core VM, most of the time `benchctl report` takes. The figures do not depend on one
another, so they draw side by side. Workers are started with `spawn`, never `fork`: the rows read from parquet hold
pyarrow's threads, and a forked child inherits their locks in whatever state they were.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from benchctl.report import charts

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MIN_JOBS = 6  # a smaller batch draws in this process: the workers' start would cost more than it saves


@dataclass(frozen=True)
class Job:
    """One figure: `draw(*args)` builds it (None: nothing to draw), saved at `stem` as PNG and SVG. `draw` is a
    module-level function, so a worker finds it by name; `args` travel to it pickled."""

    draw: Callable[..., "Figure | None"]
    args: tuple[Any, ...]
    stem: Path


def run(job: Job) -> list[Path]:
    """Build and save one figure; its [png, svg] paths, [] where there was nothing to draw."""
    figure = job.draw(*job.args)
    return [] if figure is None else charts.save(figure, job.stem)


def workers() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Drawer:
    """Draws batches of jobs, in a pool of `processes` workers (started at the first batch that needs them, kept
    for the next, shut down on leaving the `with`), or in this process where `processes` is under 2."""

    def __init__(self, processes: int = 0) -> None:
        self.processes = processes
        self._pool: Executor | None = None

    def __enter__(self) -> "Drawer":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def draw(self, jobs: Sequence[Job],
             told: Callable[[int, int], None] = lambda done, total: None) -> list[list[Path]]:
        """Each job's paths, in the jobs' order; `told(done, total)` before the first and as each figure is saved."""
        told(0, len(jobs))
        if self.processes < 2 or len(jobs) < MIN_JOBS:
            return [_told(run(job), i, len(jobs), told) for i, job in enumerate(jobs, start=1)]
        futures = {self._started().submit(run, job): i for i, job in enumerate(jobs)}
        paths: list[list[Path]] = [[] for _ in jobs]
        for done, future in enumerate(as_completed(futures), start=1):
            paths[futures[future]] = _told(future.result(), done, len(jobs), told)
        return paths

    def _started(self) -> Executor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("spawn"))
        return self._pool


def _told(paths: list[Path], done: int, total: int, told: Callable[[int, int], None]) -> list[Path]:
    told(done, total)
    return paths

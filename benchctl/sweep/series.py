"""A series: the cells that differ only in the swept axis, run in ascending order on one device. It is the
unit the fan-out executors (pool, ray) schedule, so "larger sizes are skipped after an OOM" and interleaved
rounds work on any node. `run_series` runs one wherever it is called: it builds the extensions the series
needs on that node, runs each cell in a worker subprocess (a segfault or hang ends only its cell) and
returns the rows, stamped with the facts of the machine that ran them.
"""

from __future__ import annotations

import atexit
import socket
import threading
from dataclasses import dataclass
from typing import Sequence

from benchctl.machine import allocator
from benchctl.machine.facts import environment
from benchctl.ops import registry
from benchctl.ops.cells import Cell
from benchctl.sweep.driver import Sweep
from benchctl.results.schema import Rows
from benchctl.sweep.executors import WorkerProcess
from benchctl.sweep.preflight import Preflight
from benchctl.sweep.worker_spec import WorkerSpec


def group(cells: Sequence[Cell], by_point: bool = False) -> list[tuple[Cell, ...]]:
    """The series of `cells`, in the order they first appear, each ascending along its axis. `by_point`
    (interleaved rounds): the series of every implementation of the same points in one job, so that each
    round measures the implementations of a point seconds apart, as the local executor does (the driver's
    rounds go through a job's cells in order: each point's implementations side by side)."""
    groups: dict[tuple, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(cell.point_series_key if by_point else cell.series_key, []).append(cell)
    return [tuple(sorted(g, key=lambda c: c.axis_value)) for g in groups.values()]


@dataclass(frozen=True)
class SeriesJob:
    """Everything a node needs to run one series; plain data, so it pickles to another machine."""

    cells: tuple[Cell, ...]
    spec: WorkerSpec  # the worker the node runs the series in (its allocator preloaded from the node's own path)
    rounds: int = 1
    node_id: str | None = None  # the node's name in the rows (Ray's node id; else the host)
    remeasure: int = 0  # times a noisy cell is measured again at the end of its series


class Collected:
    """A writer that keeps rows in memory, for the driver to write when the series returns."""

    def __init__(self) -> None:
        self.batches: list[Rows] = []

    def write(self, rows: Rows) -> Rows:
        self.batches.append(list(rows))
        return self.batches[-1]

    def withdraw(self, written: Rows) -> None:
        self.batches = [batch for batch in self.batches if batch is not written]

    @property
    def rows(self) -> Rows:
        return [row for batch in self.batches for row in batch]


_WORKERS: dict[str, WorkerProcess] = {}
_LOCK = threading.Lock()


def _worker(job: SeriesJob) -> WorkerProcess:
    """A worker process for the job's settings, kept for the next series with the same ones: starting
    one (importing torch) costs a second or more, as much as a small series takes."""
    key = job.spec.key()
    with _LOCK:
        if key not in _WORKERS:
            _WORKERS[key] = WorkerProcess(job.spec)
        return _WORKERS[key]


@atexit.register
def close_workers() -> None:
    with _LOCK:
        for worker in _WORKERS.values():
            worker.close()
        _WORKERS.clear()


def run_series(job: SeriesJob) -> Rows:
    registry.discover(job.spec.ops_dirs, sorted({cell.op for cell in job.cells}))
    node = job.node_id or socket.gethostname()
    preflight = Preflight(job.cells)
    preflight.build_extensions(lambda message: None)  # built here: this node's compiler and GPU arch
    blocked = {key: f"{reason} (on node {node})" for key, reason in preflight.build_failures.items()}
    try:
        allocator.library(job.spec.allocator)
    except allocator.AllocatorMissing as exc:
        blocked.update({(c.op, c.impl, c.device): f"{exc} (on node {node})" for c in job.cells})
    env = {**environment(), "node_id": node, **({"threads": job.spec.threads} if job.spec.threads else {})}
    out = Collected()
    Sweep(job.cells, _worker(job), out, env, blocked=blocked, rounds=job.rounds, remeasure=job.remeasure).run()
    return out.rows

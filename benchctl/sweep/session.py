"""The session of one sweep: its run folder, the signals that stop it, the state it ends in; inside it, cells
go through an executor in interleaved rounds, and rows are stamped with the environment and written as each
cell finishes. After an out-of-memory cell, the larger sizes of the same series are recorded `skipped`.
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from benchctl.ops import registry
from benchctl.ops.cells import Cell
from benchctl.results.schema import Status
from benchctl.machine.facts import environment, memory_setup
from benchctl.results.storage import RunWriter, new_run_id
from benchctl.sweep.executors import Executor, Rows, failure_rows
from benchctl.sweep.plan import Plan
from benchctl.sweep.rounds import all_ok, merge


def series_key(cell: Cell, axis: str) -> tuple:
    """Cells that differ only in the swept axis value form one series."""
    others = {k: v for k, v in cell.params.items() if k != axis}
    return (cell.op, cell.target, cell.impl, cell.device, cell.dtype, json.dumps(others, sort_keys=True))


@dataclass
class Sweep:
    """Drives the cells through an executor and into a RunWriter, in `rounds` interleaved rounds.

    A cell's rows are written once its last round is done; a cell that fails (crash, timeout, oom,
    unavailable) is written at once and not run again. Interrupted, every cell with a round done is
    written from the rounds it has. `on_done` follows each measurement (a round of a cell), with no
    rows for a round a failed cell skips.
    """

    cells: Sequence[Cell]
    executor: Executor
    writer: RunWriter
    env: dict[str, Any]
    on_start: Callable[[Cell], None] = lambda cell: None
    on_done: Callable[[Cell, Rows], None] = lambda cell, rows: None
    # (op, impl, device) -> why it cannot run (e.g. its extension failed to build)
    blocked: dict[tuple[str, str, str], str] = field(default_factory=dict)
    rounds: int = 1
    _skip: dict[tuple, str] = field(default_factory=dict)

    def run(self) -> None:
        measured: dict[int, list[Rows]] = {i: [] for i in range(len(self.cells))}
        try:
            for r in range(self.rounds):
                for i, cell in enumerate(self.cells):
                    if i not in measured:  # failed in an earlier round
                        self.on_done(cell, [])
                        continue
                    self.on_start(cell)
                    rows = self._measure(cell)
                    measured[i].append(rows)
                    self.on_done(cell, stamp(rows, self.env))
                    if r == self.rounds - 1 or not all_ok(rows):
                        self._write(measured.pop(i))
        finally:
            for rounds_rows in measured.values():
                if rounds_rows:
                    self._write(rounds_rows)

    def _measure(self, cell: Cell) -> Rows:
        axis = registry.get(cell.op).axis
        key = series_key(cell, axis)
        rows = self._rows(cell, key)
        if any(r.get("status") == Status.OOM for r in rows):
            self._skip[key] = f"skipped: an earlier {axis}={cell.params.get(axis)} ran out of memory"
        return rows

    def _write(self, rounds_rows: list[Rows]) -> None:
        self.writer.write(stamp(merge(rounds_rows), self.env))

    def _rows(self, cell: Cell, key: tuple) -> Rows:
        blocked = self.blocked.get((cell.op, cell.impl, cell.device))
        if blocked:
            return failure_rows(cell, Status.UNAVAILABLE, blocked)
        if key in self._skip:
            return failure_rows(cell, Status.SKIPPED, self._skip[key])
        return self.executor.run(cell)


def stamp(rows: Iterable[dict[str, Any]], env: dict[str, Any]) -> Rows:
    """The environment facts and the time on every row (a row's own facts, e.g. threads, win)."""
    now = datetime.now(timezone.utc).isoformat()
    return [{**env, **{k: v for k, v in r.items() if v is not None}, "timestamp": now} for r in rows]


class Interrupted(Exception):
    """The sweep was stopped by SIGINT or SIGTERM; every finished cell is kept."""


@dataclass
class Session:
    """One run of a plan: its folder, the signals that stop it, and the state it ends in. Every way out
    marks run.json: `complete`, `interrupted` (Ctrl-C, SIGTERM) or `failed` (with the reason)."""

    plan: Plan
    writer: RunWriter
    blocked: dict[tuple[str, str, str], str] = field(default_factory=dict)

    @staticmethod
    def open(plan: Plan, out: Path, blocked: dict[tuple[str, str, str], str] | None = None,
             **facts: Any) -> "Session":
        """A new run folder under `out`; `facts` (e.g. busy_cores_at_start) go into run.json."""
        meta = {"environment": environment(), "memory": memory_setup(), **plan.meta(), **facts}
        return Session(plan, RunWriter(out, new_run_id(), meta), dict(blocked or {}))

    def run(self, on_start: Callable[[Cell], None] = lambda cell: None,
            on_done: Callable[[Cell, Rows], None] = lambda cell, rows: None) -> None:
        _stop_on_signals()
        executor = self.plan.executor()
        env = {**environment(), **({"threads": self.plan.threads} if self.plan.threads else {})}
        try:
            Sweep(self.plan.cells, executor, self.writer, env, on_start=on_start, on_done=on_done,
                  blocked=self.blocked, rounds=self.plan.rounds).run()
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, lambda *_: os._exit(130))  # a second Ctrl-C exits at once
            self.writer.finish("interrupted")
            raise Interrupted(f"interrupted: {self.writer.parts} finished cell(s) kept in {self.writer.dir}") from None
        except BaseException as exc:  # no way out of the sweep leaves the run marked running
            self.writer.finish("failed", reason=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            executor.close()
        self.writer.finish("complete")


def _stop_on_signals() -> None:
    """SIGINT and SIGTERM both stop the sweep cleanly. SIGINT is set explicitly because a process
    started in the background by a non-interactive shell inherits it ignored."""
    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

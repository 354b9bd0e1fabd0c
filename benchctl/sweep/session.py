"""The session of one sweep: its run folder, the signals that stop it, the state it ends in; inside it, cells
go through an executor in interleaved rounds, and rows are stamped with the environment and written as each
cell finishes. After an out-of-memory cell, the larger sizes of the same series are recorded `skipped`.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import torch

from benchctl.machine import canary, load
from benchctl.machine.facts import environment, memory_setup
from benchctl.measure.calibrate import calibration_path
from benchctl.ops.cells import Cell
from benchctl.results import guard
from benchctl.results.storage import RunWriter, new_run_id
from benchctl.results.schema import BUSY_WARN_CORES, CELL_COLUMNS, FAST_CANARY, SLOW_PHASE, Rows
from benchctl.sweep.cluster import RayCluster
from benchctl.sweep.driver import Sweep
from benchctl.sweep.plan import Plan
from benchctl.sweep.pool import Pool
from benchctl.sweep.series import group
from benchctl.sweep.time_left import CELL_SECONDS
from benchctl.vocab import RunState


@dataclass(frozen=True)
class Settled:
    """How one wait for the machine ended: the seconds it took, the canary's last median over its calibrated time
    (None: no calibration), and the cores other work kept busy in its last readings (None: unknown); `slow` or
    `busy` where it ran out of --settle's budget with the machine so; `fast` where the canary read far faster than
    calibrated (the calibration ran in a slow phase)."""

    waited_s: float
    canary_ratio: float | None
    other_cores: float | None

    @property
    def slow(self) -> bool:
        return self.canary_ratio is not None and self.canary_ratio > 1 + SLOW_PHASE

    @property
    def busy(self) -> bool:
        return self.other_cores is not None and self.other_cores >= BUSY_WARN_CORES

    @property
    def fast(self) -> bool:
        return self.canary_ratio is not None and self.canary_ratio < FAST_CANARY


class Interrupted(Exception):
    """The sweep was stopped by SIGINT or SIGTERM; every finished cell is kept."""


def _environment(plan: Plan) -> dict[str, Any]:
    """The machine's facts as the run's cells see them: torch's threads are the run's `--threads` where given (the
    metadata of a `--threads 1` run said 2, this process's count)."""
    return {**environment(), **({"threads": plan.threads} if plan.threads else {})}


@dataclass
class Session:
    """One run of a plan: its folder, the signals that stop it, and the state it ends in. Every way out
    marks the run's metadata: `complete`, `interrupted` (Ctrl-C, SIGTERM) or `failed` (with the reason)."""

    plan: Plan
    writer: RunWriter
    blocked: dict[tuple[str, str, str], str] = field(default_factory=dict)
    fanout: Pool | RayCluster | None = None  # started by the caller before the run folder exists

    @staticmethod
    def open(plan: Plan, out: Path, blocked: dict[tuple[str, str, str], str] | None = None,
             fanout: Pool | RayCluster | None = None, **facts: Any) -> "Session":
        """A new run folder under `out`; `facts` (e.g. busy_cores_at_start) go into its metadata."""
        meta = {"environment": _environment(plan), "memory": memory_setup(), **plan.meta(), **facts}
        writer = RunWriter(out, new_run_id(), meta)
        writer.guard.watch(calibration_path())  # its peaks set the floors of this run's re-checks and every later run's
        return Session(plan, writer, dict(blocked or {}), fanout)

    def run(self, on_start: Callable[[Cell], None] = lambda cell: None,
            on_done: Callable[[Cell, Rows], None] = lambda cell, rows: None,
            on_wait: Callable[[float], None] = lambda ratio: None,
            on_settled: Callable[[Settled], None] = lambda wait: None) -> None:
        """The sweep, with the other processes' load sampled all through it into the metadata (`timeline`);
        `on_wait` hears each slow canary while the sweep waits for the machine (its ratio to calibrated), and
        `on_settled` how each wait that took time ended."""
        timeline = load.Timeline()
        self.writer.meta["timeline_started"] = datetime.now(timezone.utc).isoformat()
        self.writer.meta["timeline"] = timeline.samples  # written with the metadata at the end, as it stands
        self.writer.meta["settled"] = []  # each wait for the machine to return to speed
        with timeline:
            self._run(on_start, on_done, lambda: self.settle(on_wait, on_settled))

    def settle(self, on_wait: Callable[[float], None] = lambda ratio: None,
               on_settled: Callable[[Settled], None] = lambda wait: None) -> None:
        """Waits for other work to leave the machine (machine/load.py), then for it to return to its calibrated
        speed, within what is left of plan.settle (a wait that ends with the machine still busy or slow has
        spent it); the wait goes into the metadata, and to `on_settled` where it took a second or more, or found the
        machine far faster than calibrated."""
        threads = self.plan.threads or torch.get_num_threads()  # the passes', which the canary is read on
        calibrated = canary.calibrated_s(self.plan.settings().peaks.get("cpu", {}), threads)
        waits = self.writer.meta["settled"]
        left = self.plan.settle - sum(w["waited_s"] for w in waits)
        if left <= 0:
            return
        busy, quiet_s = load.wait_for_quiet(left)
        ratio, waited = canary.wait_for_speed(calibrated, left - quiet_s, on_wait, lambda: canary.canary_on(threads)) \
            if calibrated else (None, 0.0)
        wait = Settled(quiet_s + waited, ratio, busy)
        waits.append({"at": datetime.now(timezone.utc).isoformat(), **asdict(wait)})
        if wait.waited_s >= 1 or wait.fast:
            on_settled(wait)

    def _run(self, on_start: Callable[[Cell], None], on_done: Callable[[Cell, Rows], None],
             settle: Callable[[], None]) -> None:
        _stop_on_signals()
        try:
            if self.fanout is None:
                self._run_here(on_start, on_done, settle)
            else:
                self._fan_out(self.fanout, on_done)
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, lambda *_: os._exit(130))  # a second Ctrl-C exits at once
            self._finish(RunState.INTERRUPTED)
            raise Interrupted(f"interrupted: {self.writer.parts} finished cell(s) kept in {self.writer.dir}") from None
        except BaseException as exc:  # no way out of the sweep leaves the run marked running
            self._finish(RunState.FAILED, reason=f"{type(exc).__name__}: {exc}")
            raise
        self._finish()

    def _finish(self, state: RunState = RunState.COMPLETE, reason: str | None = None) -> None:
        """The run's metadata closed, with the stretch of it other work kept cores busy (`busy_stretch`: the
        median busy cores then and the share of the run, machine/load.py; None for a quiet run). A complete
        run's parts (one per cell or series) become one file: the README's main job wrote 142, which every
        later report, compare, history and run's look at the runs before it read in 0.51 s, and 0.008 s merged."""
        self.writer.meta["busy_stretch"] = load.busy_stretch(self.writer.meta["timeline"])
        self.writer.finish(state, reason, compact=state == RunState.COMPLETE)

    def _run_here(self, on_start: Callable[[Cell], None], on_done: Callable[[Cell, Rows], None],
                  settle: Callable[[], None]) -> None:
        # the first cells wait for a quiet machine at speed as a re-measured one does: right after `env
        # --calibrate` (the README's main job) the 2-core VM ran grid_sample's first cell 1.7-2.0x slower than
        # in runs started later (docs/measuring.md, "Slow phases")
        settle()
        executor = self.plan.local_executor()
        env = _environment(self.plan)
        on_start, on_done = self._timed(on_start, on_done)
        try:
            Sweep(self.plan.cells, executor, self.writer, env, on_start=on_start, on_done=on_done,
                  blocked=self.blocked, rounds=self.plan.total_rounds, remeasure=self.plan.remeasure,
                  processes=self.plan.processes, recheck_above=self.plan.recheck_above,
                  settle=settle, look=self.writer.look).run()
        finally:
            executor.close()

    def _timed(self, on_start: Callable[[Cell], None], on_done: Callable[[Cell, Rows], None]
               ) -> tuple[Callable[[Cell], None], Callable[[Cell, Rows], None]]:
        """`on_start` and `on_done`, noting in the metadata (time_left.CELL_SECONDS) the seconds between them: what
        each round of a cell took, for the next run's estimate of its time left (a re-measurement is not noted)."""
        took, started = self.writer.meta.setdefault(CELL_SECONDS, {}), {}

        def start(cell: Cell) -> None:
            started[cell] = time.monotonic()
            on_start(cell)

        def done(cell: Cell, rows: Rows) -> None:
            if cell in started:
                took.setdefault(cell.label(), []).append(round(time.monotonic() - started.pop(cell), 3))
            on_done(cell, rows)
        return start, done

    def _fan_out(self, fanout: Pool | RayCluster, on_done: Callable[[Cell, Rows], None]) -> None:
        """Series run where the executor puts them, and each node builds and judges availability for
        itself; rows come back stamped by the machine that ran them and are written here, a part a series."""
        def deliver(series: tuple[Cell, ...], rows: Rows) -> None:
            found = self.writer.look(during=", ".join(cell.label() for cell in series))
            if found:
                rows = guard.changed_rows(rows, found)
            self.writer.write(rows)
            for cell in series:
                mine = [r for r in rows if _same_cell(r, cell)]
                for _ in range(self.plan.rounds):
                    on_done(cell, mine)

        try:
            fanout.run(group(self.plan.cells, by_point=self.plan.rounds > 1), deliver)
        finally:
            fanout.close()


def _same_cell(row: dict[str, Any], cell: Cell) -> bool:
    return tuple(row.get(c) for c in CELL_COLUMNS) == cell.identity


def _stop_on_signals() -> None:
    """SIGINT and SIGTERM both stop the sweep cleanly. SIGINT is set explicitly because a process
    started in the background by a non-interactive shell inherits it ignored. Only the main thread
    can take signals; a session run from another thread leaves them as they are."""
    def on_signal(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

"""Drives cells through one executor in interleaved rounds: rows are stamped with the environment and
written as each cell finishes. After an out-of-memory cell, the larger sizes of the same series are
recorded `skipped`. A cell whose median did not settle (noisy), that the machine disturbed (too few
clean samples: measure/interference.py), that ran while the machine was slow (machine/canary.py), or beside
other work (`other_cores`: machine/load.py), is measured again at the end of the sweep, up to `remeasure`
times, when whatever disturbed it may have passed (such a cell first waits for the machine to be quiet and at
speed: `settle`); it keeps the flag only if it never settles. A cell whose rounds split into two modes (a slow
phase of the machine took one process's turn) is measured again too, one more round in each process, pooled
with the rounds it has, where a round over 10% slower than another of its process is set aside
(measure/pooling.py). A time too good to keep unexamined (below its floor, or far faster than the reference) is
re-checked strictly last, on the rows the sweep would keep (recheck.py). The session runs it on this machine; a
series job runs it on whichever node has it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Protocol, Sequence

from benchctl.measure.gate import GATE_COLUMNS
from benchctl.measure.result import PassResult, Results
from benchctl.measure.stats import ci_half_width, join_messages
from benchctl.ops import provenance
from benchctl.ops.cells import Cell
from benchctl.results import guard
from benchctl.results.schema import FIRST_CALL_COLUMNS, SPEEDUP_LIMIT, Rows, beside_work, left_alone, slow_machine
from benchctl.vocab import Status
from benchctl.sweep import recheck
from benchctl.sweep.executors import Executor, failed
from benchctl.sweep.rounds import all_ok, merge


class Writer(Protocol):
    def write(self, rows: Rows) -> Any: ...  # a handle on what it wrote

    def withdraw(self, written: Any) -> None: ...  # rows written before, now superseded


@dataclass
class Held:
    """A cell's results as written: a noisy cell's at once (so a kill keeps them), kept to be measured again."""

    results: Results
    written: Any  # the writer's handle on their rows, withdrawn once better ones are written
    rounds: list[Results] = field(default_factory=list)  # the rounds measured so far, each as it came


@dataclass
class Sweep:
    """Drives the cells through an executor and into a RunWriter, in `rounds` interleaved rounds.

    A cell's rows are written once its last round is done; a cell that fails (crash, timeout, oom,
    unavailable) is written at once and not run again. A noisy cell (one round only) is written at once
    too, and its rows replaced (written anew, the first withdrawn) when a re-measurement settles, or after
    the last, by the measurement whose median is known best; killed before that, the run keeps the first.
    Interrupted, every cell with a round done is written from what it has. `on_done`
    follows each measurement (a round of a cell), with no rows for a round a failed cell skips;
    re-measurements call `on_start` only.
    """

    cells: Sequence[Cell]
    executor: Executor
    writer: Writer
    env: dict[str, Any]
    on_start: Callable[[Cell], None] = lambda cell: None
    on_done: Callable[[Cell, Rows], None] = lambda cell, rows: None
    # (op, impl, device) -> why it cannot run (e.g. its extension failed to build)
    blocked: dict[tuple[str, str, str], str] = field(default_factory=dict)
    rounds: int = 1  # in all: run --rounds times --processes
    remeasure: int = 0  # times a noisy cell is measured again at the end (one round per process only)
    processes: int = 1  # the executor's worker processes (Replicas): a re-measurement asks each of them
    recheck_above: float = SPEEDUP_LIMIT  # a speedup over the reference above this is re-checked
    settle: Callable[[], None] = lambda: None  # waits for a busy or slow machine to be quiet and at speed
    # what changed the run folder while the cell named was measured (results/guard.py), put back
    look: Callable[[str], list[str]] = lambda during: []
    _skip: dict[tuple, str] = field(default_factory=dict)
    _written: dict[int, Held] = field(default_factory=dict)  # settled cells as written, for the re-check

    def run(self) -> None:
        measured: dict[int, list[Results]] = {i: [] for i in range(len(self.cells))}
        unsettled: dict[int, Held] = {}
        try:
            for r in range(self.rounds):
                for i, cell in enumerate(self.cells):
                    if i not in measured:  # failed in an earlier round
                        self.on_done(cell, [])
                        continue
                    self.on_start(cell)
                    results = self._measure(cell)
                    measured[i].append(results)
                    self.on_done(cell, stamp(results, self.env))
                    if r == self.rounds - 1 or not all_ok(results):
                        self._finish(i, measured.pop(i), unsettled)
            self._remeasure(unsettled)
            self._recheck(unsettled)
        finally:
            for rounds in measured.values():
                if rounds:
                    self.writer.write(stamp(merge(rounds), self.env))
            for held in unsettled.values():
                if any(r.remeasured for r in held.results):  # else the rows written are these
                    self._replace(held, [_never_settled(r) for r in held.results])

    def _finish(self, i: int, rounds: list[Results], unsettled: dict[int, Held]) -> None:
        merged = merge(rounds)
        if self.remeasure and self.rounds == self.processes and _unsettled(merged):
            results = [r.with_(remeasured=0) for r in merged]
            unsettled[i] = Held(results, self.writer.write(stamp(results, self.env)), rounds)
        else:
            self._written[i] = Held(merged, self.writer.write(stamp(merged, self.env)))

    def _recheck(self, unsettled: dict[int, Held]) -> None:
        """Cells below their floor or far faster than their reference, measured once more, strictly, after every
        re-measurement: those settled and those that never did (`unsettled`, as written so far), against the
        reference's rows as written, settled or not (a noisy reference left every speedup of its point
        unexamined)."""
        held_by_cell = {**self._written, **unsettled}
        references = {self.cells[i].point: {r.pass_: r for r in held.results}
                      for i, held in held_by_cell.items() if self.cells[i].is_reference}
        for i, held in held_by_cell.items():
            cell = self.cells[i]
            theirs = {} if cell.is_reference else references.get(cell.point, {})
            wanted = recheck.suspect_passes(held.results, theirs, self.recheck_above)
            if wanted:
                self.on_start(cell)
                again = merge([self._run(replace(cell, passes=wanted, checked=False, strict=True))])
                self._replace(held, recheck.judged(held.results, again, theirs, self.recheck_above))
                if i in unsettled and not _unsettled(held.results):  # e.g. found incorrect: nothing to settle
                    self._written[i] = unsettled.pop(i)

    def _replace(self, held: Held, results: Results) -> None:
        """`held`'s rows replaced by `results`', which it holds from now on (a later replacement withdraws them)."""
        written = self.writer.write(stamp(results, self.env))
        self.writer.withdraw(held.written)
        held.results, held.written = results, written

    def _remeasure(self, unsettled: dict[int, Held]) -> None:
        """Measure each noisy cell's unsettled passes again, up to `remeasure` times, without its gate (it
        passed it). A pass whose rounds split pools the new rounds with its own; any other keeps the first
        measurement that settles, else the one whose median is known best."""
        for attempt in range(1, self.remeasure + 1):
            for i in list(unsettled):
                self.on_start(self.cells[i])
                held = unsettled[i]
                if any(slow_machine(r) or beside_work(r) for r in held.results):
                    self.settle()
                wanted = tuple(r.pass_ for r in held.results if _unsettled([r]))
                again = replace(self.cells[i], passes=wanted, checked=True)
                fresh = [self._run(again) for _ in range(self.processes)]
                pooled = _pooled(held.rounds + fresh) if any(map(_split, held.results)) else {}
                held.results = _best_of(held.results, merge(fresh), pooled, attempt)
                held.rounds += fresh
                if not _unsettled(held.results):
                    self._replace(held, held.results)
                    self._written[i] = unsettled.pop(i)

    def _measure(self, cell: Cell) -> Results:
        axis, key = cell.axis, cell.series_key
        results = self._results(cell, key)
        if any(r.status == Status.OOM for r in results):
            self._skip[key] = f"skipped: an earlier {axis}={cell.params.get(axis)} ran out of memory"
        return results

    def _results(self, cell: Cell, key: tuple) -> Results:
        blocked = self.blocked.get((cell.op, cell.impl, cell.device))
        if blocked:
            return failed(cell, Status.UNAVAILABLE, blocked)
        if key in self._skip:
            return failed(cell, Status.SKIPPED, self._skip[key])
        return self._run(cell)

    def _run(self, cell: Cell) -> Results:
        """The cell measured by the executor, its passes an `error` where the run folder changed meanwhile
        (results/guard.py: only benchctl writes there, and it put back what it wrote)."""
        results = [r.with_(timestamp=_now()) for r in self.executor.run(cell)]  # when it was measured
        found = self.look(cell.label())
        return [r.with_(**guard.as_changed(r, found)) for r in results] if found else results


def noisy(results: Results) -> bool:
    """Some pass of the cell ran but its median did not settle, too few of its samples were clean, the
    machine was slower than calibrated (its canary), or other work kept cores busy while it was timed."""
    return any(r.ok and (r.noisy or not _undisturbed(r)) for r in results)


def _split(result: PassResult) -> bool:
    """Its rounds split into two modes (measure/pooling.py)."""
    return result.ok and result.mode_slow_s is not None


def _unsettled(results: Results) -> bool:
    """Some pass is noisy, or its rounds split: more rounds at the end of the sweep may settle it."""
    return noisy(results) or any(map(_split, results))


def _pooled(rounds: list[Results]) -> dict[str, PassResult]:
    """Each pass's rounds pooled, by pass, where every round of it ran."""
    return {r.pass_: r for r in merge(rounds) if r.ok}


def _never_settled(result: PassResult) -> PassResult:
    if not (noisy([result]) and result.remeasured):
        return result
    said = f"measured again {result.remeasured} time(s) late in the sweep, never settled"
    return result.with_(message=join_messages(result.message, said))


def _best_of(kept: Results, fresh: Results, pooled: dict[str, PassResult], attempt: int) -> Results:
    """Per pass: where its rounds split, all its rounds pooled; else the re-measurement where it ran and
    settled or narrowed the median's interval, else the result kept; every pass measured again says how
    often. A re-measurement keeps the gate's findings and what the first call compiled."""
    again = {r.pass_: r for r in fresh if r.ok}
    out = []
    for result in kept:
        if not _unsettled([result]):
            out.append(result)
            continue
        new, chosen = again.get(result.pass_), result
        if _split(result) and result.pass_ in pooled:
            chosen = pooled[result.pass_]
        elif new is not None and _better(new, result):
            chosen = new.keeping(result, (*GATE_COLUMNS, *FIRST_CALL_COLUMNS))
        out.append(chosen.with_(remeasured=attempt))
    return out


def _better(new: PassResult, kept: PassResult) -> bool:
    """The machine left `new` alone and not `kept`; or it treated both alike and `new`'s median is known
    more narrowly."""
    return (_undisturbed(new), -_spread(new)) > (_undisturbed(kept), -_spread(kept))


def _undisturbed(result: PassResult) -> bool:
    return left_alone(result) and not slow_machine(result)


def _spread(result: PassResult) -> float:
    """The confidence interval of a pass's median, relative to it."""
    return ci_half_width(result) if result.ci_hi_s is not None else float("inf")


def stamp(results: Iterable[PassResult], env: dict[str, Any]) -> Rows:
    """The rows to write: each result's columns with the environment facts, the measured code's commit and
    digests, and the time (a result's own facts win, e.g. threads, and the time it was measured: a row kept from
    a cell's first measurement and written again at the end of the sweep keeps it)."""
    now = _now()
    return [{**env, **provenance.code_facts(r.op), **provenance.cell_digests(r), "timestamp": now,
             **{k: v for k, v in r.items() if v is not None}} for r in results]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()

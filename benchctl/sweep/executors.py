"""Executors: where a cell runs. `InProcess` (tests, debugging) and `WorkerProcess` (the default: a
segfault, abort or hang in an implementation becomes a `crashed` / `timeout` row and a fresh worker
takes the next cell).

A worker's replies are signed (channel.py) and its rows' statistics recomputed here from their samples
(`restate`); a worker runs in a process group of its own, and every process in it (whatever the measured
code started) is ended with the worker, before the run is marked complete."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

from benchctl import interpreter
from benchctl.errors import BenchError
from benchctl.machine import oom
from benchctl.measure.execute import Settings, base_result, each_pass, run_cell
from benchctl.measure.result import PassResult, Results, UnknownColumn
from benchctl.ops import namespaces
from benchctl.ops.cells import Cell
from benchctl.results.schema import Row
from benchctl.vocab import Status
from benchctl.sweep import channel
from benchctl.sweep.worker_spec import WorkerSpec

# What a CUDA error says (torch raises AcceleratorError; an extension's check says "CUDA error: ..."). Most leave the
# process's CUDA context unusable (an illegal memory access, a device-side assert), and every later CUDA call in it
# fails with the same error: the next cell gets a fresh worker, so one broken kernel does not fail the cells after it.
CUDA_ERROR_MARKS = ("AcceleratorError", "CUDA error")
STDERR_TAIL_LINES = 20  # a crash's header, its Python stack (about a dozen frames deep) and the modules line
OOM_MARKERS = ("Cannot allocate memory", "Resource temporarily unavailable", "std::bad_alloc", "MemoryError")
START_S = 120  # seconds a worker may take to start (import torch, read its setup) before it is killed


class Executor(Protocol):
    def run(self, cell: Cell) -> Results: ...

    def close(self) -> None: ...


class InProcess:
    """Cells run in this process (tests, debugging: `run --in-process`). `start`: torch's settings as the process
    was readied, before any operator file was imported (measure/held.py `ready`), which each cell's are set back
    to, as a worker's are."""

    def __init__(self, settings: Settings, start: dict[str, Any] | None = None):
        self.settings, self.start = settings, start

    def run(self, cell: Cell) -> Results:
        return run_cell(cell, self.settings, start=self.start)

    def close(self) -> None:
        pass


@dataclass
class WorkerProcess:
    """One worker process at a time, restarted after a crash or a timeout, or after every cell with
    `fresh`: then no cell's timing depends on what ran before it in the same process (the allocator's
    state, for one: whether a large temporary reuses memory or faults in fresh pages)."""

    spec: WorkerSpec
    fresh: bool = False
    oom_counter: Path | None = field(default_factory=oom.counter_file)  # the cgroup's oom_kill count
    _oom_kills: int | None = field(default=None, repr=False)
    _proc: subprocess.Popen | None = field(default=None, repr=False)
    _stderr: Any = field(default=None, repr=False)
    _key: str = field(default="", repr=False)  # this worker's signing key (channel.py)
    _seq: int = field(default=0, repr=False)  # the number of the next reply
    _ops: set[str] = field(default_factory=set, repr=False)  # the operators the running worker has loaded
    _apart: set[frozenset[str]] | None = field(default=None, repr=False)

    def _start(self) -> subprocess.Popen:
        self._stderr = tempfile.TemporaryFile()
        # A new session: the terminal's Ctrl-C reaches the parent only, which decides what stops.
        # The worker imports this process's benchctl, whatever folder the run was started from.
        proc = subprocess.Popen(interpreter.module_command("benchctl.sweep.worker"), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=self._stderr, text=True, start_new_session=True,
                                env=interpreter.child_env(self.spec.process_env()))
        self._key, self._seq = channel.new_key(), 0
        proc.stdin.write(json.dumps(self.spec.setup(self._key)) + "\n")
        proc.stdin.flush()
        self._proc, self._ops = proc, set()
        line = self._read_line(timeout=START_S)
        if not line:  # None: no word in START_S; "": it ended (its setup failed)
            raise BenchError(f"worker failed to start: {self._failure(line is None, START_S)[1]}")
        return proc

    def run(self, cell: Cell) -> Results:
        if not self._may_share(cell.op):
            self.close()
        proc = self._proc if self._proc and self._proc.poll() is None else self._start()
        self._ops.add(cell.op)
        self._oom_kills = oom.kills(self.oom_counter)
        try:
            proc.stdin.write(cell.to_json() + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self._read_line(self.spec.timeout)
        if line:
            return self._opened(cell, line)
        status, message = self._failure(line is None, self.spec.timeout)
        return failed(cell, status, message)

    def _opened(self, cell: Cell, line: str) -> Results:
        """The reply's rows as results, restated; a reply the worker did not write ends the worker, as an error."""
        try:
            rows = channel.opened(line, self._key, self._seq)
        except channel.Forged as exc:
            self.close()
            return failed(cell, Status.ERROR, f"the worker's reply was rejected: {exc}; the measured code "
                                              "wrote to benchctl's channel")
        self._seq += 1
        try:
            results = [restate(row) for row in rows]
        except UnknownColumn as exc:
            results = failed(cell, Status.ERROR, f"the worker's reply was rejected: {exc}")
        if self.fresh or cuda_failed(results):
            self.close()
        return results

    def _may_share(self, op: str) -> bool:
        """Whether `op` may run in the worker that ran the operators before it: not when their C++
        libraries open one TORCH_LIBRARY namespace (loading both aborts the process)."""
        if self._apart is None:
            self._apart = namespaces.apart(namespaces.declared_clashes())
        return all(frozenset((op, other)) not in self._apart for other in self._ops if other != op)

    def _read_line(self, timeout: float | None) -> str | None:
        """The next line; "" when the worker closed its output (it died); None on timeout."""
        assert self._proc and self._proc.stdout
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
        return self._proc.stdout.readline() if ready else None

    def _failure(self, timed_out: bool, waited: float | None) -> tuple[str, str]:
        """Kill what is left of the worker; describe how it ended (`timed_out`: no word in `waited` seconds),
        with the tail of its stderr."""
        proc = self._proc
        assert proc is not None
        if timed_out:
            proc.kill()
        code = proc.wait()
        end_group(proc)
        self._proc = None
        tail = _tail(self._stderr)
        if timed_out:
            return Status.TIMEOUT, f"no result within {waited:g} s; killed. {tail}".strip()
        if code == -signal.SIGKILL:
            return self._killed(tail)
        how = f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        # Under a memory limit, a native allocation (a thread stack, a std::vector) can fail outside
        # torch's allocator and end the process; the message says it was memory.
        status = Status.OOM if self.spec.mem_limit and any(m in tail for m in OOM_MARKERS) else Status.CRASHED
        return status, f"worker {how}. {tail}".strip()

    def _killed(self, tail: str) -> tuple[str, str]:
        """SIGKILL, which nothing in the worker can catch: `oom` when the cgroup's OOM killer count rose
        during the cell, else most likely memory too (the kernel's OOM killer outside the cgroup)."""
        after = oom.kills(self.oom_counter)
        if after is not None and self._oom_kills is not None and after > self._oom_kills:
            return Status.OOM, f"worker killed by the OOM killer (cgroup oom_kill {self._oom_kills} -> {after}). {tail}".strip()
        return Status.CRASHED, f"worker killed (SIGKILL: likely out of memory). {tail}".strip()

    def close(self) -> None:
        if self._proc:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            end_group(self._proc)
        self._proc = None


def cuda_failed(results: Results) -> bool:
    """A pass of the cell failed with a CUDA error (CUDA_ERROR_MARKS)."""
    return any(not r.ok and any(mark in (r.message or "") for mark in CUDA_ERROR_MARKS) for r in results)


def end_group(proc: subprocess.Popen) -> None:
    """Kills every process left in the worker's group (it leads one: start_new_session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # nothing left in it


def restate(row: Row) -> PassResult:
    """The result a worker's row says, its statistics recomputed from its samples, so none comes from the
    process the measured code ran in; a row whose statistics disagree with its samples is an error."""
    result = PassResult.from_row(row)
    if not result.samples_s or result.median_s is None:
        return result
    stats = result.statistics()
    off = abs(stats["median_s"] - result.median_s) > 1e-9 * max(stats["median_s"], 1e-12) + 1e-15
    if off and result.ok:
        said = f"the worker's median {result.median_s:.6g} s is not its samples' ({stats['median_s']:.6g} s)"
        return result.with_(**stats, status=Status.ERROR, message=said)
    return result.with_(**stats)


@dataclass
class Replicas:
    """`--processes N`: N worker processes kept for the whole sweep, a cell's measurements handed to them
    in turn (its first to worker 0, its second to worker 1, ...), as pyperf spreads its runs over
    processes: a process that landed in a slower mode for its life shows as a spread between them. Each
    row says which worker measured it (`process`)."""

    workers: Sequence[WorkerProcess]
    _turns: dict[str, int] = field(default_factory=dict, repr=False)

    def run(self, cell: Cell) -> Results:
        key = cell.to_json()
        turn = self._turns.get(key, 0)
        self._turns[key] = turn + 1
        process = turn % len(self.workers)
        return [r.with_(process=process) for r in self.workers[process].run(cell)]

    def close(self) -> None:
        for worker in self.workers:
            worker.close()


def _tail(stream: Any) -> str:
    if stream is None:
        return ""
    stream.seek(0)
    lines = stream.read().decode(errors="replace").strip().splitlines()
    return " | ".join(lines[-STDERR_TAIL_LINES:])


def failed(cell: Cell, status: str, message: str) -> Results:
    """The cell's results where it did not run: each pass with `status` and `message`."""
    return each_pass(base_result(cell.resolve()), cell.passes, status=status, message=message)

"""A sweep ready to run: its cells, the timing settings, the executor, and the run folder."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from benchctl.ops import registry
from benchctl.ops.build import BuildError
from benchctl.ops.cells import Cell
from benchctl.sweep.config import SweepConfig
from benchctl.measure.correctness import TF32_MODES
from benchctl.measure.execute import Settings
from benchctl.sweep.rounds import per_round
from benchctl.sweep.executors import InProcess, WorkerProcess
from benchctl.sweep.session import Sweep
from benchctl.results.storage import RunWriter, new_run_id
from benchctl.measure.timing import Policy


@dataclass
class Plan:
    cells: Sequence[Cell]
    config: SweepConfig = SweepConfig()
    min_time: float | None = None
    max_time: float | None = None
    warmup_time: float | None = None
    threads: int | None = None
    flush_l2: bool = False
    tf32: bool | None = None
    timeout: float | None = None
    in_process: bool = False
    ops_dirs: Sequence[str] = ()
    mem_limit: int | None = None
    rounds: int = 1
    fresh_worker: bool = False
    build_failures: dict[tuple[str, str, str], str] = field(default_factory=dict)

    def settings(self) -> Settings:
        from benchctl.measure.calibrate import load_peaks

        timing = dict(self.config.timing)
        if self.min_time is not None:
            timing["min_time"] = self.min_time
        if self.max_time is not None:
            timing["max_time"] = self.max_time
        if self.warmup_time is not None:
            timing["warmup_time"] = self.warmup_time
        policy = replace(Policy(), **{k: (int(v) if k in ("min_samples", "max_samples", "warmup") else v)
                                      for k, v in timing.items()})
        return Settings(policy=per_round(policy, self.rounds), flush_l2=self.flush_l2, tf32=self.tf32,
                        peaks=load_peaks())

    def availability(self) -> tuple[list[Cell], dict[str, list[Cell]]]:
        """Cells that can run here, and the others grouped by the reason they cannot."""
        runnable, reasons = [], {}
        for cell in self.cells:
            reason = self.reason(cell)
            if reason:
                reasons.setdefault(reason, []).append(cell)
            else:
                runnable.append(cell)
        return runnable, reasons

    def reason(self, cell: Cell) -> str | None:
        key = (cell.op, cell.impl, cell.device)
        if key in self.build_failures:
            return self.build_failures[key]
        return cell.resolve().unavailable_reason()

    def build_extensions(self, say: Callable[[str], None]) -> None:
        """Compile what runnable cells need, with a status line each; a failure makes them unavailable."""
        runnable, _ = self.availability()
        for op_name, impl_name, device in dict.fromkeys((c.op, c.impl, c.device) for c in runnable):
            impl = registry.get(op_name).implementations[impl_name]
            if impl.build is None:
                continue
            say(f"building {op_name} {impl_name} for {device} ...")
            try:
                seconds = impl.build(device)
            except BuildError as exc:
                self.build_failures[(op_name, impl_name, device)] = f"{op_name} {impl_name}: {exc.summary}"
                say(f"  failed: {exc.summary}\n{exc.compiler_lines}")
                continue
            say(f"  ready in {seconds:.1f} s")

    def references(self) -> dict[str, str]:
        """Each operator's reference implementation: the report's default baseline for speedups."""
        return {op: registry.get(op).reference for op in dict.fromkeys(c.op for c in self.cells)}

    def tf32_mode(self) -> str:
        return next(name for name, value in TF32_MODES.items() if value is self.tf32)

    def writer(self, out: Path, **facts: Any) -> RunWriter:
        """The run's folder; `facts` (e.g. busy_cores_at_start) go into run.json with the environment."""
        from benchctl.machine.facts import environment, memory_setup

        meta = {"environment": environment(), "memory": memory_setup(), "cells": len(self.cells),
                "rounds": self.rounds, "config": self.config.path, "peaks": self.settings().peaks,
                "references": self.references(), "tf32": self.tf32_mode(), **facts}
        return RunWriter(out, new_run_id(), meta)

    def executor(self):
        settings = self.settings()
        if self.in_process:
            return InProcess(settings)
        return WorkerProcess(settings, ops_dirs=self.ops_dirs, timeout=self.timeout, threads=self.threads,
                             mem_limit=self.mem_limit, fresh=self.fresh_worker)

    def run(self, writer: RunWriter, on_start=lambda cell: None, on_done=lambda cell, rows: None) -> None:
        from benchctl.machine.facts import environment

        executor = self.executor()
        env = environment()
        if self.threads:
            env["threads"] = self.threads
        try:
            Sweep(self.cells, executor, writer, env, on_start=on_start, on_done=on_done,
                  blocked=self.build_failures, rounds=self.rounds).run()
        finally:
            executor.close()

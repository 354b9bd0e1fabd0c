"""What the user asked for, ready to run: the cells, the timing settings and the executor they run on."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

from benchctl.errors import UsageError
from benchctl.ops.cells import Cell
from benchctl.sweep.config import SweepConfig
from benchctl.results.schema import SPEEDUP_LIMIT
from benchctl.vocab import TF32_MODES, Allocator, Executor
from benchctl.measure.execute import Settings
from benchctl.sweep.rounds import ROUND_SAMPLES, most_rounds, per_round
from benchctl.sweep.cluster import RayCluster
from benchctl.sweep.executors import InProcess, Replicas, WorkerProcess
from benchctl.sweep.pool import Pool, local_gpus
from benchctl.sweep.series import SeriesJob
from benchctl.sweep.worker_spec import WorkerSpec
from benchctl.measure.timing import Policy


MAX_OVER_MIN_TIME = 2  # max_time, unless given, is at least this many times min_time
DEFAULT_PROCESSES = 3  # run --processes, unless a quick look (docs/measuring.md, "Processes")


def _time_bounds(policy: Policy, given: dict[str, Any]) -> Policy:
    """min_time and max_time made to agree: the one given (config or command line) wins over a default;
    a max_time left at its default leaves room for the samples asked for and the untimed setup between
    them. Both given, and max_time below min_time: a usage error."""
    if "max_time" not in given:
        return replace(policy, max_time=max(policy.max_time, MAX_OVER_MIN_TIME * policy.min_time))
    if policy.max_time >= policy.min_time:
        return policy
    if "min_time" not in given:
        return replace(policy, min_time=policy.max_time)
    raise UsageError(f"max_time {policy.max_time:g} s is less than min_time {policy.min_time:g} s")


@dataclass
class Plan:
    cells: Sequence[Cell]
    config: SweepConfig = SweepConfig()
    min_time: float | None = None
    max_time: float | None = None
    warmup_time: float | None = None
    ci_target: float | None = None  # None: the config's, else the timing policy's default
    remeasure: int = 1  # times a noisy cell is measured again at the end of the sweep
    settle: float = 0.0  # seconds in all the sweep may wait for a quiet machine at speed (run: 60)
    recheck_above: float = SPEEDUP_LIMIT  # a speedup over the reference above this is re-checked (sweep/recheck.py)
    threads: int | None = None
    flush_l2: bool = False
    cuda_graph: bool = False
    tf32: bool | None = None
    timeout: float | None = None
    in_process: bool = False
    start: dict[str, Any] | None = None  # in process: torch's settings before the operator files (held.ready)
    ops_dirs: Sequence[str] = ()
    mem_limit: int | None = None
    rounds: int = 1  # within each worker process
    processes: int = 1  # worker processes each cell is measured in (executors.Replicas)
    fresh_worker: bool = False
    allocator: str = Allocator.SYSTEM  # the worker's memory allocator (machine/allocator.py)
    executor: str = Executor.LOCAL  # one of vocab.EXECUTORS
    address: str | None = None  # ray: an existing cluster's address ("auto", HOST:PORT); None starts one
    gpu_kinds: Sequence[str] = ()  # ray: GPU series run once on each of these accelerator types

    def settings(self) -> Settings:
        from benchctl.measure.calibrate import load_peaks

        return Settings(policy=per_round(self.policy(), self.total_rounds), flush_l2=self.flush_l2,
                        cuda_graph=self.cuda_graph, tf32=self.tf32, peaks=load_peaks())

    def policy(self) -> Policy:
        """The timing policy of the config and the flags, for all of a cell's rounds together."""
        timing = dict(self.config.timing)
        if self.min_time is not None:
            timing["min_time"] = self.min_time
        if self.max_time is not None:
            timing["max_time"] = self.max_time
        if self.warmup_time is not None:
            timing["warmup_time"] = self.warmup_time
        if self.ci_target is not None:
            timing["ci_target"] = self.ci_target
        return _time_bounds(replace(Policy(), **timing), timing)  # a config's counts are whole numbers (config.py)

    @property
    def total_rounds(self) -> int:
        """Every cell's measurements in all: its rounds in each of its processes."""
        return self.rounds * self.processes

    def check(self) -> None:
        """Settings that cannot go together, as a usage error."""
        if self.processes > 1 and self.in_process:
            raise UsageError("--processes needs worker processes: leave out --in-process (or use --processes 1)")
        if self.processes > 1 and self.executor != Executor.LOCAL:
            raise UsageError(f"--processes is not supported by the {self.executor} executor yet: use "
                             "--processes 1 with it, or the local executor")
        if self.processes > 1 and self.fresh_worker:
            raise UsageError("--processes keeps its workers for the whole sweep: leave out --fresh-worker")
        if self.fresh_worker and self.in_process:
            raise UsageError("--fresh-worker starts a worker process for every cell: leave out --in-process")
        for given, option in ((self.address is not None, "--address"), (bool(self.gpu_kinds), "--gpu-kind")):
            if given and self.executor != Executor.RAY:
                raise UsageError(f"{option} is for --executor ray, not {self.executor}: add --executor ray, or "
                                 f"leave {option} out")
        self._check_rounds()

    def _check_rounds(self) -> None:
        """Rounds a policy can be shared among (rounds.most_rounds), as a usage error past them."""
        policy = self.policy()
        most = most_rounds(policy)
        if self.total_rounds > most:
            raise UsageError(f"--rounds {self.rounds} in each of {self.processes} process(es) is "
                             f"{self.total_rounds} rounds of every cell, more than {most}: each takes "
                             f"{ROUND_SAMPLES} samples of a pass at least, past max_samples ({policy.max_samples})")

    def references(self) -> dict[str, str]:
        """Each operator's reference implementation: the report's default baseline for speedups."""
        return {c.op: c.operator.reference for c in self.cells}

    def tf32_mode(self) -> str:
        return next(name for name, value in TF32_MODES.items() if value is self.tf32)

    def meta(self) -> dict[str, Any]:
        """What the run's metadata records of the plan, beside the environment."""
        settings = self.settings()
        return {"cells": len(self.cells), "rounds": self.rounds, "processes": self.processes,
                "config": self.config.path,
                "ci_target": settings.policy.ci_target, "remeasure": self.remeasure, "settle_s": self.settle,
                "recheck_above": self.recheck_above,
                "peaks": settings.peaks, "references": self.references(), "tf32": self.tf32_mode(),
                "executor": self.executor, "allocator": self.allocator, **({"gpu_kinds": list(self.gpu_kinds)} if self.gpu_kinds else {})}

    def local_executor(self) -> InProcess | WorkerProcess | Replicas:
        """Where cells run under the local executor: this process, one worker process at a time, or
        `processes` workers in turn."""
        if self.in_process:
            return InProcess(self.settings(), self.start)
        spec = self.worker_spec()
        workers = [WorkerProcess(spec, fresh=self.fresh_worker) for _ in range(self.processes)]
        return Replicas(workers) if self.processes > 1 else workers[0]

    def worker_spec(self) -> WorkerSpec:
        """What every worker of the run is started with (sweep/worker_spec.py)."""
        return WorkerSpec(self.settings(), self.ops_dirs, self.timeout, self.threads, self.mem_limit, self.allocator)

    def series_job(self) -> SeriesJob:
        """The settings every series shares, for the fan-out executors."""
        return SeriesJob((), self.worker_spec(), self.rounds, remeasure=self.remeasure)

    def fanout(self) -> Pool | RayCluster | None:
        """The executor that fans series out (pool, ray), or None for the local one."""
        if self.executor == Executor.POOL:
            return Pool(self.series_job(), local_gpus())
        if self.executor == Executor.RAY:
            return RayCluster(self.series_job(), self.address, tuple(self.gpu_kinds))
        return None



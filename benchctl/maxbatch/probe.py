"""Real probes for `maxbatch`: one cell per batch size, in a worker process under a memory limit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from benchctl.ops import extension, lookup, registry
from benchctl.sweep import request, words
from benchctl.ops.cells import Cell
from benchctl.errors import BenchError, UsageError
from benchctl.measure.execute import Settings
from benchctl.maxbatch.search import SearchResult, default_cpu_limit, search
from benchctl.machine.facts import environment
from benchctl.sweep.executors import WorkerProcess
from benchctl.sweep.worker_spec import WorkerSpec
from benchctl.sweep.driver import stamp
from benchctl.results import guard
from benchctl.results.storage import RunWriter, new_run_id
from benchctl.measure.timing import Policy
from benchctl.vocab import Device, RunState, Status

# One repetition after the first call is enough to know whether a size fits. Nothing else is run beside
# the call: no correctness gate, and no audit, whose reference at the probed size and kept outputs (with
# their copies) take memory of their own. With them, hoconv2d's cuda probe at B=4096 on an H100 had 53 GiB
# allocated when a backward asked for 19 GiB more, and failed; one call there needs about 48 GiB (inputs
# 21.4 GiB, output and gradients 26). The search found the harness's limit, not the implementation's.
PROBE_SETTINGS = Settings(policy=Policy(warmup=0, min_samples=1, max_samples=1, min_time=0.0, max_time=0.0),
                          check=False, audit=False, measure_memory=False, probe_bandwidth=False)


@dataclass
class Prober:
    op: registry.Operator
    impl: registry.Implementation
    device: str
    pass_name: str
    target: str
    params: dict[str, Any]
    dtype: str
    mem_limit: int | None
    timeout: float
    ops_dirs: Sequence[str]
    cell: Cell  # the cell `run` would time with the same words; a probe is it at another batch size

    @staticmethod
    def create(op_name: str, impl_name: str, device: str, pass_name: str, target: str | None,
               params: dict[str, Any], dtype: str, mem_limit: int | None, timeout: float,
               ops_dirs: Sequence[str]) -> "Prober":
        op = request.select_ops([op_name])[0]
        impls = request.select_impls([op], impl_name)
        devices = words.parse_devices(device)
        if len(devices) != 1 or "," in impl_name or impl_name == "all" or not impls:
            raise UsageError("maxbatch takes one operator, one implementation and one device")
        if "batch_size" not in op.params:
            raise UsageError(f"{op.name} has no batch_size param to search")
        impl = lookup.find(op, impls[op.name][0])
        reason = impl.unavailable_reason(devices[0], dtype)
        if reason:
            raise BenchError(f"{op.name} {impl_name} on {devices[0]}: {reason}")
        target = target or op.targets[0].name
        op.target(target) if target in [t.name for t in op.targets] else _bad_target(op, target)
        limit = mem_limit if mem_limit or devices[0] == Device.CUDA else default_cpu_limit()
        unknown = [key for key in params if key not in op.params]
        if unknown:
            raise UsageError(f"{op.name} has no param {unknown[0]!r}; valid params: {', '.join(op.params)}")
        cell = request.one_cell(request.SweepRequest(
            impls=impl.name, devices=devices[0], ops=(op.name,), targets=(target,), dtypes=(dtype,),
            passes=(pass_name,), params={k: v for k, v in params.items() if k != "batch_size"}))
        return Prober(op, impl, devices[0], pass_name, target, dict(cell.params), dtype, limit, timeout,
                      ops_dirs, cell)

    def limit_text(self) -> str:
        if self.device == Device.CUDA:
            return "the GPU's memory"
        return f"{self.mem_limit / 1024**3:.2f} GiB" if self.mem_limit else "none"

    def run(self, out: Path, start: int, limit: int, say: Callable[[int, bool], None]) -> tuple[SearchResult, Path]:
        build = extension.isolated_build(self.impl)  # an Extension's builds and loads in a child process
        if build is not None:
            build(self.device)  # compilers must not run under the worker's memory limit
        worker = WorkerProcess(WorkerSpec(PROBE_SETTINGS, self.ops_dirs, self.timeout,
                                          mem_limit=self.mem_limit if self.device == Device.CPU else None))
        env = environment()
        writer = RunWriter(out, new_run_id(), {"environment": env, "maxbatch": self._describe()})

        def fits(batch: int) -> bool:
            rows = stamp(worker.run(self._cell(batch)), env)
            found = writer.look(self._cell(batch).label())  # only benchctl writes the run's folder (results/guard.py)
            rows = guard.changed_rows(rows, found) if found else rows
            writer.write(rows)
            status, message = rows[0]["status"], rows[0].get("message", "")
            if status not in (Status.OK, Status.OOM, Status.CRASHED):
                raise BenchError(f"batch {batch}: {status}: {message}")
            say(batch, status == Status.OK)
            if status != Status.OK:
                worker.close()  # the next probe starts in a fresh process, not a fragmented heap
            return status == Status.OK

        try:
            result = search(fits, start, limit)
        except KeyboardInterrupt:
            writer.finish(RunState.INTERRUPTED)
            raise
        except BaseException as exc:  # a probe that errors leaves the folder failed, not running
            writer.finish(RunState.FAILED, reason=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            worker.close()
        writer.meta["maxbatch"].update(largest_ok=result.largest_ok, smallest_failed=result.smallest_failed,
                                       probes=result.probes, capped=result.capped)
        writer.finish(compact=True)
        return result, writer.dir

    def _cell(self, batch: int) -> Cell:
        return self.cell.with_params(batch_size=batch)

    def _describe(self) -> dict[str, Any]:
        return {"op": self.op.name, "impl": self.impl.name, "device": self.device, "pass": self.pass_name,
                "target": self.target, "dtype": self.dtype, "mem_limit_bytes": self.mem_limit}


def _bad_target(op: registry.Operator, target: str) -> None:
    raise UsageError(f"{op.name} has no target {target!r}; choose from {', '.join(t.name for t in op.targets)}")

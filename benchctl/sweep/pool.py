"""The pool executor: every GPU of this machine at once, one worker per GPU pinned with CUDA_VISIBLE_DEVICES.

GPU series run side by side, one per GPU. A CPU series never runs beside anything: neighbours share memory
bandwidth and cores, so a CPU timing taken next to other work is wrong. CPU series therefore run after the
GPU series, one at a time.
"""

from __future__ import annotations

import os
import queue
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from benchctl.ops.cells import Cell
from benchctl.results.schema import Rows
from benchctl.sweep.series import SeriesJob, close_workers, run_series
from benchctl.vocab import Device

Series = tuple[Cell, ...]
Deliver = Callable[[Series, Rows], None]


def local_gpus() -> list[str]:
    """The GPUs this process may use, each as a worker's CUDA_VISIBLE_DEVICES names it."""
    import torch

    return visible_gpus(torch.cuda.device_count() if torch.cuda.is_available() else 0,
                        os.environ.get("CUDA_VISIBLE_DEVICES"))


def visible_gpus(count: int, visible: str | None) -> list[str]:
    """The first `count` entries of this process's CUDA_VISIBLE_DEVICES (indices, UUIDs or MIG names),
    or 0..count-1 where it is unset: under CUDA_VISIBLE_DEVICES=2,3 torch's GPU 0 is the machine's 2."""
    if visible is None:
        return [str(i) for i in range(count)]
    return [n.strip() for n in visible.split(",") if n.strip()][:count]


@dataclass
class Pool:
    job: SeriesJob  # the settings every series shares; its cells are replaced per series
    gpus: Sequence[str]
    runner: Callable[[SeriesJob], Rows] = run_series  # replaceable, so scheduling is tested without GPUs
    is_gpu: Callable[[Series], bool] = lambda series: series[0].device == Device.CUDA

    def start(self, series: Sequence[Series]) -> None:
        """Nothing to start: the workers start with their series."""

    def close(self) -> None:
        close_workers()

    def run(self, series: Sequence[Series], deliver: Deliver) -> None:
        gpu = [s for s in series if self.is_gpu(s)] if self.gpus else []  # else: unavailable, recorded below
        self._run_gpu_series(gpu, deliver)
        for s in (s for s in series if s not in gpu):
            deliver(s, self.runner(replace(self.job, cells=s)))

    def _run_gpu_series(self, series: Sequence[Series], deliver: Deliver) -> None:
        free: queue.SimpleQueue[str] = queue.SimpleQueue()
        for gpu in self.gpus:
            free.put(gpu)

        def on_a_gpu(s: Series) -> Rows:
            gpu = free.get()
            try:
                return self.runner(replace(self.job, cells=s, spec=self.job.spec.with_(
                    env={**self.job.spec.env, "CUDA_VISIBLE_DEVICES": gpu})))
            finally:
                free.put(gpu)

        with ThreadPoolExecutor(max_workers=max(1, len(self.gpus))) as threads:
            pending: dict[Future, Series] = {threads.submit(on_a_gpu, s): s for s in series}
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        deliver(pending.pop(future), future.result())
            except BaseException:
                for future in pending:
                    future.cancel()  # series not started yet never start; running ones end with their cell
                raise

"""The pool executor with fake devices: GPU series side by side, one per GPU and pinned to it; CPU series
alone, after every GPU series; and a real pool of CPU series landing every row."""

from __future__ import annotations

import threading
import time

from benchctl.measure.execute import Settings
from benchctl.measure.timing import Policy
from benchctl.ops.cells import Cell
from benchctl.sweep.pool import Pool, visible_gpus
from benchctl.sweep.series import SeriesJob, group
from benchctl.sweep.worker_spec import WorkerSpec

FAST = Settings(policy=Policy(warmup=0, warmup_time=0, min_samples=2, max_samples=3, min_time=0, max_time=1),
                probe_bandwidth=False)


def cells(impl: str, sizes=(2, 4)) -> list[Cell]:
    return [Cell.make("faulty", "op", impl, "cpu", "float32", {"batch_size": b, "dim": 8}, ("forward",))
            for b in sizes]


def test_gpu_series_run_side_by_side_one_per_gpu_and_cpu_series_alone(fixture_ops):
    spans, lock = [], threading.Lock()

    def fake_runner(job: SeriesJob):
        start = time.monotonic()
        time.sleep(0.2)
        with lock:
            spans.append((job.cells[0].impl, job.spec.env.get("CUDA_VISIBLE_DEVICES"), start, time.monotonic()))
        return []

    series = group(cells("py") + cells("wrong") + cells("zeros") + cells("scratch"))
    gpu_like = {"py", "wrong", "zeros"}  # stand-ins for GPU series: no GPU here
    pool = Pool(SeriesJob((), WorkerSpec(FAST)), gpus=["0", "1"], runner=fake_runner, is_gpu=lambda s: s[0].impl in gpu_like)
    delivered = []
    pool.run(series, lambda s, rows: delivered.append(s[0].impl))
    assert sorted(delivered) == ["py", "scratch", "wrong", "zeros"]
    by = {impl: (gpu, a, b) for impl, gpu, a, b in spans}
    assert {by[i][0] for i in gpu_like} == {"0", "1"} and by["scratch"][0] is None
    for i in gpu_like:  # a GPU never runs two series at once
        for j in gpu_like - {i}:
            if by[i][0] == by[j][0]:
                assert by[i][2] <= by[j][1] or by[j][2] <= by[i][1]
    assert max(by[i][2] for i in gpu_like) <= by["scratch"][1]  # the CPU series alone, after them all
    overlapping = [(i, j) for i in gpu_like for j in gpu_like if i < j and by[i][1] < by[j][2] and by[j][1] < by[i][2]]
    assert overlapping  # two GPUs: some series ran at the same time


def test_a_real_pool_of_cpu_series_lands_every_row(fixture_ops, fixture_ops_dir):
    job = SeriesJob((), WorkerSpec(FAST, (str(fixture_ops_dir),), timeout=120))
    rows = []
    Pool(job, gpus=[]).run(group(cells("py") + cells("segfault", (4, 8))), lambda s, r: rows.extend(r))
    got = sorted((r["impl"], r["batch_size"], r["status"]) for r in rows)
    assert got == [("py", 2, "ok"), ("py", 4, "ok"), ("segfault", 4, "ok"), ("segfault", 8, "crashed")]
    assert {r["node_id"] for r in rows} == {rows[0]["host"]}


def test_workers_are_pinned_to_the_gpus_this_process_was_given():
    assert visible_gpus(2, None) == ["0", "1"]
    assert visible_gpus(2, "2,3") == ["2", "3"]  # torch's 0 and 1; a worker pinned to "0" would be wrong
    assert visible_gpus(1, "GPU-8f2e, GPU-11aa") == ["GPU-8f2e"]  # UUIDs pass through; torch saw one
    assert visible_gpus(0, "") == []

"""Reliability with real processes: a segfault, a hang and an out-of-memory cell do not end the sweep;
Ctrl-C keeps every finished cell."""

import os
import subprocess
import sys
from pathlib import Path

from benchctl.results import storage
from benchctl.ops.cells import Cell
from benchctl.measure.execute import Settings
from benchctl.sweep.executors import WorkerProcess
from benchctl.sweep.driver import Sweep
from benchctl.results.storage import RunWriter
from benchctl.measure.timing import Policy
from benchctl.sweep.worker_spec import WorkerSpec

# No bandwidth probe: its buffer (64 to 256 MiB, machine/membw.py) would count against the memory limit
# that the out-of-memory test sets.
FAST = Settings(policy=Policy(warmup=1, warmup_time=0.0, min_samples=3, min_time=0.0, max_time=1.0),
                measure_memory=False, probe_bandwidth=False)


def cells(impl, batches):
    return [Cell.make("faulty", "op", impl, "cpu", "float32", {"batch_size": b, "dim": 8}) for b in batches]


FIXTURE_OPS = Path(__file__).resolve().parents[1] / "fixtures" / "ops"


def sweep(tmp_path, impl, batches, timeout=None, mem_limit=None, threads=None, **worker_kw):
    spec = WorkerSpec(FAST, [str(FIXTURE_OPS)], timeout, threads=threads, mem_limit=mem_limit)
    worker = WorkerProcess(spec, **worker_kw)
    writer = RunWriter(tmp_path, storage.new_run_id(), {})
    try:
        Sweep(cells(impl, batches), worker, writer, {"host": "test"}).run()
    finally:
        worker.close()
    return storage.load_run(writer.dir)


def statuses(df):
    return [(int(b), s) for b, s in zip(df["batch_size"], df["status"])][::3]


def test_a_segfault_becomes_a_crashed_row_and_the_sweep_goes_on(tmp_path, fixture_ops):
    df = sweep(tmp_path, "segfault", [4, 8, 2], timeout=120)
    assert statuses(df) == [(4, "ok"), (8, "crashed"), (2, "ok")]
    crashed = df[df["status"] == "crashed"].iloc[0]
    assert "SIGSEGV" in crashed["message"]
    # the worker's last stderr lines: the Python stack, down to the implementation that crashed
    assert "Segmentation fault" in crashed["message"] and "faulty.py" in crashed["message"]


def test_a_sigkill_the_cgroup_counts_as_an_oom_kill_is_oom(tmp_path, fixture_ops, monkeypatch):
    events = tmp_path / "memory.events"
    events.write_text("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")
    monkeypatch.setenv("BENCHCTL_TEST_OOM_EVENTS", str(events))
    df = sweep(tmp_path / "counted", "sigkill", [4, 8], timeout=120, oom_counter=events)
    assert statuses(df) == [(4, "ok"), (8, "oom")]
    assert "killed by the OOM killer (cgroup oom_kill 0 -> 1)" in df.iloc[-1]["message"]


def test_a_sigkill_nothing_explains_is_likely_out_of_memory(tmp_path, fixture_ops, monkeypatch):
    monkeypatch.delenv("BENCHCTL_TEST_OOM_EVENTS", raising=False)
    df = sweep(tmp_path, "sigkill", [4, 8], timeout=120, oom_counter=None)
    assert statuses(df) == [(4, "ok"), (8, "crashed")]
    assert "worker killed (SIGKILL: likely out of memory)" in df.iloc[-1]["message"]


def test_a_hang_becomes_a_timeout_row(tmp_path, fixture_ops):
    df = sweep(tmp_path, "hang", [4, 8, 2], timeout=20)
    assert statuses(df) == [(4, "ok"), (8, "timeout"), (2, "ok")]
    assert "no result within 20 s" in df[df["status"] == "timeout"].iloc[0]["message"]


def test_out_of_memory_is_recorded_and_larger_batches_are_skipped(tmp_path, fixture_ops):
    # 64 MiB per batch row against a 512 MiB limit: 4 rows fit, 16 cannot.
    df = sweep(tmp_path, "hog", [1, 4, 16, 32, 64], timeout=120, mem_limit=512 * 1024**2)
    assert statuses(df) == [(1, "ok"), (4, "ok"), (16, "oom"), (32, "skipped"), (64, "skipped")]
    assert "ran out of memory" in df[df["status"] == "skipped"].iloc[0]["message"]


def test_sigint_mid_sweep_keeps_finished_cells(tmp_path, fixture_ops):
    env = {**os.environ, "BENCHCTL_TEST_SIGINT": "1"}
    cmd = [sys.executable, "-m", "benchctl", "run", "sigint", "cpu", "--op", "faulty", "--ops-dir", str(FIXTURE_OPS),
           "--batch-sizes", "1,2,4,8,16,32", "--min-time", "0", "--warmup-time", "0", "--out", str(tmp_path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 130, proc.stderr
    assert "interrupted" in proc.stderr
    run = storage.latest_run(tmp_path)
    assert storage.run_meta(run)["state"] == "interrupted"
    df = storage.load_run(run)
    assert sorted(set(df["batch_size"])) == [1, 2, 4]  # everything before the Ctrl-C, nothing after
    assert set(df["status"]) == {"ok"}


def test_fresh_worker_starts_a_process_per_cell(tmp_path, fixture_ops, monkeypatch):
    starts = []
    original = WorkerProcess._start

    def counting(self):
        proc = original(self)
        starts.append(proc.pid)
        return proc

    monkeypatch.setattr(WorkerProcess, "_start", counting)
    reused = sweep(tmp_path / "reused", "segfault", [4, 2], timeout=120)
    assert statuses(reused) == [(4, "ok"), (2, "ok")] and len(starts) == 1
    fresh = sweep(tmp_path / "fresh", "segfault", [4, 2], timeout=120, fresh=True)
    assert statuses(fresh) == [(4, "ok"), (2, "ok")] and len(set(starts)) == 3


def test_a_cuda_error_ends_its_worker_and_the_next_cell_gets_a_fresh_one(tmp_path, fixture_ops, monkeypatch):
    """An illegal memory access leaves the process's CUDA context unusable: every later CUDA call in it fails."""
    starts = []
    original = WorkerProcess._start
    monkeypatch.setattr(WorkerProcess, "_start", lambda self: starts.append(1) or original(self))
    df = sweep(tmp_path, "cuda_error", [4, 8, 2, 1], timeout=120)
    assert statuses(df) == [(4, "ok"), (8, "error"), (2, "ok"), (1, "ok")] and len(starts) == 2
    assert "AcceleratorError: CUDA error: an illegal memory access" in df[df["status"] == "error"].iloc[0]["message"]


def test_a_memory_limit_is_the_operators_not_the_thread_pools(tmp_path, fixture_ops):
    """16 intra-op threads map stacks and malloc arenas of their own: started under the limit they took
    most of it (one 64 MiB row fitted under 512 MiB); started before it, the limit is the operator's."""
    df = sweep(tmp_path, "hog", [1, 4], timeout=120, mem_limit=512 * 1024**2, threads=16)
    assert statuses(df) == [(1, "ok"), (4, "ok")]

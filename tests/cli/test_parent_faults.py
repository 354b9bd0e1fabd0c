"""Faults of the benchctl process itself: kill -9 mid-sweep, a full disk, two sweeps into one folder."""

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from benchctl.cli import cli
from benchctl.results import storage

FAST = ["--min-time", "0.01", "--max-time", "0.2", "--warmup-time", "0"]


def sweep(out: Path, *args: str) -> subprocess.Popen:
    """A sweep in one worker process, so each cell is written as it finishes (with several, a cell's rows
    wait for its last process's turn)."""
    command = [sys.executable, "-m", "benchctl", "run", "py", "cpu", "--op", "hoconv2d", *FAST, "--processes", "1",
               "--out", str(out), *args]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def test_kill_9_mid_sweep_keeps_every_finished_cell_and_the_report_says_cut_off(tmp_path):
    parent = sweep(tmp_path, "--batch-sizes", "1,2,4,8,16,32,64")
    parts = lambda: list(tmp_path.glob("*/part-*.parquet"))  # noqa: E731
    try:
        assert wait_for(lambda: len(parts()) >= 1, 120), parent.stderr.read() if parent.poll() is not None else ""
        workers = children(parent.pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
    finally:
        parent.kill()
    kept = len(storage.load(root=tmp_path))
    assert kept >= 3  # one cell: its three passes
    assert wait_for(lambda: not any(Path(f"/proc/{w}").exists() for w in workers), 10), "the worker outlived its parent"
    result = CliRunner().invoke(cli, ["report", "--root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "was cut off (its writer died); its finished cells are loaded" in result.output
    assert len(storage.load(root=tmp_path)) == kept


def test_a_full_disk_is_one_line_and_the_rows_before_it_stay(tmp_path, monkeypatch):
    real = storage.compaction.pq.write_table
    calls = []

    def fills_up(table, where, *args, **kwargs):
        calls.append(where)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(table, where, *args, **kwargs)
    monkeypatch.setattr(storage.compaction.pq, "write_table", fills_up)
    result = CliRunner().invoke(cli, ["run", "py", "cpu", "--op", "hoconv2d", "--batch-sizes", "1,2", "--param",
                                      "H=16", "--param", "W=16", *FAST, "--out", str(tmp_path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "No space left on device; the 1 part(s) written before are kept" in result.output
    run = storage.latest_run(tmp_path)
    assert storage.run_meta(run)["state"] == "failed" and len(storage.load([run])) == 3


def test_two_sweeps_into_one_folder_lose_nothing(tmp_path):
    runs = [sweep(tmp_path, "--batch-sizes", "1,2", "--param", "H=16", "--param", "W=16") for _ in range(2)]
    for run in runs:
        assert run.wait(300) == 0, run.stderr.read()
    folders = storage.run_dirs(tmp_path)
    assert len(folders) == 2
    for folder in folders:
        assert storage.run_meta(folder)["state"] == "complete"
        rows = storage.load([folder])
        assert len(rows) == 12 and set(rows["status"]) == {"ok"}
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    assert sorted(os.listdir(tmp_path)) == [f.name for f in folders]

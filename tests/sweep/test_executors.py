"""A worker process as the sweep sees it: how one that could not start is reported."""

import pytest

from benchctl.errors import BenchError
from benchctl.measure.execute import Settings
from benchctl.ops.cells import Cell
from benchctl.sweep.executors import WorkerProcess
from benchctl.sweep.worker_spec import WorkerSpec


def test_a_worker_that_ends_as_it_starts_says_how_it_ended_not_that_it_timed_out(fixture_ops):
    worker = WorkerProcess(WorkerSpec(Settings(), timeout=600, threads=2**40), oom_counter=None)  # torch refuses it
    cell = Cell.make("faulty", "op", "py", "cpu", "float32", {"batch_size": 4, "dim": 8}, passes=("forward",))
    with pytest.raises(BenchError, match=r"^worker failed to start: worker exited with code 1\. .*Overflow") as failed:
        worker.run(cell)
    assert "no result within" not in str(failed.value)

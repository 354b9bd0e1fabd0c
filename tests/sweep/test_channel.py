"""The worker's signed replies, and the parent's restating of each row from its samples."""

import json

import pytest

from benchctl.measure.stats import summarize
from benchctl.sweep import channel
from benchctl.measure.execute import Settings
from benchctl.measure.result import UnknownColumn
from benchctl.ops.cells import Cell
from benchctl.sweep.executors import WorkerProcess, restate
from benchctl.sweep.worker_spec import WorkerSpec


def test_a_signed_reply_opens_with_its_key_and_number_only():
    key = channel.new_key()
    line = channel.signer(key)(3, [{"status": "ok", "median_s": 1.0}])
    assert channel.opened(line, key, 3) == [{"status": "ok", "median_s": 1.0}]
    with pytest.raises(channel.Forged, match="signature is wrong"):
        channel.opened(line, channel.new_key(), 3)
    with pytest.raises(channel.Forged, match="it is reply 3, not 4"):
        channel.opened(line, key, 4)
    with pytest.raises(channel.Forged, match="not a reply benchctl's worker writes"):
        channel.opened(json.dumps({"rows": []}), key, 0)


def test_a_reply_with_its_body_changed_fails():
    key = channel.new_key()
    reply = json.loads(channel.signer(key)(0, [{"median_s": 1.0}]))
    reply["body"] = reply["body"].replace("1.0", "1e-09")
    with pytest.raises(channel.Forged, match="signature is wrong"):
        channel.opened(json.dumps(reply), key, 0)


def test_restate_recomputes_the_statistics_and_rejects_a_median_its_samples_do_not_give():
    samples = [1.0, 2.0, 3.0, 100.0]
    flags = [False, False, False, True]
    honest = {"status": "ok", "samples_s": samples, "disturbed": flags, **summarize(samples[:3])}
    assert restate(honest) == honest
    forged = {**honest, "median_s": 0.5}
    out = restate(forged)
    assert out["status"] == "error" and out["median_s"] == 2.0
    assert out["message"] == "the worker's median 0.5 s is not its samples' (2 s)"
    assert restate({**forged, "status": "error", "message": "x"})["message"] == "x"  # its own reason stays


def test_a_reply_with_a_column_the_schema_does_not_list_is_an_error_row(fixture_ops):
    with pytest.raises(UnknownColumn, match="'medain_s'"):
        restate({"status": "ok", "samples_s": [1.0], "median_s": 1.0, "medain_s": 1.0})
    worker = WorkerProcess(WorkerSpec(Settings()), oom_counter=None)
    worker._key = channel.new_key()
    cell = Cell.make("faulty", "op", "py", "cpu", "float32", {"batch_size": 4, "dim": 8}, passes=("forward",))
    line = channel.signer(worker._key)(0, [{"pass": "forward", "status": "ok", "medain_s": 1.0}])
    [row] = worker._opened(cell, line)
    assert row["status"] == "error" and row["impl"] == "py" and row["pass"] == "forward"
    assert row["message"].startswith("the worker's reply was rejected: unknown column(s) 'medain_s'")


@pytest.mark.parametrize("message, ends", [
    ("AcceleratorError: CUDA error: an illegal memory access was encountered (ext.py:12)", True),
    ("RuntimeError: CUDA error: device-side assert triggered", True),
    ("RuntimeError: shapes cannot be multiplied (4x8 and 9x8)", False),
])
def test_a_cuda_error_in_a_reply_ends_the_worker_that_sent_it(message, ends):
    worker = WorkerProcess(WorkerSpec(Settings()), oom_counter=None)
    worker._key, closed = channel.new_key(), []
    worker.close = lambda: closed.append(True)
    cell = Cell.make("faulty", "op", "cuda", "cuda", "float32", {"batch_size": 4, "dim": 8}, passes=("forward",))
    line = channel.signer(worker._key)(0, [{"pass": "forward", "status": "error", "message": message}])
    [row] = worker._opened(cell, line)
    assert row["status"] == "error" and row["message"] == message and closed == ([True] if ends else [])

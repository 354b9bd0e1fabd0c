"""Parquet runs: round trip, one file per finished cell, concurrent writers, corrupt files skipped."""

import multiprocessing
import warnings

import pandas as pd
import pytest

from benchctl.results import storage
from benchctl.results.storage import RunWriter


def row(**kw):
    base = {"op": "hoconv2d", "target": "filter", "impl": "py", "device": "cpu", "dtype": "float32",
            "params": '{"batch_size": 1}', "axis": "batch_size", "axis_value": 1.0, "batch_size": 1,
            "pass": "forward", "status": "ok", "n": 3, "median_s": 0.002, "samples_s": [0.001, 0.002, 0.004]}
    return {**base, **kw}


def test_round_trip_keeps_samples_and_types(tmp_path):
    w = RunWriter(tmp_path, "run-a", {"environment": {"host": "h"}})
    w.write([row(), row(**{"pass": "backward", "median_s": 0.01})])
    w.write([row(status="unavailable", median_s=None, samples_s=None, message="no CUDA device")])
    w.finish()
    df = storage.load([w.dir])
    assert len(df) == 3 and list(df["samples_s"].iloc[0]) == [0.001, 0.002, 0.004]
    assert df["median_s"].iloc[1] == 0.01 and pd.isna(df["median_s"].iloc[2])
    assert df["message"].iloc[2] == "no CUDA device"
    assert storage.run_meta(w.dir)["state"] == "complete"
    assert storage.run_meta(w.dir)["schema_version"] == storage.SCHEMA_VERSION


def test_unknown_columns_are_refused():
    with pytest.raises(ValueError, match="unknown result columns"):
        storage.to_table([row(speed="fast")])


def test_latest_run_and_merging_runs(tmp_path):
    for run_id in ("20260101-000000-aaaaaa", "20260102-000000-bbbbbb"):
        RunWriter(tmp_path, run_id, {}).write([row(run_id=run_id)])
    assert storage.latest_run(tmp_path).name == "20260102-000000-bbbbbb"
    assert storage.load(root=tmp_path)["run_id"].tolist() == ["20260102-000000-bbbbbb"]
    assert len(storage.load([tmp_path])) == 2


def test_truncated_parquet_is_skipped_with_a_warning(tmp_path):
    w = RunWriter(tmp_path, "run-b", {})
    w.write([row()])
    good = w.write([row(**{"pass": "backward"})])
    data = good.read_bytes()
    good.write_bytes(data[: len(data) // 2])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = storage.load_run(w.dir)
    assert len(df) == 1
    assert any(str(good) in str(c.message) for c in caught)


def _write_many(root, run_id, n):
    w = RunWriter(root, run_id, {})
    for i in range(n):
        w.write([row(batch_size=i, axis_value=float(i))])
    w.finish()


def test_concurrent_writers_lose_nothing(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(tmp_path, storage.new_run_id(), 25)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    df = storage.load([tmp_path])
    assert len(df) == 75 and df["run_id"].nunique() == 3

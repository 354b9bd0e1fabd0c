"""Parquet runs: round trip, one file per finished cell, concurrent writers, corrupt files skipped."""

import multiprocessing
import re
import warnings
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from benchctl.results import run_state, storage
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


NOT_RESULTS = ("empty", "text", "truncated", "other columns", "empty frame")


def not_results(path: Path, kind: str) -> Path:
    """A parquet file by name that holds no results, of each kind: empty, six bytes of text, half a results
    file, a table with other columns (a, b), a DataFrame with none."""
    if kind == "truncated":
        pq.write_table(storage.to_table([row()]), path)
    elif kind in ("other columns", "empty frame"):
        pd.DataFrame({"a": [1], "b": [2]} if kind == "other columns" else {}).to_parquet(path)
    data = path.read_bytes() if path.exists() else b""
    path.write_bytes({"empty": b"", "text": b"hello\n", "truncated": data[: len(data) // 2]}.get(kind, data))
    return path


@pytest.mark.parametrize("kind", NOT_RESULTS)
def test_a_file_given_that_holds_no_results_is_skipped_with_a_warning(tmp_path, kind):
    bad = not_results(tmp_path / "bad.parquet", kind)
    good = RunWriter(tmp_path, "run-c", {}).write([row()])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert list(storage.load([good, bad])["impl"]) == ["py"]
        with pytest.raises(FileNotFoundError, match=f"^no results in {re.escape(str(bad))}$"):
            storage.load([bad])
    said = [str(c.message) for c in caught]
    assert len(said) == 2 and all(m.startswith("skipping ") and str(bad) in m and "\n" not in m for m in said)


def test_a_part_whose_column_holds_another_type_is_skipped_and_one_that_converts_is_read(tmp_path):
    w = RunWriter(tmp_path, "run-t", {})
    w.write([row()])
    pd.DataFrame([row(impl="cpp", n="many")]).to_parquet(w.dir / "part-00002.parquet")  # written by something else
    pd.DataFrame([row(impl="jit", n=None)]).to_parquet(w.dir / "part-00003.parquet")  # n: a double column of nulls
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = storage.load_run(w.dir)
    assert sorted(df["impl"]) == ["jit", "py"]  # the nulls read as int64 nulls
    assert [str(c.message) for c in caught] == [
        f"skipping {w.dir / 'part-00002.parquet'}: not a results file (column n holds large_string, not int64)"]


@pytest.mark.parametrize("text, kind", [("[]", "list"), ('"x"', "str"), ("3", "int")])
def test_metadata_that_is_not_an_object_is_unreadable_metadata(tmp_path, text, kind):
    w = RunWriter(tmp_path, "run-m", {})
    w.write([row()])
    (w.dir / storage.RUN_FILE).write_text(text)
    with pytest.raises(ValueError, match=f"holds a JSON {kind}, not a run's metadata"):
        storage.run_meta(w.dir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert storage.run_metas([w.dir]) == [] and len(storage.load_run(w.dir)) == 1
    assert [str(c.message) for c in caught] == [
        f"cannot read the metadata of {w.dir}: {w.dir / storage.RUN_FILE} holds a JSON {kind}, not a run's metadata"]


def test_a_run_folder_skips_a_part_that_is_not_results(tmp_path):
    w = RunWriter(tmp_path, "run-d", {})
    not_results(w.dir / "part-00001.parquet", "other columns")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert storage.load_run(w.dir).empty
    assert [str(c.message) for c in caught] == [
        f"skipping {w.dir / 'part-00001.parquet'}: not a results file (missing columns: op, target, impl, device, "
        "dtype, params, pass, status)"]


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


def _run_killed_mid_sweep(root):
    """A child process opens a run, writes one part and is killed with SIGKILL before it finishes."""
    import os
    import signal
    w = RunWriter(root, "killed", {})
    w.write([row()])
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_run_whose_writer_was_killed_reads_cut_off_with_its_rows(tmp_path):
    child = multiprocessing.get_context("spawn").Process(target=_run_killed_mid_sweep, args=(tmp_path,))
    child.start()
    child.join(60)
    assert child.exitcode == -9
    meta = storage.run_meta(tmp_path / "killed")
    assert meta["state"] == "cut off" and len(storage.load([tmp_path / "killed"])) == 1
    assert run_state.unfinished([meta]) == ["run killed was cut off (its writer died); its finished cells are loaded"]


def test_a_run_still_being_written_reads_running_and_a_reused_pid_does_not_fool_it(tmp_path):
    w = RunWriter(tmp_path, "live", {})
    assert storage.run_meta(w.dir)["state"] == "running"
    w.meta["writer"]["pid_started"] -= 1  # the same pid, started at another time: another process
    w._write_meta()
    assert storage.run_meta(w.dir)["state"] == "cut off"
    w.meta["writer"]["host"] = "elsewhere"  # another machine's writer cannot be checked from here
    w._write_meta()
    assert storage.run_meta(w.dir)["state"] == "running"


def test_a_full_disk_is_one_error_and_keeps_what_was_written(tmp_path, monkeypatch):
    import errno
    w = RunWriter(tmp_path, "full", {})
    w.write([row()])

    def no_space(table, where, *args, **kwargs):
        open(where, "wb").write(b"PAR1")  # half a file, as a full disk leaves it
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(storage.compaction.pq, "write_table", no_space)
    with pytest.raises(storage.ResultsNotWritten) as caught:
        w.write([row(impl="cpp")])
    assert str(caught.value) == (f"cannot write results to {w.dir}: No space left on device; "
                                 "the 1 part(s) written before are kept")
    monkeypatch.undo()
    w.finish("failed", reason=str(caught.value))
    assert sorted(p.name for p in w.dir.iterdir()) == ["_run.json", "part-00001.parquet"]
    assert list(storage.load([w.dir])["impl"]) == ["py"] and storage.run_meta(w.dir)["state"] == "failed"


def test_a_run_folder_is_a_parquet_dataset_and_old_runs_still_load(tmp_path):
    w = RunWriter(tmp_path, "new", {})
    w.write([row()])
    w.write([row(impl="cpp")])
    w.finish()
    (w.dir / storage.REPORT_DIR).mkdir()
    (w.dir / storage.REPORT_DIR / "index.html").write_text("<html></html>")
    assert sorted(pd.read_parquet(w.dir)["impl"]) == ["cpp", "py"]
    old = tmp_path / "old"
    old.mkdir()
    (w.dir / "part-00001.parquet").rename(old / "part-00001.parquet")
    (old / storage.LEGACY_RUN_FILE).write_text('{"run_id": "old", "state": "complete"}')
    assert storage.run_dirs(tmp_path) == [w.dir, old] and storage.run_meta(old)["state"] == "complete"
    assert list(storage.load([old])["impl"]) == ["py"]

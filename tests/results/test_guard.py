"""The run folder held to what benchctl wrote: parts rewritten, removed or added by anything else, and the
metadata rewritten, are put back or set aside during the run; after it, a loader skips parts the finished
run's metadata does not list as written."""

import json

import pyarrow.parquet as pq
import pytest

from benchctl.results import guard, storage
from benchctl.results.storage import RunWriter


def row(**kw):
    base = {"op": "victim", "target": "op", "impl": "py", "device": "cpu", "dtype": "float32",
            "params": '{"batch_size": 8}', "axis": "batch_size", "axis_value": 8.0, "batch_size": 8,
            "pass": "forward", "status": "ok", "n": 3, "median_s": 0.002, "samples_s": [0.001, 0.002, 0.004]}
    return {**base, **kw}


def forged(path, **kw):
    pq.write_table(storage.to_table([row(**kw)]), path)


@pytest.fixture
def writer(tmp_path):
    w = RunWriter(tmp_path, "run-a", {"environment": {"host": "h"}})
    w.write([row()])
    w.write([row(impl="fast", median_s=0.001, samples_s=[0.001])])
    return w


def test_a_quiet_folder_gives_nothing_to_say(writer):
    assert writer.look("a cell") == [] and "tampered" not in writer.meta


def test_a_part_rewritten_is_set_aside_and_written_again_from_benchctls_rows(writer):
    part = writer.dir / "part-00001.parquet"
    forged(part, median_s=0.2)
    assert writer.look("victim fast") == [
        "part-00001.parquet rewritten (set aside as .tampered-part-00001.parquet, written again from benchctl's rows)"]
    assert pq.read_table(part).to_pylist()[0]["median_s"] == 0.002
    assert pq.read_table(writer.dir / ".tampered-part-00001.parquet").to_pylist()[0]["median_s"] == 0.2
    assert writer.meta["tampered"] == [{"during": "victim fast", "found": writer.meta["tampered"][0]["found"]}]
    assert writer.look("next") == []  # put back, it is as written again


def test_a_part_added_is_set_aside_and_one_removed_written_again(writer):
    forged(writer.dir / "part-09999.parquet", impl="fast", median_s=1e-9)
    (writer.dir / "part-00002.parquet").unlink()
    found = writer.look()
    assert found == ["part-00002.parquet removed (written again from benchctl's rows)",
                     "part-09999.parquet added (set aside as .tampered-part-09999.parquet)"]
    df = storage.load_run(writer.dir)
    assert sorted(df["median_s"]) == [0.001, 0.002]


def test_the_metadata_rewritten_is_written_again_from_benchctls_copy(writer):
    (writer.dir / storage.RUN_FILE).write_text(json.dumps({"state": "complete", "run_id": "run-a"}))
    assert writer.look() == ["_run.json rewritten (written again from benchctl's copy)"]
    assert storage.run_meta(writer.dir)["environment"] == {"host": "h"}


def test_a_rewrite_that_keeps_the_bytes_is_no_change(writer):
    part = writer.dir / "part-00001.parquet"
    part.write_bytes(part.read_bytes())  # a new modification time, the same rows
    assert writer.look() == []


def test_a_finished_run_lists_its_parts_and_a_loader_skips_one_changed_or_added_after(writer):
    writer.finish()
    listed = storage.run_meta(writer.dir)[guard.DIGESTS]
    assert sorted(listed) == ["part-00001.parquet", "part-00002.parquet"]
    assert listed["part-00001.parquet"] == guard.digest(writer.dir / "part-00001.parquet")
    forged(writer.dir / "part-00002.parquet", impl="fast", median_s=1e-9)
    forged(writer.dir / "part-00003.parquet", impl="other", median_s=1e-9)
    with pytest.warns(UserWarning) as said:
        df = storage.load_run(writer.dir)
    assert list(df["median_s"]) == [0.002]
    messages = sorted(str(w.message) for w in said)
    assert "part-00002.parquet: changed after benchctl wrote it" in messages[0]
    assert "part-00003.parquet: benchctl did not write it" in messages[1]


def test_a_compacted_run_lists_the_merged_part(writer):
    writer.finish()
    merged = writer.compact()
    assert storage.run_meta(writer.dir)[guard.DIGESTS] == {merged.name: guard.digest(merged)}
    assert sorted(storage.load_run(writer.dir)["median_s"]) == [0.001, 0.002]


def test_a_run_written_before_digests_were_kept_loads_every_part(writer):
    writer.finish()
    meta = json.loads((writer.dir / storage.RUN_FILE).read_text())
    del meta[guard.DIGESTS]
    (writer.dir / storage.RUN_FILE).write_text(json.dumps(meta))
    forged(writer.dir / "part-00003.parquet", impl="other")
    assert len(storage.load_run(writer.dir)) == 3


def test_a_changed_row_is_an_error_that_says_what_was_found_and_keeps_its_message():
    columns = guard.as_changed(row(message="timed in pairs"), ["part-00001.parquet rewritten (...)"])
    assert columns["status"] == "error"
    assert columns["message"].startswith("the run's files were changed while this cell was measured: "
                                         "part-00001.parquet rewritten (...). Only benchctl writes them")
    assert columns["message"].endswith("; timed in pairs")


def test_a_watched_file_rewritten_or_made_is_put_back_as_the_run_found_it(writer, tmp_path):
    peaks, absent = tmp_path / "calibration.json", tmp_path / "none.json"
    peaks.write_text('{"cpu": {"read_gbps": 20.0}}')
    writer.guard.watch(peaks)
    writer.guard.watch(absent)
    peaks.write_text('{"cpu": {"read_gbps": 2000.0}}')
    absent.write_text("{}")
    assert writer.look() == [f"{peaks} rewritten (written back as the run found it)",
                             f"{absent} written (removed: there was none when the run started)"]
    assert peaks.read_text() == '{"cpu": {"read_gbps": 20.0}}' and not absent.exists()
    assert writer.look() == []


def test_a_part_edited_in_place_with_its_size_and_modification_time_kept_is_caught(writer):
    import os
    import struct
    part = writer.dir / "part-00001.parquet"
    before = part.stat()
    data = part.read_bytes()
    assert data.count(struct.pack("<d", 0.002)) >= 1
    with open(part, "r+b") as f:  # the same file, the same size: one float's bytes changed
        f.write(data.replace(struct.pack("<d", 0.002), struct.pack("<d", 0.02)))
    os.utime(part, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert part.stat().st_size == before.st_size and part.stat().st_mtime_ns == before.st_mtime_ns
    assert writer.look() == [
        "part-00001.parquet rewritten (set aside as .tampered-part-00001.parquet, written again from benchctl's rows)"]

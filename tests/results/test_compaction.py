"""A finished run compacted into one file reads the same, and merges at its end what benchctl wrote (a
full disk keeps the parts); a run never compacted still reads; a crash between the compacted file's rename
and the deletes never counts a row twice."""

from __future__ import annotations

import errno
import shutil

import pandas as pd
import pyarrow.parquet as pq
import pytest

from benchctl.results import compaction, storage


def write_run(root, n_parts: int):
    writer = storage.RunWriter(root, storage.new_run_id(), {})
    for i in range(n_parts):
        writer.write([{"op": "toy", "impl": f"i{i}", "pass": "forward", "status": "ok", "median_s": 0.1 * (i + 1)}])
    writer.finish()
    return writer


def test_compacting_a_run_keeps_every_row_in_one_file(tmp_path):
    writer = write_run(tmp_path, 5)
    before = storage.load_run(writer.dir).sort_values("impl").reset_index(drop=True)
    assert writer.compact() == writer.dir / compaction.COMPACTED
    assert [p.name for p in writer.dir.glob("part-*.parquet")] == [compaction.COMPACTED]
    after = storage.load_run(writer.dir).sort_values("impl").reset_index(drop=True)
    pd.testing.assert_frame_equal(before, after)
    assert list(after["median_s"].round(2)) == [0.1, 0.2, 0.3, 0.4, 0.5]


def test_parts_written_after_a_compaction_are_read_too(tmp_path):
    writer = storage.RunWriter(tmp_path, storage.new_run_id(), {})
    for impl in ("i0", "i1"):
        writer.write([{"op": "toy", "impl": impl, "pass": "forward", "status": "ok"}])
    writer.compact()
    writer.write([{"op": "toy", "impl": "late", "pass": "forward", "status": "ok"}])
    assert sorted(storage.load_run(writer.dir)["impl"]) == ["i0", "i1", "late"]
    writer.finish()  # its metadata lists the compacted file and the late part
    assert sorted(storage.load_run(writer.dir)["impl"]) == ["i0", "i1", "late"]
    writer.compact()
    assert sorted(storage.load_run(writer.dir)["impl"]) == ["i0", "i1", "late"]


def test_a_crash_before_the_old_parts_are_deleted_counts_no_row_twice(tmp_path):
    writer = write_run(tmp_path, 3)
    kept = tmp_path / "kept"
    shutil.copytree(writer.dir, kept)
    writer.compact()
    for part in kept.glob("part-*.parquet"):  # the parts as they were, beside the compacted file
        shutil.copy(part, writer.dir / part.name)
    assert sorted(storage.load_run(writer.dir)["impl"]) == ["i0", "i1", "i2"]


def test_a_run_of_one_part_is_left_alone(tmp_path):
    writer = write_run(tmp_path, 1)
    assert writer.compact() is None
    assert [p.name for p in writer.dir.glob("part-*.parquet")] == ["part-00001.parquet"]


def test_a_run_finished_with_compact_lists_only_the_merged_file_and_reads_the_same(tmp_path):
    writer = storage.RunWriter(tmp_path, storage.new_run_id(), {})
    for i in range(4):
        writer.write([{"op": "toy", "impl": f"i{i}", "pass": "forward", "status": "ok", "median_s": 0.1 * (i + 1)}])
    writer.finish(compact=True)
    assert [p.name for p in writer.dir.glob("part-*.parquet")] == [compaction.COMPACTED]
    assert list(storage.run_meta(writer.dir)["parts"]) == [compaction.COMPACTED]
    assert storage.changed_parts(writer.dir) == []
    assert list(storage.load_run(writer.dir).sort_values("impl")["median_s"].round(2)) == [0.1, 0.2, 0.3, 0.4]


def test_the_merge_at_the_end_takes_what_benchctl_wrote_not_a_part_rewritten_meanwhile(tmp_path):
    writer = storage.RunWriter(tmp_path, storage.new_run_id(), {})
    for impl, median in (("py", 0.2), ("cpp", 0.1)):
        writer.write([{"op": "toy", "impl": impl, "pass": "forward", "status": "ok", "median_s": median}])
    forged = storage.to_table([{"op": "toy", "impl": "py", "pass": "forward", "status": "ok", "median_s": 20.0,
                                "run_id": writer.run_id}])
    pq.write_table(forged, writer.dir / "part-00001.parquet")
    writer.finish(compact=True)
    rows = storage.load_run(writer.dir).set_index("impl")["median_s"]
    assert rows.to_dict() == {"py": 0.2, "cpp": 0.1}
    assert "part-00001.parquet rewritten" in " ".join(storage.run_meta(writer.dir)["tampered"][0]["found"])


def test_a_merge_that_cannot_be_written_keeps_the_parts_and_the_run(tmp_path, monkeypatch):
    writer = storage.RunWriter(tmp_path, storage.new_run_id(), {})
    for impl in ("py", "cpp"):
        writer.write([{"op": "toy", "impl": impl, "pass": "forward", "status": "ok", "median_s": 0.1}])

    def full_disk(table, path):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(compaction, "write_atomically", full_disk)
    with pytest.warns(UserWarning, match="cannot merge the parts of .*: No space left on device; they are kept"):
        writer.finish(compact=True)
    assert sorted(p.name for p in writer.dir.glob("part-*.parquet")) == ["part-00001.parquet", "part-00002.parquet"]
    assert storage.run_meta(writer.dir)["state"] == storage.RunState.COMPLETE
    assert sorted(storage.load_run(writer.dir)["impl"]) == ["cpp", "py"] and storage.changed_parts(writer.dir) == []


def test_a_damaged_compacted_file_is_skipped_with_a_warning_and_the_parts_after_it_read(tmp_path):
    """A compacted file cut short after it was written (a partial copy of the run) is no reason to stop: a loader
    warns of it and reads the parts after it, as it does beside any damaged part; where nothing else is left, the
    run holds no results (a one-line error at the command line)."""
    writer = storage.RunWriter(tmp_path, storage.new_run_id(), {})  # not finished: no digests listed
    for impl in ("i0", "i1"):
        writer.write([{"op": "toy", "impl": impl, "pass": "forward", "status": "ok"}])
    compacted = writer.compact()
    writer.write([{"op": "toy", "impl": "late", "pass": "forward", "status": "ok"}])
    compacted.write_bytes(compacted.read_bytes()[:300])
    assert [p.name for p in compaction.parts(writer.dir)] == [compaction.COMPACTED, "part-00003.parquet"]
    with pytest.warns(UserWarning, match="skipping unreadable results file .*part-00000.parquet"):
        assert list(storage.load_run(writer.dir)["impl"]) == ["late"]
    finished = write_run(tmp_path / "finished", 3)
    finished.compact().write_bytes(b"PAR1")
    with pytest.warns(UserWarning, match="skipping unreadable"), pytest.raises(FileNotFoundError, match="no results"):
        storage.load([finished.dir])

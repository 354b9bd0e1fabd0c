"""Baselines: one run per machine kind under a name; the one of NEW's kind is found, others refused."""

import json

import pytest

from benchctl.errors import UsageError
from benchctl.analysis import baselines
from benchctl.results import storage


def write_run(root, run_id, cpu, gpu=None, processes=3, asked=None, busy=None, other_cores=None):
    rows = [{"run_id": run_id, "op": "hoconv2d", "target": "module", "impl": "py", "device": "cpu",
             "dtype": "float32", "params": json.dumps({"batch_size": 8}), "pass": "forward", "status": "ok",
             "cpu_name": cpu, "gpu_name": gpu, "median_s": 1e-3, "samples_s": [1e-3] * 3, "processes": processes,
             "other_cores": other_cores}]
    if gpu:
        rows.append({**rows[0], "device": "cuda"})
    writer = storage.RunWriter(root, run_id, {**({"processes": asked} if asked else {}), "busy_stretch": busy})
    writer.write(rows)
    writer.finish()
    (writer.dir / "_report").mkdir()
    return writer.dir


def test_one_run_per_machine_kind_and_the_one_of_new_is_found(tmp_path):
    a = write_run(tmp_path, "20240101-000000-aaaaaa", "EPYC 7B13", "NVIDIA H100")
    b = write_run(tmp_path, "20240102-000000-bbbbbb", "Xeon 8480", "NVIDIA A100")
    c = write_run(tmp_path, "20240103-000000-cccccc", "EPYC 7B13", "NVIDIA H100")
    for run in (a, b, c):
        baselines.save("main", run, tmp_path)
    kept = baselines.saved(tmp_path, "main")
    assert sorted((k["kind"], k["run"]) for k in kept) == [
        ("EPYC 7B13 + NVIDIA H100", c.name), ("Xeon 8480 + NVIDIA A100", b.name)]  # c replaced a
    found = baselines.find("main", storage.load_run(a), tmp_path)["path"]
    assert found == tmp_path / "baselines" / "main" / "EPYC-7B13-NVIDIA-H100"
    assert storage.run_meta(found)["run_id"] == c.name and not (found / "_report").exists()


def test_a_machine_kind_without_a_baseline_is_refused_unless_asked(tmp_path):
    baselines.save("main", write_run(tmp_path, "20240101-000000-aaaaaa", "EPYC 7B13", "NVIDIA H100"), tmp_path)
    other = storage.load_run(write_run(tmp_path, "20240102-000000-bbbbbb", "Xeon 8480", "NVIDIA A100"))
    with pytest.raises(UsageError, match="has no run on Xeon 8480 \\+ NVIDIA A100 .*EPYC 7B13 \\+ NVIDIA H100"):
        baselines.find("main", other, tmp_path)
    assert baselines.find("main", other, tmp_path, any_kind=True)["path"].name == "EPYC-7B13-NVIDIA-H100"
    with pytest.raises(UsageError, match="no baseline named nightly"):
        baselines.find("nightly", other, tmp_path)
    with pytest.raises(UsageError, match="use letters"):
        baselines.save("../x", tmp_path, tmp_path)


def test_a_run_measured_in_one_process_is_not_kept_as_a_baseline(tmp_path):
    run = write_run(tmp_path, "20240101-000000-aaaaaa", "EPYC 7B13", processes=None)
    with pytest.raises(UsageError, match="measured its cells in 1 process\\(es\\); a baseline keeps 3 at least: "
                                         "run it with --processes 3"):
        baselines.save("main", run, tmp_path)
    assert baselines.saved(tmp_path, "main") == []


def test_a_run_asked_for_three_processes_whose_busy_machine_left_fewer_is_refused_for_that(tmp_path):
    run = write_run(tmp_path, "20240101-000000-aaaaaa", "EPYC 7B13", processes=2, asked=3)
    with pytest.raises(UsageError, match="1 of the 1 timed cells of .* kept samples from fewer than 3 processes "
                                         "\\(the others' were set aside as disturbed\\)"):
        baselines.save("main", run, tmp_path)
    assert baselines.saved(tmp_path, "main") == []


def test_a_run_other_work_shared_the_machine_with_is_not_kept_as_a_baseline(tmp_path):
    run = write_run(tmp_path, "20240101-000000-aaaaaa", "EPYC 7B13", busy={"cores": 1.0, "share": 0.48})
    with pytest.raises(UsageError, match="^other work kept about 1.0 cores busy through 48% of .*: a baseline keeps "
                                         "a run measured with nothing else running$"):
        baselines.save("main", run, tmp_path)
    assert baselines.saved(tmp_path, "main") == []
    run = write_run(tmp_path, "20240102-000000-bbbbbb", "EPYC 7B13", other_cores=1.0)  # a neighbour of one pass
    with pytest.raises(UsageError, match="^1 of the 1 timed passes of .* were timed beside other work \\(`busy`\\)"):
        baselines.save("main", run, tmp_path)
    baselines.save("main", write_run(tmp_path, "20240103-000000-cccccc", "EPYC 7B13", other_cores=0.03), tmp_path)
    assert [k["run"] for k in baselines.saved(tmp_path, "main")] == ["20240103-000000-cccccc"]


def test_a_baseline_saved_again_from_its_own_folder_is_refused_and_kept(tmp_path):
    baselines.save("main", write_run(tmp_path, "20240101-000000-aaaaaa", "EPYC 7B13"), tmp_path)
    [kept] = baselines.saved(tmp_path, "main")
    with pytest.raises(UsageError, match=r"is inside baseline main's folder for EPYC 7B13 \(.*\): it is kept there "
                                         "already"):
        baselines.save("main", kept["path"], tmp_path)
    assert baselines.saved(tmp_path, "main") == [kept] and len(storage.load_run(kept["path"])) == 1


@pytest.mark.parametrize("damaged", ["{not json", "[]"])
def test_a_run_whose_metadata_cannot_be_read_is_not_kept_as_a_baseline(tmp_path, damaged):
    run = write_run(tmp_path, "20240101-000000-aaaaaa", "EPYC 7B13", processes=None)
    (run / storage.RUN_FILE).write_text(damaged)
    with pytest.raises(UsageError, match=f"^cannot read the metadata of {run} \\(.*\\): not kept as a baseline$"):
        baselines.save("main", run, tmp_path)


@pytest.mark.parametrize("damaged", ["{not json", "[]", '{"name": "main"}'])
def test_a_damaged_baseline_record_is_skipped_with_a_warning_and_the_others_are_listed(tmp_path, damaged):
    for run_id, cpu in (("20240101-000000-aaaaaa", "EPYC 7B13"), ("20240102-000000-bbbbbb", "Xeon 8480")):
        baselines.save("main", write_run(tmp_path, run_id, cpu), tmp_path)
    record = tmp_path / "baselines" / "main" / "EPYC-7B13" / baselines.ABOUT
    record.write_text(damaged)
    with pytest.warns(UserWarning, match=f"^skipping {record}: not a baseline's record \\(name, kind, run, saved\\)$"):
        assert [b["kind"] for b in baselines.saved(tmp_path)] == ["Xeon 8480"]


def test_a_run_changed_after_it_was_written_is_not_kept_as_a_baseline(tmp_path):
    writer = storage.RunWriter(tmp_path, "20240101-000000-aaaaaa", {})
    for impl in ("py", "cpp"):  # a part a cell
        writer.write([{"op": "toy", "target": "t", "impl": impl, "device": "cpu", "dtype": "float32", "params": "{}",
                       "pass": "forward", "status": "ok", "median_s": 0.1, "samples_s": [0.1] * 6, "processes": 3}])
    writer.finish()
    (writer.dir / "part-00002.parquet").unlink()  # the cell that would have regressed
    with pytest.raises(UsageError, match=r"is not as benchctl wrote it \(.*part-00002.parquet: listed by the run's "
                                         r"metadata, and gone\): not kept as a baseline"):
        baselines.save("main", writer.dir, tmp_path)

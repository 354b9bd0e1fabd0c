"""The report page from real runs written to disk: files, tables, environment, failed cells listed."""

from __future__ import annotations

import base64
import io
import json
import re

import matplotlib.image
import numpy as np
import pytest

from benchctl.report import page as report
from benchctl.results import storage
from benchctl.errors import UsageError

ENV = {"host": "bench-box", "torch_version": "2.4.0", "cuda_version": "12.1", "cpu_name": "Xeon Gold",
       "gpu_name": "Tesla K80", "threads": 8}


def row(impl: str, device: str, pass_name: str, batch: int, status: str = "ok", op: str = "hoconv2d",
        target: str = "module", run_id: str = "run-a", env: dict | None = None) -> dict:
    base = {"run_id": run_id, **(ENV if env is None else env), "op": op, "target": target, "impl": impl,
            "device": device, "dtype": "float32", "params": json.dumps({"C": 3, "batch_size": batch}),
            "axis": "batch_size", "axis_value": float(batch), "batch_size": batch, "pass": pass_name,
            "status": status}
    if status != "ok":
        return {**base, "message": f"{impl} failed: {status} at batch {batch}"}
    median = {"py": 8e-3, "cpp": 2e-3}[impl] * batch / 8
    samples = list(median * np.random.default_rng(batch).lognormal(0, 0.02, 7))
    return {**base, "n": 7, "median_s": float(np.median(samples)), "samples_s": samples, "iqr_s": median * 0.02,
            "correct": True, "max_abs_err": 1e-6, "max_rel_err": 3e-7}


def write_run(root, run_id: str, rows: list[dict], meta: dict | None = None):
    writer = storage.RunWriter(root, run_id, meta or {})
    writer.write([{**r, "run_id": run_id} for r in rows])
    writer.finish()
    return writer.dir


def standard_rows(**kw) -> list[dict]:
    rows = [row(i, d, p, b, **kw) for i in ("py", "cpp") for d in ("cpu", "cuda")
            for p in ("forward", "backward") for b in (8, 16, 32)]
    return rows + [row("py", "cuda", "forward", 64, status="oom", **kw),
                   row("cuda", "cpu", "forward", 8, status="unavailable", **kw)]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return write_run(tmp_path_factory.mktemp("results"), "20240101-000000-aaaaaa", standard_rows())


@pytest.fixture(scope="module")
def told(run_dir):
    """One report of the standard run, shared (rendering charts is the slow part of these tests), and the
    steps it said it was doing as it built."""
    loaded = report.load_results([run_dir])
    steps: list[str] = []
    return report.build(loaded.rows, report.default_out_dir(loaded.folders), loaded.metas, doing=steps.append), steps


@pytest.fixture(scope="module")
def built(told):
    return told[0]


def test_the_build_says_each_section_it_draws_as_it_starts(told):
    built, steps = told
    assert len(built.sections) == 1  # hoconv2d's module target, on both devices
    # its time, speedup and roofline jobs and the machine's three, in one batch (those with nothing to draw count)
    assert steps == ["reading hoconv2d's rows (1 of 1)", *(f"drawing the charts ({i} of 6 done)" for i in range(7))]


def test_build_writes_html_markdown_and_figures(run_dir, built):
    out = run_dir / "_report"
    assert built.out_dir == out
    files = [*built.pages, *built.figures]
    names = {p.relative_to(out).as_posix() for p in files}
    assert {"index.html", "summary.md", "figures/hoconv2d-module-time.png", "figures/hoconv2d-module-time.svg",
            "figures/hoconv2d-module-speedup.png"} <= names
    assert all(p.exists() and p.stat().st_size > 0 for p in files)
    assert not any("roofline" in n for n in names)  # the rows carry no rates
    assert not any("machine" in n for n in names)  # nor bandwidth probes


def test_a_run_with_bandwidth_probes_gets_the_machine_figure(tmp_path):
    rows = [{**r, "mem_gbps": 30.0 + i, "timestamp": f"2026-11-22T16:0{i}:00+00:00"}
            for i, r in enumerate(row("py", "cpu", "forward", b) for b in (8, 16))]
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-ffffff", rows)])
    built = report.build(loaded.rows, tmp_path / "out", loaded.metas)
    assert [p.name for p in built.machine] == ["machine-bandwidth.png", "machine-bandwidth.svg"]
    assert set(built.machine) <= set(built.figures)
    assert "![machine memory bandwidth](figures/machine-bandwidth.png)" in (tmp_path / "out" / "summary.md").read_text()
    assert "memory bandwidth probes" in (tmp_path / "out" / "index.html").read_text()


def test_a_run_calibrated_by_copy_size_gets_the_working_set_figure(tmp_path):
    rows = [{**r, "bytes": 8e6 * b, "gbps": 4.0 * b, "pct_of_peak": 10.0} for r, b in
            ((row("py", "cpu", "forward", b), b) for b in (8, 16))]
    copies = [{"copy_bytes": 2 ** 20, "gbps": 150.0}, {"copy_bytes": 2 ** 29, "gbps": 30.0}]
    meta = {"peaks": {"cpu": {"gbps": 30.0, "gflops": 100.0, "levels": {}, "copy_sizes": copies}}}
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-eeeeee", rows, meta)])
    built = report.build(loaded.rows, tmp_path / "out", loaded.metas)
    assert [p.name for p in built.working_set] == ["working-set.png", "working-set.svg"]
    assert "![passes against a copy of their size](figures/working-set.png)" in (tmp_path / "out" / "summary.md").read_text()
    assert "against a copy of its size" in (tmp_path / "out" / "index.html").read_text()
    assert not report.build(loaded.rows, tmp_path / "older", loaded.metas, peaks={"cpu": {"gbps": 30.0}}).working_set


def test_html_embeds_decodable_images_and_has_the_tables(built):
    page = (built.out_dir / "index.html").read_text()
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 2  # time and speedup, embedded: the page needs no files beside it
    image = matplotlib.image.imread(io.BytesIO(base64.b64decode(images[0])), format="png")
    assert image.shape[0] > 300
    assert page.count("<table") == 4  # the fastest, environment, the operator's cells, its failed cells
    assert page.index("Fastest, by this run's speedups") < page.index("<h2>Environment")  # the answer first
    assert '<td><a href="#hoconv2d_module">hoconv2d / module</a></td><td>CPU forward</td>' in page
    for text in ("bench-box", "2.4.0", "Tesla K80", "Xeon Gold", "speedup vs py", "oom", "unavailable",
                 "py failed: oom at batch 64", "hoconv2d / module"):
        assert text in page
    assert 'href="figures/hoconv2d-module-time.svg"' in page


def test_table_has_medians_speedups_and_correctness(run_dir):
    rows = report.load_results([run_dir]).rows
    table = report.op_table(rows[rows["op"] == "hoconv2d"], "py")
    cpp = table[(table["impl"] == "cpp") & (table["device"] == "GPU") & (table["pass"] == "forward")]
    assert list(cpp["batch_size"]) == ["8", "16", "32"]
    assert cpp["speedup vs py"].str.rstrip("x").astype(float).between(3.5, 4.5).all()
    assert cpp["median ms"].astype(float).iloc[0] == pytest.approx(2.0, rel=0.05)
    assert cpp["correct"].str.startswith("yes").all()
    failed = table[table["status"] == "oom"]
    assert len(failed) == 1 and failed["median ms"].iloc[0] == ""


def test_the_table_names_a_gpu_row_timed_as_graph_replays(run_dir):
    rows = report.load_results([run_dir]).rows
    gpu = rows["device"] == "cuda"
    rows = rows.assign(timing_mode=np.where(gpu, "cuda_graph", "eager"), flush_l2=np.where(gpu, False, None))
    devices = set(report.op_table(rows[rows["op"] == "hoconv2d"], "py")["device"])
    assert devices == {"CPU", "GPU (cuda_graph)"}


def test_table_flags_noisy_cells_and_shows_peak_memory_and_os_work(tmp_path):
    rows = [{**row("py", "cpu", "forward", 8), "noisy": True, "peak_mem_bytes": 3 * 2**20, "page_faults": 9768.0,
             "sys_s": 0.0415},
            {**row("cpp", "cpu", "forward", 8), "noisy": False}]
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-aaaaaa", rows)])
    table = report.op_table(loaded.rows, "py").set_index("impl")
    assert table.loc["py", "status"] == "ok (noisy)" and table.loc["cpp", "status"] == "ok"
    assert table.loc["py", "peak MiB"] == "3.0" and table.loc["cpp", "peak MiB"] == ""
    assert (table.loc["py", "page faults"], table.loc["py", "OS ms"]) == ("9768", "41.5")
    assert table.loc["cpp", "OS ms"] == ""


def test_the_page_says_what_the_numbers_carry_first(tmp_path, built):
    rows = [{**row("py", "cpu", "forward", 8), "page_faults": 9768.0, "sys_s": 0.0415, "allocator": "system"},
            row("cpp", "cpu", "forward", 8)]
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-aaaaaa", rows)])
    made = report.build(loaded.rows, tmp_path / "out", loaded.metas)
    assert len(made.notes) == 1 and made.notes[0].text.startswith("1 of 2 CPU passes were mostly OS time")
    page = (tmp_path / "out" / "index.html").read_text()
    assert page.index("What the numbers carry") < page.index("Environment")
    assert "9,768 page faults): the system allocator gives a large buffer back" in page
    assert "<li><b>Mostly OS time.</b> 1 of 2 CPU passes" in page
    assert "<code>--allocator tcmalloc</code> keeps such memory" in page  # the note's command, as code
    markdown = (tmp_path / "out" / "summary.md").read_text()
    assert "- **Mostly OS time.** 1 of 2 CPU passes were mostly OS time" in markdown
    assert " `--allocator tcmalloc` keeps" in markdown
    assert built.notes == () and "What the numbers carry" not in (built.out_dir / "index.html").read_text()


def test_table_says_which_cells_were_measured_on_a_slow_machine(tmp_path):
    rows = [{**row("py", "cpu", "forward", 8), "canary_ratio": 1.52, "stop": "disturbed"},
            {**row("cpp", "cpu", "forward", 8), "canary_ratio": 1.52, "noisy": True},
            {**row("py", "cpu", "forward", 16), "canary_ratio": 1.04}]
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-aaaaaa", rows)])
    status = report.op_table(loaded.rows, "py").set_index(["impl", "batch_size"])["status"]
    assert status[("py", "8")] == "ok (disturbed, slow machine)" and status[("cpp", "8")] == "ok (noisy, slow machine)"
    assert status[("py", "16")] == "ok"  # within 5% of its calibrated time
    timed = loaded.rows.assign(at_speed_s=[loaded.rows["median_s"].iloc[0] / 1.86, None, None])
    status = report.op_table(timed, "py").set_index(["impl", "batch_size"])["status"]
    assert status[("py", "8")] == "ok (disturbed, slow machine: 1.86x its time at speed)"


def test_table_gives_the_speedup_in_each_state_where_the_two_read_apart(tmp_path):
    """lstm_cell's cpp forward at B=256 on the 2-core VM: 2.04x over py at speed, about 3x in a slow phase."""
    cpp = {**row("cpp", "cpu", "forward", 8), "canary_ratio": 1.2, "paired_with": "py", "paired_speedup": 2.89}
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-aaaaaa", [row("py", "cpu", "forward", 8), cpp])])
    held = loaded.rows.assign(earlier_speedups=[(), (3.0, 3.1)], other_state_speedups=[(), (2.02, 2.04, 2.07)])
    status = report.op_table(held, "py").set_index(["impl", "batch_size"])["status"]
    assert status[("cpp", "8")] == "ok (slow machine, speedup 2.04x at speed, 3.00x in a slow phase)"
    assert status[("py", "8")] == "ok"
    near = held.assign(other_state_speedups=[(), (2.7, 2.8)])  # within 15%: one number
    assert report.op_table(near, "py").set_index(["impl", "batch_size"])["status"][("cpp", "8")] == "ok (slow machine)"


def test_markdown_lists_failed_cells_and_links_charts(built):
    md = (built.out_dir / "summary.md").read_text()
    assert "![hoconv2d / module time](figures/hoconv2d-module-time.png)" in md
    assert "Passes: 24 ok, 1 oom, 1 unavailable." in md  # a row is a pass of a cell: 14 cells, 26 passes
    answer = md[md.index("## Fastest, by this run's speedups"):md.index("## Environment")]
    assert answer.split("\n\n")[1].splitlines()[2:] == [
        f"| hoconv2d / module | {d} {p} | cpp at every batch_size (4.00x py) |"
        for d in ("CPU", "GPU") for p in ("forward", "backward")]  # under its header, a row per device and pass
    assert answer.split("\n\n")[2].startswith("*Each speedup is over its operator's baseline")
    assert "### Cells without a time (1)" in md
    assert "| GPU | forward | C=3 | batch_size=64 | py | oom | py failed: oom at batch 64 |" not in md  # C fixed
    assert "| GPU | forward |  | batch_size=64 | py | oom | py failed: oom at batch 64 |" in md
    # an implementation that ran nowhere on the CPU: one line, no row in either table
    assert "*cuda on cpu: not available here (1 cell recorded unavailable: cuda failed: unavailable at batch 8)*" in md
    assert "| cuda | unavailable |" not in md
    assert "| run-a " not in md and "20240101-000000-aaaaaa" in md


def test_environment_falls_back_to_run_json(tmp_path):
    rows = [row("py", "cpu", "forward", 8, env={})]
    folder = write_run(tmp_path, "20240101-000000-bbbbbb", rows, {"host": "from-meta", "torch_version": "2.5"})
    loaded = report.load_results([folder])
    (env,) = report.environment(loaded.rows, loaded.metas)
    assert env["host"] == "from-meta" and env["torch"] == "2.5" and env["GPU"] == "unknown"


def test_environment_is_read_where_benchctl_run_puts_it(tmp_path):
    meta = {"environment": {"host": "nested-host", "gpu_name": "H100", "threads": 16}}
    folder = write_run(tmp_path, "20240101-000000-bbbbbb", [row("py", "cpu", "forward", 8, env={})], meta)
    loaded = report.load_results([folder])
    (env,) = report.environment(loaded.rows, loaded.metas)
    assert (env["host"], env["GPU"], env["threads"]) == ("nested-host", "H100", "16")


def test_environment_says_none_where_the_run_recorded_none(tmp_path):
    """A machine without a GPU records gpu_name None: its table says none, not unknown (which stays for a fact the
    run never recorded)."""
    meta = {"environment": {"gpu_name": None, "gpu_driver": None, "cuda_version": None}}
    folder = write_run(tmp_path, "20240101-000000-bbbbbb", [row("py", "cpu", "forward", 8, env={})], meta)
    loaded = report.load_results([folder])
    (env,) = report.environment(loaded.rows, loaded.metas)
    assert (env["GPU"], env["driver"], env["CUDA"], env["allocator"]) == ("none", "none", "none", "unknown")
    assert env["state"] == "complete"


def test_environment_shows_the_rounds_a_run_pooled(tmp_path):
    rows = [row("py", "cpu", "forward", 8, env={"rounds": 3})]
    folder = write_run(tmp_path, "20240101-000000-cccccc", rows, {"rounds": 3})
    loaded = report.load_results([folder])
    (env,) = report.environment(loaded.rows, loaded.metas)
    assert env["rounds"] == "3"


def test_environment_shows_the_runs_memory_bandwidth(tmp_path):
    rows = [{**row("py", "cpu", "forward", b), "mem_gbps": g} for b, g in ((1, 30.0), (2, 24.5), (4, 41.0))]
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-dddddd", rows)])
    (env,) = report.environment(loaded.rows, loaded.metas)
    assert env["memory GB/s"] == "30.0 (24.5-41.0)"
    gpu = report.load_results([write_run(tmp_path, "20240101-000000-eeeeee", [row("py", "cuda", "forward", 1)])])
    assert report.environment(gpu.rows, gpu.metas)[0]["memory GB/s"] == "not probed"


LEVELS = {"L2": {"bytes": 2 << 20, "gbps": 150.0}, "L3": {"bytes": 32 << 20, "gbps": 160.0}}


def test_measured_peaks_come_from_run_json(tmp_path):
    rated = [{**row("py", "cpu", "forward", 8), "gbps": 3.0, "gflops": 9.0, "flops": 1e9, "bytes": 1e8}]
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-aaaaaa", rated,
                                            {"environment": {"peaks": {"cpu": {"gbps": 40, "gflops": 900,
                                                                               "levels": LEVELS,
                                                                               "canary_windows_s": [3e-4, 2e-4]}}}})])
    assert report.measured_peaks(loaded.rows, loaded.metas) == {"cpu": {"gbps": 40.0, "gflops": 900.0,
                                                                        "levels": LEVELS,
                                                                        "canary_windows_s": [3e-4, 2e-4]}}
    assert report.measured_peaks(loaded.rows, []) == {}  # a run without calibration has no roof
    plain = report.load_results([write_run(tmp_path, "20240101-000000-cccccc", [row("py", "cpu", "forward", 8)])])
    assert report.measured_peaks(plain.rows, plain.metas) == {}  # no rates: nothing to compare with


def test_several_runs_are_merged_into_a_dated_report_folder(tmp_path):
    root = tmp_path / "results"
    a = write_run(root, "20240101-000000-aaaaaa", standard_rows())
    b = write_run(root, "20240102-000000-bbbbbb", [row("cpp", "cpu", "forward", 64)],
                  {"host": "other"})
    loaded = report.load_results([a, b], root)
    assert set(loaded.rows["run_id"]) == {a.name, b.name}
    out = report.default_out_dir(loaded.folders, root)
    assert out.parent == root and out.name.startswith("report-")
    envs = report.environment(loaded.rows, loaded.metas)
    assert [e["run"] for e in envs] == [a.name, b.name]


def test_a_cell_measured_in_two_merged_runs_shows_the_later_one(tmp_path):
    first = write_run(tmp_path, "20240101-000000-aaaaaa", [{**row("py", "cpu", "forward", 8), "mem_gbps": 30.0}])
    again = {**row("py", "cpu", "forward", 8), "median_s": 0.5, "mem_gbps": 40.0}
    second = write_run(tmp_path, "20240102-000000-bbbbbb", [again, {**row("cpp", "cpu", "forward", 8),
                                                                     "mem_gbps": 40.0}])
    loaded = report.load_results([second, first])
    built = report.build(loaded.rows, tmp_path / "out", loaded.metas)
    py = built.sections[0].table.set_index("impl").loc["py"]
    assert py["median ms"] == "500" and built.superseded == 1
    assert "1 older rows of cells measured again" in (tmp_path / "out" / "summary.md").read_text()
    # the first run's facts still come from its rows, which no table shows (it read "not probed")
    env = {e["run"]: e["memory GB/s"] for e in built.environment}
    assert env == {"20240101-000000-aaaaaa": "30.0 (30.0-30.0)", "20240102-000000-bbbbbb": "40.0 (40.0-40.0)"}


def test_latest_run_is_the_default(tmp_path):
    root = tmp_path / "results"
    write_run(root, "20240101-000000-aaaaaa", standard_rows())
    newest = write_run(root, "20240105-000000-cccccc", [row("py", "cpu", "forward", 8)])
    assert report.load_results([], root).folders == [newest.resolve()]
    with pytest.raises(FileNotFoundError):
        report.load_results([], tmp_path / "empty")


def test_operators_can_be_selected_and_unknown_ones_are_usage_errors(tmp_path):
    rows = standard_rows() + [row("py", "cpu", "forward", 8, op="lstm_cell", target="op")]
    folder = write_run(tmp_path, "20240101-000000-aaaaaa", rows)
    loaded = report.load_results([folder])
    built = report.build(loaded.rows, tmp_path / "out", loaded.metas, ops=["lstm_cell"])
    assert [s.title for s in built.sections] == ["lstm_cell"]
    with pytest.raises(UsageError, match="no results for 'nope'"):
        report.build(loaded.rows, tmp_path / "out2", loaded.metas, ops=["nope"])


def test_baseline_falls_back_with_a_note_when_py_is_absent(tmp_path):
    rows = [r for r in standard_rows() if r["impl"] != "py"]
    folder = write_run(tmp_path, "20240101-000000-aaaaaa", rows)
    loaded = report.load_results([folder])
    built = report.build(loaded.rows, tmp_path / "out", loaded.metas)
    (section,) = built.sections
    assert section.baseline == "cpp" and "'py' is not in these results" in section.note
    assert "&#x27;py&#x27; is not in these results" in (tmp_path / "out" / "index.html").read_text()
    with pytest.warns(UserWarning, match="baseline 'cuda' is not in these results; using 'cpp'"):
        other = report.build(loaded.rows, tmp_path / "out3", loaded.metas, baselines={"hoconv2d": "cuda"})
    assert other.sections[0].baseline == "cpp"  # cuda ran nowhere here: its one row is an unavailable line


def test_the_table_writes_how_far_a_speedup_moved_between_rounds(tmp_path):
    rows = [r for r in standard_rows() if r["device"] == "cpu" and r["pass"] == "forward" and r["status"] == "ok"]
    for r in rows:
        fast = r["impl"] == "cpp"
        r.update(round_medians_s=[0.0027, 0.0029, 0.0032] if fast else [0.003, 0.003, 0.003], median_s=0.003)
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-aaaaaa", rows)])
    table = report.op_table(loaded.rows, "py")
    assert set(table.loc[table["impl"] == "cpp", "speedup vs py"]) == {"1.03x (0.94-1.11)"}
    assert set(table.loc[table["impl"] == "py", "speedup vs py"]) == {"1.00x"}


def test_the_reference_stored_by_run_is_the_default_baseline(tmp_path):
    folder = write_run(tmp_path, "20240101-000000-aaaaaa", standard_rows(), {"references": {"hoconv2d": "cpp"}})
    loaded = report.load_results([folder])
    (section,) = report.build(loaded.rows, tmp_path / "out", loaded.metas).sections
    assert (section.baseline, section.note) == ("cpp", "")
    py_rows = section.table[section.table["impl"] == "py"]
    assert set(py_rows["speedup vs cpp"]) == {"0.25x", ""}  # py's 8 ms vs cpp's 2 ms; "" where py failed
    asked = report.build(loaded.rows, tmp_path / "out2", loaded.metas, baselines={"*": "py"})
    assert asked.sections[0].baseline == "py"


def test_stored_references_merge_runs_and_skip_damaged_entries():
    metas = [{"references": {"a": "loop", "b": "py"}}, {"references": "damaged"}, {"references": {"a": "bmm"}}]
    assert report.stored_references(metas) == {"a": "bmm", "b": "py"}


def test_table_shows_the_hosts_share_of_gpu_cells(tmp_path):
    rows = [{**row("py", "cuda", "forward", 8), "host_s": 0.0075}, row("cpp", "cuda", "forward", 8)]
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-aaaaaa", rows)])
    table = report.op_table(loaded.rows, "py").set_index("impl")
    assert (table.loc["py", "host ms"], table.loc["cpp", "host ms"]) == ("7.5", "")


def test_table_shows_the_machines_memory_bandwidth_of_cpu_cells(tmp_path):
    rows = [{**row("py", "cpu", "forward", 8), "mem_gbps": 41.26}, row("cpp", "cpu", "forward", 8)]
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-aaaaaa", rows)])
    table = report.op_table(loaded.rows, "py").set_index("impl")
    assert (table.loc["py", "machine GB/s"], table.loc["cpp", "machine GB/s"]) == ("41.3", "")


def test_a_run_over_two_gpu_kinds_gets_charts_for_each(tmp_path):
    rows = [row(i, "cuda", "forward", b, env={**ENV, "gpu_name": gpu}) for gpu in ("A100", "H100")
            for i in ("py", "cpp") for b in (8, 16)]
    rows += [row(i, "cpu", "forward", 8) for i in ("py", "cpp")]  # one CPU kind: no split there
    built = report.build(storage.load_run(write_run(tmp_path, "20240101-000000-aaaaaa", rows)), tmp_path / "out")
    titles = sorted(s.title for s in built.sections)
    assert titles == ["hoconv2d / module", "hoconv2d / module on A100", "hoconv2d / module on H100"]
    by_title = {s.title: s for s in built.sections}
    assert set(by_title["hoconv2d / module on H100"].table["device"]) == {"GPU"}
    assert (tmp_path / "out" / "figures" / "hoconv2d-module-H100-time.png").exists()


def test_a_device_where_nothing_ran_is_one_line_in_place_of_its_panels(tmp_path):
    cpu = [row(i, "cpu", p, b) for i in ("py", "cpp") for p in ("forward", "backward") for b in (8, 16)]
    gpu = [{**row(i, "cuda", p, b, status="unavailable"), "message": "no CUDA device"}
           for i in ("py", "cpp") for p in ("forward", "backward") for b in (8, 16)]
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-dddddd", cpu + gpu)])
    built = report.build(loaded.rows, tmp_path / "out", loaded.metas)
    [section] = built.sections
    assert section.absent == ("cuda: not available here (4 cells recorded unavailable: no CUDA device)",)
    assert not len(section.failures) and set(section.table["device"]) == {"CPU"}
    md = (tmp_path / "out" / "summary.md").read_text()
    assert "*cuda: not available here (4 cells recorded unavailable" in md
    section_md = md[md.index("## hoconv2d"):]
    assert "| GPU |" not in section_md and "cuda failed" not in section_md  # no table row or failure line


def test_table_shows_the_autotune_config_of_triton_cells(tmp_path):
    rows = [{**row("cpp", "cuda", "forward", 8), "impl": "triton", "best_config": "BLOCK=64, num_warps=4, num_stages=3"},
            row("py", "cuda", "forward", 8)]
    loaded = report.load_results([write_run(tmp_path, "20240101-000000-aaaaaa", rows)])
    table = report.op_table(loaded.rows, "py").set_index("impl")
    assert table.loc["triton", "best config"] == "BLOCK=64, num_warps=4, num_stages=3"
    assert table.loc["py", "best config"] == ""
    assert "best config" not in report.op_table(loaded.rows[loaded.rows["impl"] == "py"], "py")

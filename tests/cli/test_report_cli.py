"""`benchctl report` and `benchctl compare` through click's CliRunner on real runs in tmp_path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from benchctl.results import storage
from benchctl.cli import cli
from tests.results.test_storage import NOT_RESULTS, not_results


def timed(median: float, seed: int, n: int = 30) -> list[float]:
    return list(median * np.random.default_rng(seed).lognormal(0.0, 0.03, n))


def row(impl: str, median: float, seed: int, status: str = "ok", host: str = "box", batch: int = 8,
        processes: int | None = 3) -> dict:
    """A cell measured in three worker processes that agreed within 1% (`processes=None`: in one)."""
    out = {"host": host, "torch_version": "2.4.0", "op": "hoconv2d", "target": "module", "impl": impl,
           "device": "cpu", "dtype": "float32", "params": json.dumps({"batch_size": batch}), "axis": "batch_size",
           "axis_value": float(batch), "batch_size": batch, "pass": "forward", "status": status}
    if status == "ok":
        samples = timed(median, seed)
        out.update(samples_s=samples, median_s=float(np.median(samples)), iqr_s=median * 0.04, n=len(samples))
        if processes:
            out.update(processes=processes, process_spread=0.01)
    else:
        out["message"] = "CUDA extension not built"
    return out


def write_run(root: Path, run_id: str, rows: list[dict]) -> Path:
    writer = storage.RunWriter(root, run_id, {"host": rows[0]["host"]})
    writer.write([{**r, "run_id": run_id} for r in rows])
    writer.finish()
    return writer.dir


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path, Path]:
    root = tmp_path / "results"
    base = write_run(root, "20240101-000000-aaaaaa", [row("py", 10e-3, 1), row("cpp", 10e-3, 2),
                                                      row("cuda", 0, 0, status="unavailable")])
    new = write_run(root, "20240102-000000-bbbbbb", [row("py", 10e-3, 3), row("cpp", 12e-3, 4),
                                                     row("cuda", 0, 0, status="unavailable")])
    return root, base, new


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_report_defaults_to_the_latest_run_and_prints_what_it_wrote(runs):
    root, _, new = runs
    result = invoke("report", "--root", str(root))
    assert result.exit_code == 0, result.output
    *pages, charts = result.stdout.splitlines()
    assert [Path(p) for p in pages] == [new / "_report" / "index.html", new / "_report" / "summary.md",
                                        root / "history" / "index.html"]
    drawn = sorted((new / "_report" / "figures").iterdir())
    assert charts == f"{len(drawn) // 2} charts as PNG/SVG in {new / '_report' / 'figures'}" and len(drawn) >= 4
    assert "unavailable" in (new / "_report" / "summary.md").read_text()


def test_report_merges_runs_into_the_out_folder(runs, tmp_path):
    root, base, new = runs
    out = tmp_path / "merged"
    result = invoke("report", str(base), str(new), "--out", str(out), "--op", "hoconv2d")
    assert result.exit_code == 0, result.output
    page = (out / "index.html").read_text()
    assert base.name in page and new.name in page


def test_report_without_runs_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(cli, ["report", "--root", str(tmp_path / "none")])
    assert result.exit_code == 2
    assert "no runs found" in result.output and "Traceback" not in result.output


def test_report_of_an_unknown_operator_is_a_usage_error(runs):
    result = CliRunner().invoke(cli, ["report", "--root", str(runs[0]), "--op", "nope"])
    assert result.exit_code == 2 and "no results for 'nope'" in result.output


def test_compare_shows_the_regression_and_exits_zero_without_the_flag(runs):
    _, base, new = runs
    result = invoke("compare", str(base), str(new))
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if "slower" in line)
    change = re.search(r"([+-]\d+\.\d)% \[([+-]\d+),([+-]\d+)\]", line)
    assert 15 < float(change.group(1)) < 25  # cpp: about +20%, with its interval around it
    assert int(change.group(2)) <= float(change.group(1)) <= int(change.group(3))
    assert result.stdout.index("slower") < result.stdout.index("same")


def test_compare_leaves_cells_timed_in_neither_run_out_of_its_table_and_counts_them(runs):
    """cuda is unavailable in both runs: a CPU machine's comparison would otherwise list every CUDA cell."""
    _, base, new = runs
    result = invoke("compare", str(base), str(new))
    assert "cuda" not in result.stdout and "not timed" in result.stdout.splitlines()[-1]
    assert "1 slower, 1 same, 1 not timed; not listed: 1 timed in no run (--json has them)" in result.stdout
    cells = json.loads(invoke("compare", str(base), str(new), "--json").stdout)["cells"]
    assert [c["verdict"] for c in cells if c["impl"] == "cuda"] == ["not timed"]


def test_compare_counts_unsure_cells_by_reason_and_says_what_decides_more_where_most_are(tmp_path):
    """Two quick runs (one process each), 20% apart: unsure, as one process cannot tell 20% from the machine; the last
    lines say why, and what would decide."""
    base = write_run(tmp_path, "20240101-000000-aaaaaa", [row("py", 10e-3, 1, processes=None),
                                                          row("cpp", 5e-3, 2, processes=None)])
    new = write_run(tmp_path, "20240102-000000-bbbbbb", [row("py", 12e-3, 3, processes=None),
                                                         row("cpp", 6e-3, 4, processes=None)])
    lines = invoke("compare", str(base), str(new)).stdout.splitlines()
    assert lines[-2:] == ["2 unsure (2 one process)", "most cells are unsure: runs with --processes 3 (not --quick) on "
                          "a quiet machine decide more"]
    new = write_run(tmp_path, "20240103-000000-cccccc", [row("py", 10e-3, 5, processes=None),
                                                         row("cpp", 5e-3, 6, processes=None)])
    assert invoke("compare", str(base), str(new)).stdout.splitlines()[-1] == "2 same"  # none unsure: no hint


def test_compare_lists_a_cell_only_one_run_has_where_that_run_timed_it(tmp_path):
    base = write_run(tmp_path, "20240101-000000-aaaaaa", [row("py", 10e-3, 1)])
    new = write_run(tmp_path, "20240102-000000-bbbbbb", [row("py", 10e-3, 3), row("jit", 5e-3, 4),
                                                         row("cuda", 0, 0, status="unavailable")])
    table = invoke("compare", str(base), str(new)).stdout
    assert "jit" in table and "cuda" not in table
    assert table.splitlines()[-1] == "1 same, 2 only in new; not listed: 1 timed in no run (--json has them)"


def test_compare_says_a_device_and_dtype_every_cell_shares_once_in_its_title(runs, tmp_path):
    _, base, new = runs
    table = invoke("compare", str(base), str(new)).stdout
    header = next(line for line in table.splitlines() if "verdict" in line)
    assert "(cpu, float32)" in table.splitlines()[0]
    assert "dtype" not in header and "device" not in header and "against partner" not in header  # none paired
    mixed = write_run(tmp_path, "20240103-000000-cccccc", [row("py", 10e-3, 5), {**row("cpp", 12e-3, 6),
                                                                                  "dtype": "float64"}])
    header = next(line for line in invoke("compare", str(base), str(mixed)).stdout.splitlines() if "verdict" in line)
    assert "dtype" in header and "device" not in header


def test_compare_gives_in_each_row_only_the_params_its_operators_rows_set_apart(tmp_path):
    def sized(impl, median, seed, batch):
        return {**row(impl, median, seed, batch=batch), "params": json.dumps({"C": 3, "I": None, "batch_size": batch})}

    base = write_run(tmp_path, "20240101-000000-aaaaaa", [sized("py", 10e-3, 1, 8), sized("py", 20e-3, 2, 16)])
    new = write_run(tmp_path, "20240102-000000-bbbbbb", [sized("py", 10e-3, 3, 8), sized("py", 20e-3, 4, 16)])
    lines = invoke("compare", str(base), str(new)).stdout.splitlines()
    assert sorted(re.findall(r"batch_size=\d+", "\n".join(lines))) == ["batch_size=16", "batch_size=8"]
    assert not any("C=3" in line or "I=" in line for line in lines[:-2])  # not in the rows: under the table
    assert lines[-2] == "params every row of an operator shares: hoconv2d/module C=3"
    one, other = (write_run(tmp_path, f"2024010{d}-000000-cccccc", [sized("py", 10e-3, d, 8)]) for d in (3, 4))
    lines = invoke("compare", str(one), str(other)).stdout.splitlines()
    assert "params" not in next(line for line in lines if "verdict" in line)  # one cell: its params said once
    assert lines[-2] == "params every row of an operator shares: hoconv2d/module C=3 batch_size=8"


def test_compare_fails_on_regression_with_the_flag(runs):
    _, base, new = runs
    result = CliRunner().invoke(cli, ["compare", str(base), str(new), "--fail-on-regression"])
    assert result.exit_code == 1
    assert "1 cell(s) slower or broken" in result.stderr
    same = CliRunner().invoke(cli, ["compare", str(base), str(base), "--fail-on-regression"])
    assert same.exit_code == 0


def test_compare_json_is_machine_readable(runs):
    _, base, new = runs
    result = invoke("compare", str(base), str(new), "--json", "--threshold", "0.1")
    data = json.loads(result.stdout)
    assert data["counts"]["slower"] == 1 and data["threshold"] == 0.1
    cpp = data["cells"][0]
    assert cpp["impl"] == "cpp" and cpp["verdict"] == "slower" and 1.1 < cpp["ratio_low"] < cpp["ratio_high"]


def test_compare_says_why_a_one_process_change_is_unsure_and_does_not_fail(tmp_path):
    base = write_run(tmp_path, "20240101-000000-aaaaaa", [row("cpp", 10e-3, 2, processes=None)])
    new = write_run(tmp_path, "20240102-000000-bbbbbb", [row("cpp", 12e-3, 4, processes=None)])
    result = CliRunner().invoke(cli, ["compare", str(base), str(new), "--fail-on-regression"])
    assert result.exit_code == 0 and "unsure (one process)" in result.stdout
    assert ("1 of 1 cells timed in both runs were unsure: --fail-on-regression passes them, so a regression among them "
            "would not fail this check") in " ".join(result.stderr.split())
    plain = CliRunner().invoke(cli, ["compare", str(base), str(new)])  # no gate: the table says it
    assert plain.exit_code == 0 and "were unsure" not in plain.stderr


def test_compare_warns_when_hosts_differ(tmp_path):
    base = write_run(tmp_path, "20240101-000000-aaaaaa", [row("py", 10e-3, 1, host="laptop")])
    new = write_run(tmp_path, "20240102-000000-bbbbbb", [row("py", 10e-3, 2, host="server")])
    result = invoke("compare", str(base), str(new))
    assert result.exit_code == 0
    assert "warning" in result.stderr and "host: laptop -> server" in result.stderr
    assert "warning" not in invoke("compare", str(base), str(base)).stderr


def test_compare_with_a_saved_baseline_of_the_same_machine_kind(runs):
    root, base, new = runs
    saved = invoke("baseline", "save", "main", str(base), "--root", str(root))
    assert saved.exit_code == 0 and "baseline main for unknown machine" in saved.stdout
    assert "main" in invoke("baseline", "list", "--root", str(root)).stdout
    result = CliRunner().invoke(cli, ["compare", "--baseline", "main", str(new), "--root", str(root),
                                      "--fail-on-regression"])
    assert result.exit_code == 1 and "1 cell(s) slower or broken" in result.stderr
    assert "slower" in result.stdout and base.name in result.stdout
    wrong = CliRunner().invoke(cli, ["compare", "--baseline", "main", str(base), str(new), "--root", str(root)])
    assert wrong.exit_code == 2 and "takes 1 run, got 2" in wrong.stderr


@pytest.mark.parametrize("how, says", [("rewritten", "changed after benchctl wrote it"),
                                       ("removed", "listed by the run's metadata, and gone")])
def test_a_regression_gate_refuses_a_baseline_whose_rows_were_changed_after_it_was_written(tmp_path, how, says):
    """The part of the cell that regressed rewritten (here with the other cell's row) or removed from the baseline:
    the gate once judged the cells left, found none slower and passed, with a warning at most; now it refuses."""
    import pyarrow.parquet as pq

    root = tmp_path / "results"
    writer = storage.RunWriter(root, "20240101-000000-aaaaaa", {"host": "box"})
    for one in (row("py", 10e-3, 1), row("cpp", 10e-3, 2)):  # a part a cell, as a sweep writes them
        writer.write([one])
    writer.finish()
    new = write_run(root, "20240102-000000-bbbbbb", [row("py", 10e-3, 3), row("cpp", 12e-3, 4)])
    assert invoke("baseline", "save", "main", str(writer.dir), "--root", str(root)).exit_code == 0
    (part,) = (root / "baselines" / "main").glob("*/part-00002.parquet")
    if how == "removed":
        part.unlink()
    else:
        pq.write_table(pq.read_table(part.with_name("part-00001.parquet")), part)
    result = CliRunner().invoke(cli, ["compare", "--baseline", "main", str(new), "--root", str(root),
                                      "--fail-on-regression"])
    assert result.exit_code == 2, result.output
    assert re.search(rf"cannot compare \S+: \S+part-00002.parquet: {says}", " ".join(result.stderr.split())), \
        result.stderr


def test_compare_judges_a_cell_paired_in_both_runs_by_its_pairs_and_shows_their_change(tmp_path):
    """cpp took 1.2x longer against py while the machine ran 1.3x slower: one process a side, so only the
    pairs can say."""
    from tests.analysis.test_compare_pairs import as_timed, cell

    base = write_run(tmp_path, "20240101-000000-aaaaaa", [as_timed(cell(2.0, 1))])
    new = write_run(tmp_path, "20240102-000000-bbbbbb", [as_timed(cell(2.0 / 1.2, 2, slower=1.3, canary_s=390e-6))])
    table = invoke("compare", str(base), str(new))
    assert re.search(r"\+(19|20)\.\d% \[\+1\d,\+2\d\]", table.stdout)  # against py
    assert "slower (by its" in table.stdout and "pairs with py)" in table.stdout
    [found] = json.loads(invoke("compare", str(base), str(new), "--json").stdout)["cells"]
    assert (found["verdict"], found["by_pairs"], found["partner"]) == ("slower", True, "py")
    assert 1.1 < found["relative_low"] < found["relative"] < found["relative_high"] < 1.3


@pytest.mark.parametrize("kind", NOT_RESULTS)
@pytest.mark.parametrize("command", ["report", "compare", "history"])
def test_a_file_given_that_holds_no_results_is_a_warning_and_one_line(runs, tmp_path, command, kind):
    bad = not_results(tmp_path / "bad.parquet", kind)
    result = CliRunner().invoke(cli, [command, *([str(runs[1])] if command == "compare" else []), str(bad)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    readable = kind in ("other columns", "empty frame")
    assert lines[0].startswith(f"warning: skipping {bad}: not a results file" if readable else
                               f"warning: skipping unreadable results file {bad}: ")
    assert lines[1:] == [f"error: no results in {bad}"]


def test_baseline_save_of_a_run_without_results_says_why_in_the_tool_s_own_lines(tmp_path):
    root = tmp_path / "results"
    run = write_run(root, "20240101-000000-aaaaaa", [row("py", 10e-3, 1)])
    part = run / "part-00001.parquet"
    not_results(part, "other columns")
    result = CliRunner().invoke(cli, ["baseline", "save", "main", str(run), "--root", str(root)])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"warning: skipping {part}: not a results file (missing columns: op, target, impl, device, dtype, params, "
        "pass, status)", f"error: no results in {run} to keep as a baseline"]
    not_results(part, "truncated")
    result = CliRunner().invoke(cli, ["baseline", "save", "main", str(run), "--root", str(root)])
    assert result.exit_code == 2 and "UserWarning" not in result.output
    assert result.stderr.startswith(f"warning: skipping unreadable results file {part}: ")


@pytest.mark.parametrize("asked, message", [
    ("nosuch", "--baseline 'nosuch': no results for implementation 'nosuch'; these results have: cpp, cuda, py"),
    ("hoconv2d=nosuch", "--baseline 'hoconv2d=nosuch': no results for implementation 'nosuch'; these results have: "
                        "cpp, cuda, py"),
    ("nosuchop=py", "--baseline 'nosuchop=py': no results for operator 'nosuchop'; these results have: hoconv2d"),
])
def test_report_baseline_that_names_nothing_in_the_results_is_an_error(runs, asked, message):
    result = CliRunner().invoke(cli, ["report", str(runs[2]), "--baseline", asked])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == f"error: {message}"


def test_report_baseline_an_operator_lacks_is_a_warning_naming_the_one_used(tmp_path):
    run = write_run(tmp_path, "20240101-000000-aaaaaa", [row("py", 10e-3, 1), row("cpp", 8e-3, 2),
                                                         {**row("py", 10e-3, 3), "op": "lstm_cell"}])
    result = CliRunner().invoke(cli, ["report", str(run), "--baseline", "cpp"])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "warning: lstm_cell / module: baseline 'cpp' is not in these results; using 'py'"]


def test_compare_fail_on_regression_with_no_cell_in_both_runs_is_an_error(tmp_path):
    base = write_run(tmp_path, "20240101-000000-aaaaaa", [row("py", 10e-3, 1, batch=8)])
    new = write_run(tmp_path, "20240102-000000-bbbbbb", [row("py", 10e-3, 2, batch=16)])
    plain = CliRunner().invoke(cli, ["compare", str(base), str(new)])
    assert plain.exit_code == 0 and "1 only in base, 1 only in new" in plain.stdout
    result = CliRunner().invoke(cli, ["compare", str(base), str(new), "--fail-on-regression"])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == (f"error: no cell was in both runs ({new} vs {base}): nothing to judge "
                                              "for --fail-on-regression")


def test_the_report_of_one_run_holds_its_paired_speedups_against_the_runs_before_it_in_its_folder(tmp_path):
    def paired_run(run_id: str, speedup: float) -> list[dict]:
        cpp = {**row("cpp", 5e-3, 2), "paired_with": "py", "impl_code": "aaaa", "partner_code": "bbbb",
               "paired_speedup": speedup, "paired_ci_lo": speedup * 0.99, "paired_ci_hi": speedup * 1.01}
        return [row("py", 10e-3, 1), cpp]

    root = tmp_path / "results"
    write_run(root, "20240101-000000-aaaaaa", paired_run("20240101-000000-aaaaaa", 3.0))
    last = write_run(root, "20240102-000000-bbbbbb", paired_run("20240102-000000-bbbbbb", 2.0))
    result = CliRunner().invoke(cli, ["report", str(last)])
    assert result.exit_code == 0, result.output
    summary = (last / "_report" / "summary.md").read_text()
    assert ("- **Speedups against the earlier runs (↻).** 1 of 1 paired speedups measured before (in up to 1 earlier "
            "run(s) of the same code on this machine, in the same state") in summary
    assert "2.00x (1.98-2.02x) here, 3.00x before (median 3.00x)" in summary

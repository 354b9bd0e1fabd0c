"""`benchctl history` on a synthetic history on disk: the steps table names the commit and the change with
its verdict, --json carries every point in commit order, the filters apply, and no match is one line."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchctl.cli import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from history_runs import COMMITS, STEP_AT, write_history  # noqa: E402


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    base = tmp_path_factory.mktemp("history")
    return base / "results", write_history(base / "results", base / "repo")


def invoke(*args: str):
    return CliRunner().invoke(cli, ["history", *args], env={"COLUMNS": "250"})


def test_the_steps_table_names_the_commit_and_the_change(written):
    root, shas = written
    result = invoke("--root", str(root))
    assert result.exit_code == 0, result.output
    (line,) = [l for l in result.output.splitlines() if shas[STEP_AT][:8] in l and "slower" in l]
    assert shas[STEP_AT - 1][:8] in line and f"change {STEP_AT}" in line and "2.00x slower" in line
    assert (root / "history" / "index.html").is_file()
    row = next(l for l in result.output.splitlines() if "silu" in l)  # the history table's, first
    assert row.rstrip(" │").endswith("(1)")  # "latest code ms": no digest, so the latest run alone
    assert "1 step(s): 0 where the cell's code changed, 0 at commits that did not touch it, 1 where a side does " \
           "not record its code" in " ".join(result.output.split())  # these rows carry no digest


def test_json_has_every_point_in_commit_order_and_the_step(written, tmp_path):
    root, shas = written
    result = invoke("--root", str(root), "--json", "--out", str(tmp_path / "page"))
    data = json.loads(result.stdout)
    (series,) = data["series"]
    assert [p["commit"] for p in series["points"]] == shas and series["git_ordered"]
    (step,) = data["steps"]
    assert (step["before"], step["after"], step["verdict"]) == (shas[STEP_AT - 1], shas[STEP_AT], "slower")
    assert 1.8 < step["ratio_low"] < step["ratio"] < step["ratio_high"] < 2.2
    assert step["phases_apart"] is False and step["code_changed"] is None  # no canary or digest in these rows
    assert step["despite"] is None  # a 2x step: nothing outgrown (verdict.GROSS)
    assert Path(data["page"]) == tmp_path / "page" / "index.html" and len(series["points"]) == COMMITS


def test_a_step_the_machine_made_is_named_under_the_tables_and_in_json(tmp_path):
    root = tmp_path / "results"
    write_history(root, tmp_path / "repo", probed=True)  # the memory probe halved where the time doubled
    said = " ".join(invoke("--root", str(root)).output.split())
    assert ("1 of 1 cells' times follow the machine across their runs of the same code (Spearman, 6 runs or more, "
            "false discovery rate 5%): 1 the memory probe; the widest, silu/op py forward at "
            "batch_size=8:") in said
    assert "(rho -1.00 over 10 runs)" in said
    assert "the page draws them" in said
    # its one step is the machine's: counted, not in a table (the page folds it, --json lists it)
    assert ("1 step(s): 0 where the cell's code changed, 1 at commits that did not touch it (not listed here: the "
            "page and --json list them)") in said and "steps, newest first" not in said
    # the same code before and after the machine's step: its runs of the latest code span both levels
    row = next(l for l in invoke("--root", str(root)).output.splitlines() if "silu" in l)
    low, high = (float(v) for v in re.search(r"([\d.]+)-([\d.]+) \(10\)", row).groups())
    assert 1.8 < high / low < 2.2
    said = " ".join(invoke("--root", str(root)).output.split())
    assert ("latest code ms: the fastest and slowest of each cell's runs of its latest code (how many); were the runs "
            "alike, the next would land within the range of n of them (n-1)/(n+1) of the time (82% at 10)") in said
    (found,) = json.loads(invoke("--root", str(root), "--json").stdout)["follows"]
    assert found["probe"] == "memory probe" and found["rho"] == pytest.approx(-1.0)
    assert len(found["readings"]) == COMMITS and found["q"] < 0.05


def test_runs_given_put_the_page_beside_them(written):
    root, shas = written
    first, second = sorted(p for p in root.iterdir() if p.name.startswith("2024"))[:2]
    result = invoke(str(first), str(second), "--json")
    data = json.loads(result.stdout)
    assert Path(data["page"]) == root.resolve() / "history" / "index.html"
    assert len(data["series"][0]["points"]) == 2


def test_filters_that_match_nothing_are_one_line(written):
    root, _ = written
    result = invoke("--root", str(root), "--impl", "cpp")
    assert result.exit_code == 2 and "no timed cell has --impl 'cpp' (it could match py)" in result.output
    assert "Traceback" not in result.output
    result = invoke("--root", str(root), "--pass", "fwd")
    assert result.exit_code == 2 and "unknown pass 'fwd'; choose from forward, backward" in result.output
    assert invoke("--root", str(root / "nowhere")).exit_code == 2

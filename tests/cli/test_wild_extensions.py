"""Extensions as they are written in the wild, through the command line from an --ops-dir: two
tutorial-style operators whose C++ both open TORCH_LIBRARY(wild_cpp, ...) from same-named csrc/ folders
under one Extension name, and a pybind11 module with the user's own autograd.Function
(tests/fixtures/wild_ops). benchctl's own process (this one, under CliRunner) never loads them."""

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchctl.cache import CACHE_ENV
from benchctl.cli import cli
from benchctl.results import storage

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "wild_ops"
FAST = ("--quick", "--min-time", "0.01", "--max-time", "0.1", "--warmup-time", "0")


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> dict:
    home = tmp_path_factory.mktemp("wild")
    shutil.copytree(FIXTURE, home / "ops")
    return {"ops": str(home / "ops"), "home": home, "env": {CACHE_ENV: str(home / "cache")}}


def invoke(user: dict, *args: str):
    return CliRunner(env=user["env"]).invoke(cli, [*args, "--ops-dir", user["ops"]])


def clash_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "namespace clash" in line]


def test_list_names_the_clash_in_one_line(user):
    result = invoke(user, "list")
    assert result.exit_code == 0, result.output
    [line] = clash_lines(result.stderr)
    assert line.startswith("warning: namespace clash: ")
    assert "lltm_src/csrc/lltm.cpp" in line and "muladd_src/csrc/muladd.cpp" in line
    assert "TORCH_LIBRARY(wild_cpp, ...)" in line and "TORCH_LIBRARY_FRAGMENT" in line


def test_build_gives_each_operator_its_own_library(user):
    result = invoke(user, "build", "muladd", "lltm")
    assert result.exit_code == 0, result.output
    assert len(clash_lines(result.stderr)) == 1
    built = [line.split()[1] for line in result.stdout.splitlines() if line.startswith(("built ", "loaded "))]
    assert built == ["benchctl_muladd_extension_cpp_cpu", "benchctl_lltm_extension_cpp_cpu"]
    libraries = {p.parent.name.rsplit("-", 1)[0] for p in (user["home"] / "cache").rglob("*.so")}
    assert libraries == set(built)


def test_check_and_run_both_in_one_sweep(user):
    check = invoke(user, "check", "cpp", "cpu", "--op", "muladd", "--op", "lltm")
    assert check.exit_code == 0, check.output
    assert "FAIL" not in check.output and check.stdout.count("pass") == 7  # opcheck for muladd only
    out = user["home"] / "results"
    run = invoke(user, "run", "all", "cpu", "--op", "muladd", "--op", "lltm", *FAST, "--out", str(out))
    assert run.exit_code == 0, run.output
    assert len(clash_lines(run.output)) == 1
    rows = storage.load(root=out)
    assert len(rows) == 24 and set(rows["status"]) == {"ok"} and rows["correct"].all()
    assert set(zip(rows["op"], rows["impl"])) == {(o, i) for o in ("muladd", "lltm") for i in ("py", "cpp")}


def test_a_pybind11_module_runs_without_glue(user):
    listed = json.loads(invoke(user, "list", "--json").stdout)
    assert {"operator": "gated_tanh", "implementation": "cpp", "device": "cpu", "available": True}.items() <= \
        next(r for r in listed if (r["operator"], r["implementation"]) == ("gated_tanh", "cpp")).items()
    check = invoke(user, "check", "cpp", "cpu", "--op", "gated_tanh", "--json")
    assert check.exit_code == 0, check.output
    rows = json.loads(check.stdout)
    assert {(r["kind"], r["dtype"]) for r in rows} == {("reference", "float32"), ("reference", "float64"),
                                                      ("gradcheck", "float64")}
    assert all(r["passed"] and r["op"] == "gated_tanh" for r in rows) and len(rows) == 5
    out = user["home"] / "pybind"
    run = invoke(user, "run", "py,cpp", "cpu", "--op", "gated_tanh", *FAST, "--out", str(out))
    assert run.exit_code == 0, run.output
    measured = storage.load(root=out)
    assert len(measured) == 12 and set(measured["status"]) == {"ok"} and measured["correct"].all()
    report = CliRunner(env=user["env"]).invoke(cli, ["report", "--root", str(out)])
    assert report.exit_code == 0, report.output
    assert "gated_tanh" in (storage.latest_run(out) / storage.REPORT_DIR / "summary.md").read_text()

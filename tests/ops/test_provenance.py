"""The code columns: rows of a user's operator carry the commit of its --ops-dir folder's repository (dirty
when a tracked file changed), rows of a built-in operator benchctl's own, and a folder outside any
repository gives none; a real `benchctl run` stamps them on every row."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchctl.cli import cli
from benchctl.measure.result import PassResult
from benchctl.ops import digest, provenance, registry
from benchctl.results import storage
from benchctl.sweep.driver import stamp

OPERATOR = (Path(__file__).resolve().parents[2] / "examples" / "ops" / "silu.py").read_text().replace(
    'name="silu"', 'name="provenance_probe"')


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    top = tmp_path_factory.mktemp("mine")
    (top / "ops").mkdir()
    (top / "ops" / "provenance_probe.py").write_text(OPERATOR)
    git(top, "init", "-q")
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "probe")
    registry.discover([top / "ops"], ["provenance_probe"])
    return top


def test_a_user_operator_carries_its_repository_commit(repo):
    provenance._folder_facts.cache_clear()
    facts = provenance.code_facts("provenance_probe")
    assert facts["code_sha"] == git(repo, "rev-parse", "HEAD") and facts["code_dirty"] is False
    assert Path(facts["code_repo"]) == repo.resolve() and facts["code_time"].startswith("20")
    (row,) = stamp([PassResult(op="provenance_probe", impl="py")], {"git_sha": "abc"})
    assert row["code_sha"] == facts["code_sha"] and row["git_sha"] == "abc"


def test_uncommitted_changes_make_it_dirty(repo):
    path = repo / "ops" / "provenance_probe.py"
    path.write_text(OPERATOR + "\n# an edit\n")
    provenance._folder_facts.cache_clear()
    try:
        assert provenance.code_facts("provenance_probe")["code_dirty"] is True
    finally:
        path.write_text(OPERATOR)
        provenance._folder_facts.cache_clear()


def test_a_builtin_operator_carries_benchctls_commit_and_an_unknown_one_nothing(builtin_ops):
    here = subprocess.run(["git", "-C", str(Path(__file__).parent), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    if not here:
        pytest.skip("benchctl is not in a git repository here")
    assert provenance.code_facts("hoconv2d")["code_sha"] == here
    assert provenance.code_facts("no_such_operator") == {}


def test_a_run_stamps_the_code_columns_on_every_row(repo, tmp_path):
    result = CliRunner().invoke(cli, ["run", "py", "cpu", "--op", "provenance_probe", "--ops-dir", str(repo / "ops"),
                                      "--batch-sizes", "2", "--param", "dim=8", "--passes", "forward",
                                      "--in-process", "--min-time", "0", "--warmup-time", "0", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = storage.load(root=tmp_path)
    assert set(rows["code_sha"]) == {git(repo, "rev-parse", "HEAD")} and set(rows["code_repo"]) == {str(repo.resolve())}
    assert set(rows["impl_code"]) == {digest.cell_code("provenance_probe", "op", "py")}  # ops/digest.py

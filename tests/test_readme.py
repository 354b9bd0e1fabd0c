"""The README's promises: its first two commands, its example operator (checked and run from a folder of
the user's own, as the README says), the result columns it names, and the marks its table explains."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchctl.cli import cli
from benchctl.results import storage

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
MAIN = ("bash scripts/setup.sh && .venv/bin/benchctl env --calibrate && .venv/bin/benchctl run all all --quick"
        " && .venv/bin/benchctl report")
TESTS = "bash scripts/setup.sh && .venv/bin/python -m pytest -q"


def code_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def example_operator() -> str:
    """The first python block under "Add your own operator"."""
    return code_blocks(README.split("## Add your own operator", 1)[1], "python")[0]


@pytest.fixture(scope="module")
def readme_ops_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's operator, written into a folder outside the repository as a user would."""
    folder = tmp_path_factory.mktemp("readme") / "my_ops"
    folder.mkdir()
    (folder / "silu.py").write_text(example_operator())
    return folder


def test_the_readme_starts_with_the_two_commands():
    bash = code_blocks(README, "bash")
    assert [b.strip() for b in bash[:2]] == [MAIN, TESTS]
    assert README.index(MAIN) < README.index(TESTS) < README.index("## ")


def test_the_example_operator_is_the_one_in_examples():
    assert example_operator() == (REPO / "examples" / "ops" / "silu.py").read_text()


def test_the_example_operator_passes_check(readme_ops_dir):
    result = CliRunner().invoke(cli, ["check", "all", "cpu", "--ops-dir", str(readme_ops_dir), "--op", "silu"])
    assert result.exit_code == 0, result.output
    for impl in ("py", "fused"):
        for check in ("reference", "gradcheck"):
            assert re.search(rf"silu .* {impl} .* cpu .* {check} .* pass", result.output), (impl, check)


def test_the_example_operator_runs_and_its_columns_are_the_readmes(readme_ops_dir, tmp_path):
    result = CliRunner().invoke(cli, ["run", "all", "cpu", "--ops-dir", str(readme_ops_dir), "--op", "silu",
                                      "--batch-sizes", "2,4", "--param", "dim=16", "--passes", "forward,backward",
                                      "--min-time", "0", "--warmup-time", "0", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    df = storage.load(root=tmp_path)
    assert len(df) == 8 and set(df["status"]) == {"ok"} and df["correct"].all()
    assert set(df["impl"]) == {"py", "fused"} and set(df["batch_size"]) == {2, 4}
    # The bytes formula: 2 * batch_size * dim * 4 bytes per forward; no backward count declared.
    fwd = df[df["pass"] == "forward"]
    assert (fwd["bytes"] == 2 * fwd["batch_size"] * 16 * 4).all() and (fwd["gbps"] > 0).all()
    assert (df[df["pass"] == "backward"]["bytes"] == 0).all()
    # Every column of the parquet files is named in the README, exactly.
    named = set(re.findall(r"`([a-z_0-9]+)`", README))
    assert set(df.columns) <= named, sorted(set(df.columns) - named)


def test_the_readmes_table_of_marks_has_every_mark_the_tables_write():
    from benchctl.analysis.summary import MARKS

    table = README.split("| mark | after | says | what to do |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[1] for line in table.strip().splitlines()[1:]]
    listed = [mark.strip().strip("`") for row in rows for mark in row.split(",")]
    assert sorted(listed) == sorted(MARKS)  # each once: `slow↑` and `slow↓` share a row

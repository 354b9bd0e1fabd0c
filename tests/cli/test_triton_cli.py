"""The Triton example from a folder of the user's own: `check` runs it in Triton's interpreter and says
so, `run` records its CPU cells unavailable with the reason, `list` shows it; the README's excerpt of it
is the example's own code."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchctl.cli import cli
from benchctl.ops import triton_support
from benchctl.results import storage

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ops" / "silu_triton.py"
pytestmark = pytest.mark.skipif(triton_support.missing() is not None, reason="triton is not installed")


@pytest.fixture(scope="module")
def user_ops(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("user") / "my_ops"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "silu_triton.py")
    return folder


def test_check_runs_the_triton_example_in_the_interpreter_and_says_so(user_ops):
    result = CliRunner().invoke(cli, ["check", "all", "cpu", "--ops-dir", str(user_ops), "--op", "silu_triton"])
    assert result.exit_code == 0, result.output
    for impl in ("triton", "triton-BLOCK256-w2", "triton-BLOCK1024-w4"):
        for dtype in ("float32", "float64"):
            assert re.search(rf"silu_triton .* {impl} +│ cpu .* reference .* {dtype} .* pass", result.output), impl
    assert re.search(r"triton +│ cpu .* gradcheck .* skipped", result.output)
    said = result.output.split(triton_support.CHECKED_WITH_INTERPRETER + ":", 1)[1].split("\n")[0]
    assert said.strip() == "silu_triton triton, silu_triton triton-BLOCK256-w2, silu_triton triton-BLOCK1024-w4"


def test_run_never_times_the_interpreter(user_ops, tmp_path):
    result = CliRunner().invoke(cli, ["run", "py,triton", "cpu", "--ops-dir", str(user_ops), "--op", "silu_triton",
                                      "--batch-sizes", "2", "--param", "dim=8", "--passes", "forward",
                                      "--min-time", "0", "--warmup-time", "0", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    df = storage.load(root=tmp_path).set_index("impl")
    assert df.loc["triton", "status"] == "unavailable"
    assert df.loc["triton", "message"] == triton_support.NOT_TIMED_ON_CPU
    assert df.loc["py", "status"] == "ok" and "best_config" in df.columns


def test_list_shows_the_triton_implementations_and_why_the_cpu_only_checks_them(user_ops):
    result = CliRunner().invoke(cli, ["list", "--json", "--ops-dir", str(user_ops)])
    assert result.exit_code == 0, result.output
    rows = [r for r in json.loads(result.stdout) if r["operator"] == "silu_triton" and r["device"] == "cpu"]
    by_impl = {r["implementation"]: r for r in rows}
    assert set(by_impl) == {"py", "py@compile", "triton", "triton-BLOCK256-w2", "triton-BLOCK1024-w4"}
    assert by_impl["triton"]["reason"] == triton_support.NOT_TIMED_ON_CPU and by_impl["py"]["available"]
    builtin = [r["operator"] for r in json.loads(result.stdout) if r["implementation"] == "triton"]
    assert {"lstm_cell", "naflex_posembed", "grid_sample", "hoconv2d"} <= set(builtin)


def test_the_readmes_triton_excerpt_is_the_examples_code():
    readme = (REPO / "README.md").read_text()
    section = readme.split("### Add a Triton implementation", 1)[1]
    excerpt = re.findall(r"^```python\n(.*?)^```", section, flags=re.S | re.M)[0]
    code = " ".join(EXAMPLE.read_text().split())
    for line in excerpt.splitlines():
        text = line.split("#")[0].strip()
        if text and text != "...":
            assert text in code or " ".join(text.split()) in code, line

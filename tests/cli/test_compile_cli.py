"""`benchctl run` with the @compile modifier through a worker process, as a user types it: a compiled
implementation beside its eager self, the compile columns in its rows and `recomp` in the end-of-run
table; `list` shows the modifier; a malformed one is one line and exit 2."""

import json

import pytest
from click.testing import CliRunner

from benchctl.cli import cli
from benchctl.results import storage


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def test_run_py_and_its_compiled_self_records_compile_time_recompiles_and_graph_breaks(tmp_path):
    result = invoke("run", "py,py@compile,py@compile:dynamic=false", "cpu", "--op", "lstm_cell",
                    "--batch-sizes", "1,2,3", "--param", "H=4", "--passes", "forward", "--processes", "1",
                    "--remeasure", "0", "--min-time", "0", "--max-time", "0.05", "--warmup-time", "0",
                    "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    df = storage.load(root=tmp_path).sort_values("timestamp")
    assert set(df["status"]) == {"ok"} and df["correct"].all()
    assert df[df["impl"] == "py"]["recompiles"].isna().all()  # eager: no compile columns
    auto = df[df["impl"] == "py@compile"].set_index("batch_size")
    static = df[df["impl"] == "py@compile:dynamic=false"].set_index("batch_size")
    assert (auto["compile_s"] > 0).all() and (static["compile_s"] > 0).all()
    assert list(static["recompiles"]) == [0, 1, 1]  # every new size, with dynamic=false
    assert list(static["dynamic_shapes"]) == [False, False, False]
    assert list(auto["recompiles"]) == [0, 1, 0]  # torch's default: the second size is compiled dynamic ...
    assert list(auto["dynamic_shapes"]) == [False, True, True]  # ... and serves the third
    # The sweep's running total, in the order the cells ran (per size: py, py@compile, then static).
    assert list(df[df["impl"] != "py"]["recompiles_total"]) == [0, 0, 1, 2, 2, 3]
    assert (df[df["impl"] != "py"]["graph_breaks"] == 0).all()
    assert "recomp" in result.output


def test_list_shows_the_modifier():
    result = invoke("list", "--json")
    rows = json.loads(result.stdout)
    compiled = {(r["operator"], r["device"]): r for r in rows if r["implementation"] == "py@compile"}
    assert compiled[("lstm_cell", "cpu")]["available"] is True
    assert compiled[("lstm_cell", "cpu")]["description"] == "torch.compile (mode default, dynamic auto) of py"
    assert "IMPL@compile[:MODE]" in invoke("list").output


@pytest.mark.parametrize("impls, message", [
    ("py@compile:fast", "unknown compile option 'fast'"),
    ("py@jit", "unknown modifier in 'py@jit'"),
    ("nope@compile", "unknown implementation 'nope@compile'"),
])
def test_a_malformed_modifier_is_one_line_and_exit_2(tmp_path, impls, message):
    result = invoke("run", impls, "cpu", "--op", "lstm_cell", "--out", str(tmp_path))
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output

"""Cells of compiled implementations run in process through Inductor (tiny shapes: each compile costs
seconds here): compile time outside the samples, recompiles at a new size, graph breaks, torch's recompile
limit turned into an error instead of eager code timed under a compiled name."""

from pathlib import Path

import pytest
import torch._dynamo.config

from benchctl.measure import correctness
from benchctl.measure.execute import Settings, run_cell
from benchctl.measure.timing import Policy
from benchctl.ops import lookup, registry
from benchctl.ops.cells import Cell

FAST = Settings(policy=Policy(warmup=1, warmup_time=0.0, min_samples=3, min_time=0.0, max_time=1.0),
                measure_memory=False, probe_bandwidth=False)
BREAKING = '''
import torch
from benchctl.ops.registry import Case, Operator, Target, randn, register

OP = register(Operator(name="compile_breaks", description="a graph break in the middle", params={"batch_size": 2},
                       targets=(Target("op", lambda case: {"x": randn(case, case.generator(), case.params["batch_size"], 3)}),)))


@OP.implementation("py", devices=("cpu",))
def py(x):
    y = x.sin()
    torch._dynamo.graph_break()
    return y * 2
'''


def cell(op: str, impl: str, batch_size: int, **params) -> Cell:
    return Cell.make(op, "op", impl, "cpu", "float32", {"batch_size": batch_size, **params}, passes=("forward",))


@pytest.fixture(scope="module")
def breaking_op(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder: Path = tmp_path_factory.mktemp("compile_ops")
    (folder / "compile_breaks.py").write_text(BREAKING)
    registry.discover([folder], ["compile_breaks"])
    return "compile_breaks"


def test_a_new_size_with_static_shapes_recompiles_in_the_first_call_not_in_the_samples(fixture_ops):
    first, second = (run_cell(cell("faulty", "py@compile:dynamic=false", b, dim=8), FAST)[0] for b in (2, 3))
    for row in (first, second):
        assert row["status"] == "ok" and row["correct"] is True and row["impl"] == "py@compile:dynamic=false"
        assert row["compile_s"] > max(row["samples_s"])  # compiling is the first call's, never a sample's
        assert row["graph_breaks"] == 0 and row["dynamic_shapes"] is False
    assert (first["recompiles"], second["recompiles"]) == (0, 1)
    assert second["recompiles_total"] == first["recompiles_total"] + 1


def test_graph_breaks_reach_the_row_with_the_first_reason(breaking_op):
    row = run_cell(cell(breaking_op, "py@compile", 2), FAST)[0]
    assert row["status"] == "ok" and row["correct"] is True
    assert row["graph_breaks"] == 1 and row["recompiles"] == 0
    assert row["graph_break_reason"].startswith("Call to `torch._dynamo.graph_break()`")


def test_past_the_recompile_limit_the_cell_fails_instead_of_timing_eager_code(fixture_ops):
    impl = "py@compile:reduce-overhead:dynamic=false"  # a variant of its own: its own cache and limit
    with torch._dynamo.config.patch(recompile_limit=1):
        fits = run_cell(cell("faulty", impl, 4, dim=8), FAST)[0]
        over = run_cell(cell("faulty", impl, 5, dim=8), FAST)[0]
    assert fits["status"] == "ok"
    assert over["status"] == "error" and over["recompiles"] == 1
    assert over["message"].startswith(f"RecompileLimit: torch.compile reached its recompile limit (1 compilations "
                                      f"of one function, torch._dynamo.config.recompile_limit) in {impl}")


def test_a_compiled_implementation_passes_gradcheck_which_retains_the_graph(fixture_ops):
    op = registry.get("faulty")
    assert correctness.gradcheck(op.target("op"), lookup.find(op, "py@compile"), "cpu", {"batch_size": 2, "dim": 3})

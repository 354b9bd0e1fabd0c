"""A sweep's plan: unavailable cells grouped by reason, and a failed build making its cells unavailable."""

import torch

from benchctl.ops import registry
from benchctl.ops.build import BuildError
from benchctl.ops.cells import Cell
from benchctl.sweep.config import SweepConfig
from benchctl.sweep.plan import Plan
from benchctl.sweep.preflight import Preflight
from benchctl.ops.registry import Case, Operator, Target, randn


def make_op() -> Operator:
    def inputs(case: Case):
        return {"x": randn(case, case.generator(), case.params["batch_size"], 3)}

    op = Operator("plan_toy", "d", {"batch_size": 2}, (Target("op", inputs),))

    def broken_build(device: str) -> float:
        raise BuildError("building plan_toy failed (1 error lines)", "x.cpp:1: error: nope", None)

    op.implementation("py")(lambda x: x * 2)
    op.implementation("ext", devices=("cpu",), build=broken_build)(lambda x: x * 2)
    return registry.register(op)


def test_failed_build_makes_cells_unavailable_with_the_compiler_reason():
    make_op()
    cells = [Cell.make("plan_toy", "op", impl, dev, "float32", {"batch_size": 2})
             for impl, dev in (("py", "cpu"), ("ext", "cpu"), ("py", "cuda"))]
    preflight = Preflight(cells)
    said = []
    preflight.build_extensions(said.append)
    assert any("x.cpp:1: error: nope" in s for s in said)
    runnable, reasons = preflight.availability()
    assert [c.impl for c in runnable] == ["py"]
    assert any("building plan_toy failed" in r for r in reasons)
    if not torch.cuda.is_available():
        assert any(r.startswith("no CUDA") for r in reasons)


def test_command_line_timing_overrides_the_config_and_the_rest_keeps_its_defaults():
    config = SweepConfig(timing={"min_time": 0.3, "warmup_time": 2.0, "warmup": 3})
    policy = Plan([], config, warmup_time=0.1).settings().policy
    assert (policy.min_time, policy.warmup_time, policy.warmup) == (0.3, 0.1, 3)
    assert Plan([]).settings().policy.warmup_time == 0.5

"""A sweep's preflight: unavailable cells grouped by reason, and a failed build making its cells unavailable."""

import torch

from benchctl.ops import registry
from benchctl.ops.build import BuildError
from benchctl.ops.cells import Cell
from benchctl.sweep.preflight import Preflight, unavailable_lines
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


def test_the_unavailable_cells_are_a_line_per_reason_naming_implementations_or_a_whole_device(monkeypatch):
    cells = [Cell.make("plan_toy", "op", impl, dev, "float32", {"batch_size": b})
             for impl, dev in (("py", "cpu"), ("ext", "cpu"), ("py", "cuda"), ("ext", "cuda")) for b in (2, 4)]
    preflight = Preflight(cells)
    why = {"ext": "the build failed", "cuda": "no CUDA device"}
    monkeypatch.setattr(preflight, "reason", lambda c: why["cuda"] if c.device == "cuda" else why.get(c.impl))
    assert unavailable_lines(*preflight.availability()) == [
        "2 cells unavailable here (ext on cpu): the build failed",
        "4 cells unavailable here (everything on cuda): no CUDA device",  # not py on cuda, ext on cuda
    ]
    monkeypatch.setattr(preflight, "reason", lambda c: why["cuda"] if (c.device, c.impl) == ("cuda", "ext") else None)
    assert unavailable_lines(*preflight.availability()) == ["2 cells unavailable here (ext on cuda): no CUDA device"]


def test_memory_is_busy_against_what_the_calibration_usually_read_not_its_best(monkeypatch):
    from benchctl.sweep import preflight

    monkeypatch.setattr(preflight.membw, "probe", lambda: 30.0)
    cells = [Cell.make("plan_toy", "op", "py", "cpu", "float32", {"batch_size": 2})]
    assert preflight.memory_bandwidth_now(cells, {"read_gbps": 63.0, "read_gbps_typical": 33.0}) == (30.0, None)
    now, warning = preflight.memory_bandwidth_now(cells, {"read_gbps": 63.0, "read_gbps_typical": 55.0})
    assert now == 30.0 and warning.startswith("memory bandwidth is 30 GB/s now, 55% of the 55 GB/s calibrated")
    assert preflight.memory_bandwidth_now(cells, {"read_gbps": 63.0})[1] is not None  # an older calibration: its best
    assert preflight.memory_bandwidth_now(cells, {}) == (30.0, None)  # not calibrated


def test_a_busy_machine_warning_names_the_threads_that_fit_in_the_cores_left():
    from benchctl.sweep.preflight import busy_warning

    default = busy_warning(1.0, 2, None)
    assert default.startswith("about 1.0 of 2 cores are busy with other work: torch's threads will wait")
    assert default.endswith("use --threads 1, the cores left free")
    assert busy_warning(1.4, 8, 8).endswith("use --threads 7, the cores left free")
    assert "the 1 thread(s) asked for fit in the cores left" in busy_warning(1.0, 2, 1)
    assert "no core is left free" in busy_warning(1.6, 2, 1) and "no core is left free" in busy_warning(2.0, 2, None)


def test_a_device_the_calibration_does_not_cover_is_named_with_what_the_sweep_goes_without():
    from benchctl.sweep.preflight import uncalibrated_warnings

    cells = [Cell.make("plan_toy", "op", "py", dev, "float32", {"batch_size": 2}) for dev in ("cuda", "cpu")]
    cpu, gpu = uncalibrated_warnings(cells, {})
    assert cpu.startswith("no calibration of this machine's CPU (`benchctl env --calibrate` first")
    assert "no `slow` mark on a pass timed in a slow phase" in cpu and cpu.endswith("no floor check")
    assert gpu.startswith("no calibration of this machine's GPU") and "% of the GPU's peak" in gpu
    assert uncalibrated_warnings(cells, {"cpu": {"canary_s": 2e-4}, "cuda": {}}) == [gpu]  # an empty one: none
    assert uncalibrated_warnings(cells[1:], {"cpu": {"canary_s": 2e-4}}) == []

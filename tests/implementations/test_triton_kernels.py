"""The seed stories' Triton kernels against the float64 reference, forward and every gradient: here in
Triton's interpreter on the smallest check case (it is slow), and under `-m gpu` on the GPU, compiled,
on every check case, then timed with their autotune config recorded."""

from __future__ import annotations

import sys

import pytest
import torch

from benchctl.measure import correctness
from benchctl.measure.execute import Settings, run_cell
from benchctl.measure.timing import Policy
from benchctl.ops import triton_support
from benchctl.ops.cells import Cell

pytestmark = pytest.mark.skipif(triton_support.missing() is not None, reason="triton is not installed")
TARGETS = [("lstm_cell", "cell"), ("naflex_posembed", "add"), ("grid_sample", "sample"),
           ("hoconv2d", "filter"), ("hoconv2d", "module")]
# hoconv2d's check cases (by index) and two channel counts past a power of two, for `triton-channels`
CHANNEL_CASES = [0, 1, 2, {"batch_size": 2, "C": 5, "H": 7, "W": 13, "k": 5},
                 {"batch_size": 1, "C": 9, "H": 5, "W": 6, "k": 3}]
FAST = Settings(policy=Policy(warmup=1, warmup_time=0.0, min_samples=3, min_time=0.0, max_time=1.0))


def _check(ops, op_name, target, device, dtype, params, impl="triton"):
    op = ops[op_name]
    params = op.check_cases[params] if isinstance(params, int) else params
    return correctness.check(op, op.target(target), op.implementations[impl], device, dtype, params)


@pytest.mark.parametrize("op_name, target", TARGETS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_triton_kernels_match_the_float64_reference_in_the_interpreter(builtin_ops, op_name, target, dtype):
    impl = builtin_ops[op_name].implementations["triton"]
    assert triton_support.interpreted(impl.kernels)  # no GPU here: this is Triton's interpreter on the CPU
    result = _check(builtin_ops, op_name, target, "cpu", dtype, builtin_ops[op_name].check_cases[0])
    assert result.passed, result.failures()
    names = {c.name for c in result.comparisons}
    assert "output" in names or "output0" in names
    assert any(n.startswith("grad ") for n in names)  # backward checked too
    assert result.max_rel_err <= correctness.TOLERANCE[dtype]


def test_the_triton_grid_sample_forms_no_image_gradient(builtin_ops):
    fn = builtin_ops["grid_sample"].implementations["triton"].fn
    image = torch.randn(1, 1, 4, 4, requires_grad=True)
    with pytest.raises(ValueError, match="must not require grad"):
        fn(image, torch.zeros(1, 2, 2, 2, requires_grad=True))


def test_a_wrong_triton_kernel_fails_the_check(builtin_ops, monkeypatch):
    """The check can fail: the lstm backward kernel's grad c dropped."""
    from benchctl_ops.lstm_cell import tri

    real = tri.lstm_pointwise_backward

    def wrong(*args):
        d_pre, d_c = real(*args)
        return d_pre, torch.zeros_like(d_c)

    monkeypatch.setattr(tri, "lstm_pointwise_backward", wrong)
    result = _check(builtin_ops, "lstm_cell", "cell", "cpu", torch.float64, builtin_ops["lstm_cell"].check_cases[0])
    assert not result.passed and "grad c" in result.failures()


@pytest.mark.gpu
@pytest.mark.parametrize("op_name, target", TARGETS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_triton_kernels_match_the_reference_on_the_gpu(builtin_ops, op_name, target, dtype):
    impl = builtin_ops[op_name].implementations["triton"]
    assert not triton_support.interpreted(impl.kernels)
    for params in builtin_ops[op_name].check_cases:
        result = _check(builtin_ops, op_name, target, "cuda", dtype, params)
        assert result.passed, (params, result.failures())


@pytest.mark.gpu
@pytest.mark.parametrize("op_name, target, params", [
    ("lstm_cell", "cell", {"batch_size": 64, "H": 256, "I": None}),
    ("naflex_posembed", "add", {"batch_size": 8, "D": 768, "grid": 32}),
    ("grid_sample", "sample", {"batch_size": 4, "C": 3, "image_size": 1024, "points": 64}),
    ("hoconv2d", "filter", {"batch_size": 4, "C": 3, "H": 64, "W": 64, "k": 5}),
])
def test_the_triton_kernels_are_timed_on_the_gpu(builtin_ops, op_name, target, params):
    rows = run_cell(Cell.make(op_name, target, "triton", "cuda", "float32", params), FAST)
    assert [r["status"] for r in rows] == ["ok"] * 3, [r.get("message") for r in rows]
    assert all(r["correct"] and r["median_s"] > 0 and r["compile_s"] > 0 for r in rows)
    if op_name == "lstm_cell":  # its forward is autotuned over two block widths
        assert rows[0]["best_config"].startswith("BLOCK=") and "num_warps=" in rows[0]["best_config"]


@pytest.mark.parametrize("case", CHANNEL_CASES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_triton_channels_tiles_every_channel_count_in_the_interpreter(builtin_ops, case, dtype):
    """`triton-channels` takes all of a sample's channels in one program, padded to a power of two (5 -> a
    tile of 8 with 3 masked, 9 -> 16) and fewer pixels for more channels: each tiling, on every check case
    and past a power of two, forward and both gradients against the float64 reference."""
    impl = builtin_ops["hoconv2d"].implementations["triton-channels"]
    assert triton_support.interpreted(impl.kernels)
    channels = (builtin_ops["hoconv2d"].check_cases[case] if isinstance(case, int) else case)["C"]
    tile = sys.modules[impl.fn.__module__].tile
    assert tile(channels) == {1: (1, 128), 2: (2, 128), 3: (4, 128), 5: (8, 64), 9: (16, 32)}[channels]
    result = _check(builtin_ops, "hoconv2d", "filter", "cpu", dtype, case, "triton-channels")
    assert result.passed, result.failures()
    assert {c.name for c in result.comparisons} >= {"output", "grad x", "grad weights"}
    assert result.max_rel_err <= correctness.TOLERANCE[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_triton_channels_matches_the_reference_and_is_timed_on_the_gpu(builtin_ops, dtype):
    for case in CHANNEL_CASES:
        result = _check(builtin_ops, "hoconv2d", "filter", "cuda", dtype, case, "triton-channels")
        assert result.passed, (case, result.failures())
    params = {"batch_size": 4, "C": 3, "H": 64, "W": 64, "k": 5}
    rows = run_cell(Cell.make("hoconv2d", "filter", "triton-channels", "cuda", str(dtype).split(".")[1], params), FAST)
    assert [r["status"] for r in rows] == ["ok"] * 3, [r.get("message") for r in rows]

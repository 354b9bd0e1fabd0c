"""grid_sample: the implementations against the float64 reference at a mid-size case (only output and
grid gradient compared, with a real margin), the extension's gradcheck and opcheck, layouts, and the
contract that no image gradient is ever formed or returned."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from benchctl.measure import correctness
from benchctl.ops import registry
from benchctl.ops.registry import Case
from support import require

registry.discover()
OP = registry.get("grid_sample")
PKG = importlib.import_module("benchctl_ops.grid_sample")
EXT = importlib.import_module("benchctl_ops.grid_sample.ext")
TARGET = OP.target("sample")
# The operator's odd shapes (padding band, C=1, C=4) plus a mid-size one where points are sparse.
CASES = [*OP.check_cases, {"batch_size": 2, "C": 3, "image_size": 96, "points": 16}]
DTYPES = (torch.float32, torch.float64)


def _available(name: str, device: str = "cpu") -> None:
    require(OP, name, device)


def _check(name: str, params: dict[str, Any], dtype: torch.dtype, device: str = "cpu", seed: int = 0):
    result = correctness.check(OP, TARGET, OP.implementations[name], device, dtype, params, seed)
    assert [c.name for c in result.comparisons] == ["output", "grad grid"]  # never an image gradient
    assert result.passed, result.failures()
    return result


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ["py", "py-imagegrad", "cpp"])
def test_matches_float64_reference_with_real_margins(name: str, dtype: torch.dtype) -> None:
    """At the mid-size case (the check cases are `check`'s: test_check_every_op.py), the comparisons
    this operator owes and a margin well inside the harness's gate."""
    _available(name)
    params = CASES[-1]
    for seed in (0, 1):
        result = _check(name, params, dtype, seed=seed)
        # Real margins: float32 lands far inside the 2e-4 gate, float64 at rounding level.
        assert result.max_rel_err < (2e-5 if dtype == torch.float32 else 1e-12)


def test_reference_is_not_trivial() -> None:
    ref = correctness.reference(OP, TARGET, CASES[-1])
    ref_outs, ref_grads = ref.outs, ref.grads
    assert ref_outs[0].abs().max() > 0.5 and ref_grads["grid"].abs().max() > 1.0
    assert (ref_outs[0] == 0).any(), "some points must fall fully in the zero padding"


def test_inputs_deterministic_and_static_image() -> None:
    case = Case(CASES[1], torch.float32, seed=3)
    a, b = TARGET.make_inputs(case), TARGET.make_inputs(case)
    assert torch.equal(a["image"], b["image"]) and torch.equal(a["grid"], b["grid"])
    assert not a["image"].requires_grad and a["grid"].requires_grad
    assert a["grid"].shape == (2, 6, 6, 2) and a["image"].shape == (2, 4, 9, 9)
    other = TARGET.make_inputs(Case(CASES[1], torch.float32, seed=4))
    assert not torch.equal(a["grid"], other["grid"])


def test_grid_points_avoid_cell_edges() -> None:
    """Points keep EDGE_MARGIN pixels from cell edges so float32 and float64 pick the same cell."""
    grid = TARGET.make_inputs(Case({**OP.params, "image_size": 64}, torch.float64))["grid"].detach()
    pixel = ((grid + 1) * 64 - 1) / 2
    frac = pixel - pixel.floor()
    assert frac.min() >= PKG.EDGE_MARGIN - 1e-9 and frac.max() <= 1 - PKG.EDGE_MARGIN + 1e-9
    assert pixel.min() < -1 and pixel.max() > 64, "the padding band is exercised"


def test_cpp_any_layout_and_non_square_image() -> None:
    _available("cpp")
    EXT.load("cpu")
    gen = torch.Generator().manual_seed(0)
    image = torch.randn(2, 3, 13, 21, generator=gen, dtype=torch.float64)
    grid = PKG.random_grid(gen, 2, 7, 13, 21)
    want = F.grid_sample(image, grid, align_corners=False)
    column_major = image.transpose(2, 3).contiguous().transpose(2, 3)
    for layout in (image, image.contiguous(memory_format=torch.channels_last), column_major):
        torch.testing.assert_close(EXT.grid_sample(layout, grid), want, rtol=0, atol=1e-13)


@pytest.mark.parametrize("channels", [1, 2, 3, 4, 5])
def test_cpp_grid_gradient_same_in_every_layout(channels: int) -> None:
    """float32 channels-last images of up to 4 channels take the row loads (grid_sample_rows.h), the
    others the gathers: both give ATen's grid gradient, with points in the zero padding and a last
    partial vector of points (7 x 9 per image)."""
    _available("cpp")
    EXT.load("cpu")
    gen = torch.Generator().manual_seed(channels)
    image = torch.randn(3, channels, 11, 17, generator=gen)
    grid = torch.cat([PKG.random_grid(gen, 3, 9, 11, 17)[:, :7], torch.full((3, 1, 9, 2), -5.0)], 1).float()
    grad_out = torch.randn(3, channels, 8, 9, generator=gen)
    want = torch.ops.aten.grid_sampler_2d_backward(grad_out, image, grid, 0, 0, False, [False, True])[1]
    assert want.abs().max() > 1.0 and (want[:, 7] == 0).all()  # some real gradient; the far points none
    backward = torch.ops.grid_sample.grid_sample_grid_backward
    for layout in (image, image.contiguous(memory_format=torch.channels_last)):
        torch.testing.assert_close(backward(grad_out, layout, grid), want, rtol=1e-5, atol=1e-5)


def test_cpp_gradcheck_float64() -> None:
    _available("cpp")
    assert correctness.gradcheck(TARGET, OP.implementations["cpp"], "cpu", OP.check_cases[0])
    assert correctness.gradcheck(TARGET, OP.implementations["cpp"], "cpu", CASES[-1])


def test_cpp_opcheck() -> None:
    _available("cpp")
    OP.implementations["cpp"].opcheck(Case(OP.check_cases[2], torch.float64))
    OP.implementations["cpp"].opcheck(Case(OP.params, torch.float32))


def test_cpp_rejects_an_image_that_needs_grad() -> None:
    _available("cpp")
    inputs = EXT.prepare(TARGET.make_inputs(Case(OP.check_cases[0], torch.float64)))
    with pytest.raises(ValueError, match="image must not require grad"):
        EXT.grid_sample(inputs["image"].requires_grad_(), inputs["grid"])


def test_prepare_gives_channels_last_copy() -> None:
    _available("cpp")
    inputs = TARGET.make_inputs(Case(CASES[-1], torch.float32))
    prepared = OP.implementations["cpp"].prepare(inputs)
    assert prepared["image"].is_contiguous(memory_format=torch.channels_last)
    assert prepared["grid"] is inputs["grid"] and torch.equal(prepared["image"], inputs["image"])


def test_imagegrad_keeps_image_gradient_off_the_inputs() -> None:
    """Repeated backward through py-imagegrad neither grows memory nor reaches the input image."""
    inputs = TARGET.make_inputs(Case(CASES[-1], torch.float64))
    impl = OP.implementations["py-imagegrad"]
    out = TARGET.call(impl.fn, inputs)
    grads = []
    for _ in range(2):
        grads.append(torch.autograd.grad(out, inputs["grid"], torch.ones_like(out), retain_graph=True)[0])
    assert inputs["image"].grad is None and torch.equal(grads[0], grads[1])


def test_cuda_unavailable_reason_needs_no_compile() -> None:
    reason = OP.implementations["cuda"].unavailable_reason("cuda")
    if torch.cuda.is_available():
        assert reason is None or "grid_sample" in reason
    else:
        assert reason and "CUDA" in reason


@pytest.mark.gpu
def test_cuda_matches_reference() -> None:
    _available("cuda", "cuda")
    for params in CASES:
        for dtype in DTYPES:
            _check("cuda", params, dtype, device="cuda")
    OP.implementations["cuda"].opcheck(Case(OP.check_cases[2], torch.float64, device="cuda"))

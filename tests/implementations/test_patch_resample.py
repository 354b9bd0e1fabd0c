"""patch_resample: vmap and bmm against the float64 reference (output and kernel gradient, with the
harness's own tolerances), and the resampling matrix really is the least-squares inverse of resizing."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from benchctl.measure import correctness
from benchctl.ops import registry
from benchctl.ops.registry import Case

registry.discover()
OP = registry.get("patch_resample")
PKG = importlib.import_module("benchctl_ops.patch_resample")
TARGET = OP.target("resample")
CASES = [*OP.check_cases, {"out_channels": 32, "in_channels": 3, "old_size": 32, "new_size": 16}]
DTYPES = (torch.float32, torch.float64)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("params", CASES, ids=str)
@pytest.mark.parametrize("name", ["vmap", "bmm"])
def test_matches_float64_reference(name: str, params: dict[str, Any], dtype: torch.dtype) -> None:
    for seed in (0, 1):
        result = correctness.check(OP, TARGET, OP.implementations[name], "cpu", dtype, params, seed)
        assert [c.name for c in result.comparisons] == ["output", "grad kernel"]  # none for the matrix
        assert result.passed, result.failures()
        assert result.max_rel_err < (1e-5 if dtype == torch.float32 else 1e-12)


@pytest.mark.parametrize("new", [8, 12, 16, 24])
def test_matrix_inverts_resizing(new: int) -> None:
    """Resizing new -> 32 then applying the matrix gives back the original kernel exactly."""
    pinv = PKG.resample_matrix(32, new)
    assert pinv.shape == (new * new, 32 * 32) and pinv.dtype == torch.float64
    small = torch.randn(5, 3, new, new, generator=torch.Generator().manual_seed(new), dtype=torch.float64)
    big = F.interpolate(small, size=(32, 32), mode="bilinear", align_corners=False)
    back = PKG.resample_bmm(big, pinv)
    torch.testing.assert_close(back, small, rtol=0, atol=1e-10)


def test_matrix_is_least_squares_projection() -> None:
    """For any kernel, resize(result) is the closest resized-small kernel: the residual is orthogonal."""
    pinv = PKG.resample_matrix(16, 6)
    basis = torch.eye(36, dtype=torch.float64).reshape(36, 1, 6, 6)
    resize = F.interpolate(basis, size=(16, 16), mode="bilinear", align_corners=False).reshape(36, 256).T
    kernel = torch.randn(256, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    residual = kernel - resize @ (pinv @ kernel)
    assert residual.norm() > 0.1 and (resize.T @ residual).abs().max() < 1e-10


def test_inputs_matrix_cached_and_without_grad() -> None:
    case = Case(CASES[1], torch.float32, seed=1)
    a, b = TARGET.make_inputs(case), TARGET.make_inputs(case)
    assert torch.equal(a["kernel"], b["kernel"]) and torch.equal(a["pinv"], b["pinv"])
    assert a["kernel"].requires_grad and not a["pinv"].requires_grad
    assert a["pinv"].data_ptr() != b["pinv"].data_ptr(), "each case gets its own copy of the cached matrix"
    hits = PKG.resample_matrix.cache_info().hits
    TARGET.make_inputs(case)
    assert PKG.resample_matrix.cache_info().hits == hits + 1


def test_output_shape() -> None:
    inputs = TARGET.make_inputs(Case({**OP.params, "new_size": 12}, torch.float32))
    for name in ("vmap", "bmm"):
        assert TARGET.call(OP.implementations[name].fn, inputs).shape == (768, 3, 12, 12)


@pytest.mark.gpu
def test_cuda_matches_reference() -> None:
    for name in ("vmap", "bmm"):
        for dtype in DTYPES:
            result = correctness.check(OP, TARGET, OP.implementations[name], "cuda", dtype, CASES[-1])
            assert result.passed, result.failures()

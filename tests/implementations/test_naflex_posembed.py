"""naflex_posembed: the implementations against the float64 `loop` reference at a mid-size case (output,
x and table gradients, with a real margin), `gridsample` agreeing with `loop`, padding tokens left
alone, the extension's gradcheck and opcheck, and the seeded inputs."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import torch

from benchctl.measure import correctness
from benchctl.ops import registry
from benchctl.ops.registry import Case
from support import require

registry.discover()
OP = registry.get("naflex_posembed")
PKG = importlib.import_module("benchctl_ops.naflex_posembed")
EXT = importlib.import_module("benchctl_ops.naflex_posembed.ext")
TARGET = OP.target("add")
CASES = [*OP.check_cases, {"batch_size": 24, "D": 48, "grid": 32}]
DTYPES = (torch.float32, torch.float64)


def _available(name: str, device: str = "cpu") -> None:
    require(OP, name, device)


def _check(name: str, params: dict[str, Any], dtype: torch.dtype, device: str = "cpu", seed: int = 0):
    result = correctness.check(OP, TARGET, OP.implementations[name], device, dtype, params, seed)
    assert [c.name for c in result.comparisons] == ["output", "grad x", "grad table"]
    assert result.passed, result.failures()
    return result


def _run(name: str, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    impl = OP.implementations[name]
    inputs = impl.prepare(inputs) if impl.prepare else inputs
    out = TARGET.call(impl.fn, inputs)
    grad_out = torch.randn(out.shape, generator=torch.Generator().manual_seed(5), dtype=torch.float64).to(out)
    return [out, *torch.autograd.grad(out, [inputs["x"], inputs["table"]], grad_out)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ["loop", "gridsample", "cpp"])
def test_matches_float64_reference_with_real_margins(name: str, dtype: torch.dtype) -> None:
    """At the mid-size case (the check cases are `check`'s: test_check_every_op.py), the comparisons
    this operator owes and a margin well inside the harness's gate."""
    _available(name)
    params = CASES[-1]
    for seed in (0, 1):
        result = _check(name, params, dtype, seed=seed)
        assert result.max_rel_err < (2e-5 if dtype == torch.float32 else 1e-12)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 2.5e-5), (torch.float64, 1e-12)], ids=str)
def test_gridsample_computes_the_same_function_as_loop(dtype: torch.dtype, tol: float) -> None:
    """For sides below the table's, zero padding is never reached: grid_sample == interpolate."""
    inputs = TARGET.make_inputs(Case({"batch_size": 32, "D": 64, "grid": 32}, dtype))
    loop, gridsample = _run("loop", inputs), _run("gridsample", inputs)
    for a, b in zip(loop, gridsample):
        scale = a.abs().max()
        assert scale > 0.1 and (a - b).abs().max() / scale < tol


@pytest.mark.parametrize("name", ["loop", "gridsample", "cpp"])
def test_padding_tokens_get_nothing(name: str) -> None:
    _available(name)
    inputs = TARGET.make_inputs(Case(CASES[1], torch.float64))
    out, grad_x, grad_table = _run(name, inputs)
    pad = inputs["coords"][..., 0] < 0
    assert pad.sum() > 0 and (~pad).sum() > 0
    assert torch.equal(out[pad], inputs["x"].detach()[pad])
    assert not torch.equal(out[~pad], inputs["x"].detach()[~pad])


def test_inputs_seeded_sizes_and_coords() -> None:
    params = {"batch_size": 64, "D": 8, "grid": 32}
    a = TARGET.make_inputs(Case(params, torch.float32, seed=2))
    b = TARGET.make_inputs(Case(params, torch.float32, seed=2))
    assert all(torch.equal(a[k], b[k]) for k in a)
    sizes, coords = a["sizes"], a["coords"]
    assert sizes.min() >= 4 and sizes.max() < 32 and not coords.requires_grad and not sizes.requires_grad
    n = sizes.prod(1)
    assert coords.shape == (64, int(n.max()), 2) and a["x"].shape == (64, int(n.max()), 8)
    assert a["table"].shape == (32, 32, 8) and a["x"].requires_grad and a["table"].requires_grad
    for i in range(64):  # row-major coordinates, then -1 padding
        h, w = sizes[i].tolist()
        assert coords[i, h * w - 1].tolist() == [h - 1, w - 1] and (coords[i, h * w:] == -1).all()
    c = TARGET.make_inputs(Case(params, torch.float32, seed=3))
    assert not torch.equal(a["sizes"], c["sizes"])


def test_cpp_gradcheck_float64() -> None:
    _available("cpp")
    for params in (OP.check_cases[0], {"batch_size": 3, "D": 4, "grid": 9}):
        assert correctness.gradcheck(TARGET, OP.implementations["cpp"], "cpu", params)


def test_cpp_opcheck() -> None:
    _available("cpp")
    OP.implementations["cpp"].opcheck(Case(OP.check_cases[1], torch.float64))
    OP.implementations["cpp"].opcheck(Case(OP.params, torch.float32))


def test_cpp_table_backward_is_exact_scatter() -> None:
    """grad_table with a one-hot grad_out equals the interpolation weights of that single token."""
    _available("cpp")
    EXT.load("cpu")
    inputs = TARGET.make_inputs(Case({"batch_size": 2, "D": 3, "grid": 8}, torch.float64))
    grad_out = torch.zeros_like(inputs["x"])
    grad_out[1, 5, 2] = 1.0
    got = torch.ops.naflex_posembed.naflex_posembed_table_backward(
        grad_out, inputs["table"], inputs["coords"], inputs["sizes"])
    out = TARGET.call(OP.implementations["loop"].fn, inputs)
    want = torch.autograd.grad(out, inputs["table"], grad_out)[0]
    torch.testing.assert_close(got, want, rtol=0, atol=1e-15)
    assert got[..., :2].abs().max() == 0 and abs(got.sum().item() - 1.0) < 1e-12  # weights sum to one


def test_cpp_table_backward_sums_per_thread_copies() -> None:
    """Enough tokens for several per-thread table copies (an uneven split): the same gradient."""
    _available("cpp")
    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        inputs = TARGET.make_inputs(Case({"batch_size": 24, "D": 48, "grid": 32}, torch.float64))
        assert inputs["x"].shape[0] * inputs["x"].shape[1] > 3 * 4096  # three copies, not one
        cpp, loop = _run("cpp", inputs), _run("loop", inputs)
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(cpp, loop):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_cuda_unavailable_reason_needs_no_compile() -> None:
    reason = OP.implementations["cuda"].unavailable_reason("cuda")
    if not torch.cuda.is_available():
        assert reason and "CUDA" in reason


@pytest.mark.gpu
def test_cuda_matches_reference() -> None:
    _available("cuda", "cuda")
    for params in CASES:
        for dtype in DTYPES:
            _check("cuda", params, dtype, device="cuda")
    OP.implementations["cuda"].opcheck(Case(OP.check_cases[1], torch.float64, device="cuda"))

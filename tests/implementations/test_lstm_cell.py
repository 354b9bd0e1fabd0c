"""lstm_cell: the variants against the float64 eager reference (outputs and all seven gradients) at
the default size and every SIMD tail width (`check` covers the operator's check cases), gradcheck and opcheck through the custom ops, the shared header's math checked
element by element through the CPU op, and the lazy-compile contract of jit/compile."""

from __future__ import annotations

import importlib
import math
from typing import Any

import pytest
import torch

from benchctl.ops import registry
from benchctl.ops.registry import Case
from support import require

registry.discover()
OP = registry.get("lstm_cell")
PKG = importlib.import_module("benchctl_ops.lstm_cell")
EXT = importlib.import_module("benchctl_ops.lstm_cell.ext")
COMPILED = importlib.import_module("benchctl_ops.lstm_cell.compiled")
TARGET = OP.target("cell")
TOL = {torch.float32: dict(atol=1e-4, rtol=1e-4), torch.float64: dict(atol=1e-10, rtol=1e-9)}
# Default-sized case plus the operator's odd shapes (SIMD tails, I != H).
CASES = [{"batch_size": 16, "H": 64, "I": None}, *OP.check_cases]
# The operator's check cases are `check`'s (tests/implementations/test_check_every_op.py); here only the
# default size, whole SIMD vectors with no tail, at this file's element-wise tolerances.
MATRIX = [(impl, CASES[0], dt) for impl in ("jit", "cpp") for dt in (torch.float32, torch.float64)]
MATRIX += [("compile", CASES[0], torch.float32)]


def _available(name: str, device: str = "cpu") -> None:
    require(OP, name, device)


def _forward_backward(name: str, case: Case) -> list[torch.Tensor]:
    """Outputs (h', c') then the gradients of the 7 inputs for seeded output gradients."""
    impl = OP.implementations[name]
    inputs = TARGET.make_inputs(case)
    if impl.prepare:
        inputs = impl.prepare(inputs)
    outs = TARGET.call(impl.fn, inputs)
    gen = torch.Generator().manual_seed(7)
    grads = [torch.randn(o.shape, generator=gen, dtype=torch.float64).to(o) for o in outs]
    return [*outs, *torch.autograd.grad(outs, list(inputs.values()), grads)]


def _compare(got: list[torch.Tensor], want: list[torch.Tensor], dtype: torch.dtype) -> None:
    names = ["h_new", "c_new"] + [f"grad_{k}" for k in PKG.ARGS]
    assert len(got) == len(want) == 9
    for name, g, w in zip(names, got, want):
        assert g.dtype == dtype and g.shape == w.shape, name
        assert w.abs().max() > 0.01, f"{name}: reference is ~0, the comparison would prove nothing"
        torch.testing.assert_close(g.double().cpu(), w, **TOL[dtype], msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("name,params,dtype", MATRIX, ids=lambda v: str(v).replace("torch.", ""))
def test_matches_float64_reference(name: str, params: dict[str, Any], dtype: torch.dtype) -> None:
    _available(name)
    want = _forward_backward("py", Case(params, torch.float64))
    _compare(_forward_backward(name, Case(params, dtype)), want, dtype)


@pytest.mark.parametrize("hidden", [1, 7, 8, 9, 15, 16, 17, 31, 33])
def test_cpp_every_simd_tail_width(hidden: int) -> None:
    _available("cpp")
    params = {"batch_size": 2, "H": hidden, "I": 3}
    want = _forward_backward("py", Case(params, torch.float64))
    _compare(_forward_backward("cpp", Case(params, torch.float32)), want, torch.float32)


@pytest.mark.parametrize("params", [CASES[0], {"batch_size": 64, "H": 64, "I": None}])
def test_cpp_same_result_on_one_thread_and_side_by_side(params: dict[str, Any]) -> None:
    """With two threads the matmuls run side by side, one per thread; with one, in turn. Each matmul
    and the pointwise kernels run on a single thread either way, so the results are bit for bit the same."""
    _available("cpp")
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = _forward_backward("cpp", Case(params, torch.float32))
        torch.set_num_threads(2)
        two = _forward_backward("cpp", Case(params, torch.float32))
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(one, two, strict=True):
        assert torch.equal(a, b)


def test_cpp_gradients_carry_no_graph_on_two_threads() -> None:
    """The weight gradients' matmuls run on the second thread, under the caller's grad mode (off in a
    backward): no gradient comes back requiring grad or with a grad_fn."""
    _available("cpp")
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        inputs = [t.detach().requires_grad_() for t in TARGET.make_inputs(Case(CASES[1], torch.float32)).values()]
        h, c = EXT.lstm_cell_ext(*inputs)
        grads = torch.autograd.grad((h, c), inputs, (torch.ones_like(h), torch.ones_like(c)))
    finally:
        torch.set_num_threads(threads)
    assert [(g.requires_grad, g.grad_fn) for g in grads] == [(False, None)] * 7


def test_cpp_second_derivative_is_refused() -> None:
    """The backward has no derivative: create_graph=True is an error, not a silently wrong result."""
    _available("cpp")
    inputs = list(TARGET.make_inputs(Case(CASES[1], torch.float64)).values())
    inputs = [t.detach().requires_grad_() for t in inputs]
    h, c = EXT.lstm_cell_ext(*inputs)
    with pytest.raises(RuntimeError, match="no second derivative"):
        torch.autograd.grad((h, c), inputs, (torch.ones_like(h), torch.ones_like(c)), create_graph=True)


@pytest.mark.gpu
def test_cuda_matches_reference() -> None:
    _available("cuda", "cuda")
    params = {"batch_size": 16, "H": 33, "I": 20}
    want = _forward_backward("py", Case(params, torch.float64))
    for dtype in (torch.float32, torch.float64):
        _compare(_forward_backward("cuda", Case(params, dtype, device="cuda")), want, dtype)


def test_gradcheck_through_custom_op() -> None:
    _available("cpp")
    EXT.load("cpu")
    inputs = TARGET.make_inputs(Case({"batch_size": 3, "H": 5, "I": 4}, torch.float64))
    args = tuple(inputs[k] for k in PKG.ARGS)
    assert torch.autograd.gradcheck(EXT.lstm_cell_ext, args, eps=1e-6, atol=1e-7, rtol=1e-5)
    # One output in the loss: the other's gradient arrives as None and must count as zero.
    for k in (0, 1):
        assert torch.autograd.gradcheck(lambda *a: EXT.lstm_cell_ext(*a)[k], args, eps=1e-6, atol=1e-7)


def test_cpp_autograd_is_the_cpp_function() -> None:
    """The backward node is the C++ torch::autograd::Function, not a Python register_autograd wrapper,
    and the saved `gates` output stays out of autograd."""
    _available("cpp")
    EXT.load("cpu")
    inputs = TARGET.make_inputs(Case({"batch_size": 2, "H": 5, "I": 3}, torch.float32))
    h_new, c_new, gates = torch.ops.lstm_cell.lstm_cell(*(inputs[k] for k in PKG.ARGS))
    assert "CellFunction" in h_new.grad_fn.name() and h_new.grad_fn is c_new.grad_fn
    assert not gates.requires_grad


def _gradcheck_impl(name: str) -> bool:
    inputs = TARGET.make_inputs(Case({"batch_size": 2, "H": 5, "I": 3}, torch.float64))
    return torch.autograd.gradcheck(OP.implementations[name].fn, tuple(inputs[k] for k in PKG.ARGS))


def test_gradcheck_compile_allows_retain_graph() -> None:
    """gradcheck backpropagates with retain_graph=True, which donated buffers would refuse."""
    _available("compile")
    assert _gradcheck_impl("compile")


def test_gradcheck_jit() -> None:
    _available("jit")
    assert _gradcheck_impl("jit")


@pytest.mark.parametrize("params,dtype", [({"batch_size": 4, "H": 8, "I": 8}, torch.float32),
                                          ({"batch_size": 3, "H": 5, "I": 7}, torch.float64)])
def test_opcheck(params: dict[str, Any], dtype: torch.dtype) -> None:
    _available("cpp")
    OP.implementations["cpp"].opcheck(Case(params, dtype))


def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


def test_header_forward_math_elementwise() -> None:
    """With zero weights the pre-activations are b_ih + b_hh, so each element is checked by hand."""
    _available("cpp")
    EXT.load("cpu")
    hid = 9  # one full AVX2 vector of float32 plus a tail of one
    pre = torch.linspace(-40.0, 40.0, 4 * hid, dtype=torch.float64)  # includes saturated gates
    c = torch.linspace(-3.0, 3.0, hid, dtype=torch.float64)[None]
    zeros_w = torch.zeros(4 * hid, hid, dtype=torch.float64)
    h_new, c_new, gates = torch.ops.lstm_cell.lstm_cell(
        torch.zeros(1, hid, dtype=torch.float64), torch.zeros(1, hid, dtype=torch.float64), c,
        zeros_w, zeros_w, pre * 0.25, pre * 0.75)
    for j in range(hid):
        i, f, o = (_sigmoid(pre[k * hid + j].item()) for k in (0, 1, 3))
        g = math.tanh(pre[2 * hid + j].item())
        want_c = f * c[0, j].item() + i * g
        assert gates[0, j::hid].tolist() == pytest.approx([i, f, g, o], rel=1e-12, abs=1e-15)
        assert c_new[0, j].item() == pytest.approx(want_c, rel=1e-12, abs=1e-15)
        assert h_new[0, j].item() == pytest.approx(o * math.tanh(want_c), rel=1e-12, abs=1e-15)


def test_header_backward_math_elementwise() -> None:
    _available("cpp")
    EXT.load("cpu")
    gen = torch.Generator().manual_seed(3)
    hid = 11
    rand = lambda *s: torch.rand(*s, generator=gen, dtype=torch.float64)  # noqa: E731
    act = rand(2, 4 * hid) * 0.98 + 0.01  # activated gates (g in (0, 1) is fine for the algebra)
    grad_h, grad_c, c, c_new = (rand(2, hid) - 0.5 for _ in range(4))
    grad_gates, grad_c_prev, grad_bias = torch.ops.lstm_cell.lstm_cell_pointwise_backward(grad_h, grad_c, c, c_new, act)
    for b in range(2):
        for j in range(hid):
            i, f, g, o = (act[b, k * hid + j].item() for k in range(4))
            tc = math.tanh(c_new[b, j].item())
            dc = grad_c[b, j].item() + grad_h[b, j].item() * o * (1 - tc * tc)
            want = [dc * g * i * (1 - i), dc * c[b, j].item() * f * (1 - f), dc * i * (1 - g * g),
                    grad_h[b, j].item() * tc * o * (1 - o)]
            assert grad_gates[b, j::hid].tolist() == pytest.approx(want, rel=1e-12, abs=1e-15)
            assert grad_c_prev[b, j].item() == pytest.approx(dc * f, rel=1e-12, abs=1e-15)
    torch.testing.assert_close(grad_bias, grad_gates.sum(0), rtol=1e-12, atol=1e-15)  # the batch's sum


def test_float32_saturation_has_no_nan() -> None:
    _available("cpp")
    EXT.load("cpu")
    pre = torch.tensor([[-1e4, -100.0, 100.0, 1e4] * 4], dtype=torch.float32)
    h_new, c_new, gates = torch.ops.lstm_cell.lstm_cell_pointwise(pre, torch.zeros(16), torch.ones(1, 4))
    assert torch.isfinite(torch.cat([h_new, c_new, gates], 1)).all()
    assert gates[0, :4].tolist() == [0.0, 0.0, 1.0, 1.0]


def test_first_call_settles_the_jit_and_leaves_caller_grads_alone() -> None:
    calls: list[int] = []

    def fake(*args: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        calls.append(1)
        return args[0] * 2, args[1] * 3

    wrapped = COMPILED._FirstCall(lambda: fake, runs=3)
    x, h = torch.ones(2, 3, requires_grad=True), torch.ones(2, 3, requires_grad=True)
    wrapped(x, h)
    assert len(calls) == 4 and x.grad is None  # 3 settling runs on copies + the real call
    wrapped(x, h)
    assert len(calls) == 5  # same signature: no more settling
    wrapped(torch.ones(5, 3, requires_grad=True), h)
    assert len(calls) == 9  # a new shape is a new specialisation for the JIT


def test_requires_never_builds(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path))
    assert OP.implementations["cpp"].requires("cpu") is None  # the extension's hook
    assert not any(tmp_path.iterdir())
    assert isinstance(OP.implementations["cuda"].unavailable_reason("cpu"), str)


def test_inputs_deterministic_and_shaped() -> None:
    a = TARGET.make_inputs(Case({"batch_size": 3, "H": 4, "I": None}, seed=5))
    b = TARGET.make_inputs(Case({"batch_size": 3, "H": 4, "I": None}, seed=5))
    assert all(torch.equal(a[k], b[k]) and a[k].requires_grad for k in PKG.ARGS)
    assert a["x"].shape == (3, 4) and a["w_ih"].shape == (16, 4) and a["b_hh"].shape == (16,)
    c = TARGET.make_inputs(Case({"batch_size": 3, "H": 4, "I": 6}, seed=5))
    assert c["x"].shape == (3, 6) and c["w_ih"].shape == (16, 6)
    assert set(OP.implementations) == {"py", "jit", "compile", "cpp", "cuda", "triton"}
    assert TARGET.flops({"batch_size": 2, "H": 4, "I": None}) == 2 * 2 * 16 * 8 + 2 * 2 * 16 + 10 * 2 * 4

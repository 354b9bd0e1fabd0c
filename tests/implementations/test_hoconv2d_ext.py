"""hoconv2d C++ extension: the `cpp` op against the float64 pad-slice-multiply reference (output and
both gradients) on odd shapes, gradcheck and opcheck through the custom op, input checks, and the
shared header's per-element math (the code the CUDA kernels run), which the CPU op uses for every
pixel of a border-heavy image, and the memory the large results keep from call to call."""

from __future__ import annotations

import importlib
import resource
from typing import Any, Mapping

import pytest
import torch

from benchctl.ops import registry
from benchctl.ops.registry import Case

registry.discover()
OP = registry.get("hoconv2d")
EXT = importlib.import_module("benchctl_ops.hoconv2d.ext")
PY = importlib.import_module("benchctl_ops.hoconv2d.py")
FILTER = OP.target("filter")
MODULE = OP.target("module")
TOL = {torch.float32: dict(atol=5e-5, rtol=1e-5), torch.float64: dict(atol=1e-11, rtol=1e-11)}


def params(b: int, c: int, h: int, w: int, k: int) -> dict[str, int]:
    return {"batch_size": b, "C": c, "H": h, "W": w, "k": k}


# (B, C, H, W, k): odd sizes, H != W, B = 1, k = 3/5/7 (the backward's unrolled kernel sizes) and 1/9
# (its loop over any k); W a multiple of 16 (whole-register chunks,
# aligned streaming stores); C = 4, 7 (channel groups of three plus a rest); images narrower or
# shorter than the kernel (every column, or every kernel row, clipped); B = 1 with H >= 32 (the
# image split into blocks of rows, so the backward's blocks meet at k//2-row seams); padded rows of
# exactly the backward's fixed scratch stride (236 + 2*2 = 240) and wider (250 + 2: weights read in place).
SHAPES = [params(1, 3, 50, 37, 7), params(1, 2, 6, 236, 5), params(1, 3, 7, 250, 3),
    params(1, 3, 17, 23, 3), params(2, 2, 9, 12, 5), params(3, 1, 8, 11, 7), params(2, 3, 40, 64, 5),
    params(1, 4, 33, 48, 3), params(2, 7, 19, 35, 5), params(1, 5, 20, 32, 7), params(1, 3, 3, 40, 7),
    params(1, 1, 5, 2, 5), params(2, 3, 1, 1, 3), params(1, 3, 224, 224, 5), params(2, 4, 21, 40, 9),
    params(1, 3, 12, 35, 1),
]


@pytest.fixture(scope="module", autouse=True)
def loaded() -> None:
    """Builds (first run: tens of seconds) and loads the CPU library; a build error fails every test."""
    EXT.load("cpu")


def reference(p: Mapping[str, Any], dtype: torch.dtype, target=FILTER) -> tuple[dict, list[torch.Tensor]]:
    """Inputs in `dtype`, and the float64 reference's output and input gradients for a seeded grad_out."""
    inputs = target.make_inputs(Case(p, dtype, "cpu", seed=7))
    exact = {k: v.detach().double().requires_grad_() for k, v in inputs.items()}
    out = target.call(PY.filter_py, exact)
    grad_out = torch.randn(out.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    grads = torch.autograd.grad(out, list(exact.values()), grad_out)
    return inputs, [out.detach(), *grads, grad_out]


def through_op(inputs: dict, grad_out: torch.Tensor, target=FILTER) -> list[torch.Tensor]:
    """The cpp implementation's output and input gradients, via autograd (the registered backward)."""
    out = target.call(OP.implementations["cpp"].fn, inputs)
    grads = torch.autograd.grad(out, list(inputs.values()), grad_out.to(out.dtype))
    return [out.detach(), *grads]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("p", SHAPES, ids=lambda p: "x".join(str(v) for v in p.values()))
def test_matches_float64_reference(p: dict, dtype: torch.dtype) -> None:
    inputs, (*expected, grad_out) = reference(p, dtype)
    got = through_op(inputs, grad_out)
    for name, g, e in zip(("out", "grad_x", "grad_weights"), got, expected):
        assert g.dtype == dtype and g.shape == e.shape, name
        torch.testing.assert_close(g.double(), e, **TOL[dtype], msg=lambda m: f"{name}: {m}")
    assert expected[0].abs().max() > 0.1  # a real signal, not zeros agreeing with zeros


@pytest.mark.parametrize("p", [params(1, 2, 3, 3, 7), params(2, 3, 4, 5, 7), params(1, 2, 6, 6, 5)],
                         ids=["3x3k7", "4x5k7", "6x6k5"])
def test_shared_header_math_on_border_heavy_images(p: dict) -> None:
    """W narrower than one vector (8 doubles): every column goes through forward_at / grad_x_at /
    grad_wt_at of hoconv2d.h, exactly what each CUDA thread computes."""
    inputs, (*expected, grad_out) = reference(p, torch.float64)
    got = through_op(inputs, grad_out)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, atol=1e-13, rtol=1e-13)


TILED = [p for p in SHAPES if p["k"] in (3, 5, 7) and p["C"] <= 4]  # the tiled CUDA backward's sizes


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("p", TILED, ids=lambda p: "x".join(str(v) for v in p.values()))
def test_the_cuda_backward_s_tile_math_run_on_the_cpu_matches_the_reference(p: dict, dtype: torch.dtype) -> None:
    """hoconv2d_tile.h's functions, which the CUDA backward runs for these sizes, run block by block on
    the CPU (images of one block and of many, edges cut mid-block, tiles reaching past every border)."""
    inputs, (_, *expected, grad_out) = reference(p, dtype)
    got = torch.ops.hoconv2d.hoconv2d_filter_backward_tiled(grad_out.to(dtype), inputs["x"].detach(),
                                                            inputs["weights"].detach())
    for name, g, e in zip(("grad_x", "grad_weights"), got, expected):
        assert g.dtype == dtype and g.shape == e.shape, name
        torch.testing.assert_close(g.double(), e, **TOL[dtype], msg=lambda m: f"{name}: {m}")


def test_the_tiled_backward_refuses_sizes_the_cuda_kernel_does_not_tile() -> None:
    x, wt = torch.zeros(1, 5, 6, 6), torch.zeros(1, 9, 6, 6)
    with pytest.raises(RuntimeError, match="k = 3, 5 or 7 and 1 to 4 channels, got k = 3 and 5 channels"):
        torch.ops.hoconv2d.hoconv2d_filter_backward_tiled(torch.zeros_like(x), x, wt)


def test_module_target_gradients_flow_through_the_conv() -> None:
    p = params(2, 3, 12, 16, 5)
    inputs, (*expected, grad_out) = reference(p, torch.float64, MODULE)
    got = through_op(inputs, grad_out, MODULE)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, **TOL[torch.float64])


@pytest.mark.parametrize("shape", [(1, 2, 5, 6, 3), (2, 1, 4, 4, 5), (1, 1, 3, 2, 7)])
def test_gradcheck(shape: tuple[int, ...]) -> None:
    b, c, h, w, k = shape
    gen = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(b, c, h, w, generator=gen, dtype=torch.float64, requires_grad=True)
    wt = torch.randn(b, k * k, h, w, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(EXT.hoconv2d_filter, (x, wt), eps=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("p", [OP.params, params(1, 2, 3, 3, 7)], ids=["default", "border"])
def test_opcheck(p: dict, dtype: torch.dtype) -> None:
    OP.implementations["cpp"].opcheck(Case(p, dtype, "cpu"))


def test_non_contiguous_inputs() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 9, 11, generator=gen, dtype=torch.float64).transpose(2, 3)
    wt = torch.randn(2, 9, 9, 11, generator=gen, dtype=torch.float64).transpose(2, 3)
    out = torch.ops.hoconv2d.hoconv2d_filter(x, wt)
    torch.testing.assert_close(out, PY.filter_py(x, wt), atol=1e-12, rtol=1e-12)
    assert out.is_contiguous()


@pytest.mark.parametrize(
    "x_shape, w_shape, dtype, message",
    [
        ((1, 3, 8, 8), (1, 16, 8, 8), torch.float32, "odd k"),
        ((1, 3, 8, 8), (1, 10, 8, 8), torch.float32, "odd k"),
        ((1, 3, 8, 8), (2, 9, 8, 8), torch.float32, "do not match"),
        ((1, 3, 8, 8), (1, 9, 8, 7), torch.float32, "do not match"),
        ((1, 3, 8), (1, 9, 8, 8), torch.float32, "must be"),
        ((1, 3, 8, 8), (1, 9, 8, 8), torch.float64, "weights is Float"),
    ],
)
def test_bad_inputs_are_rejected(x_shape, w_shape, dtype, message: str) -> None:
    x = torch.zeros(x_shape, dtype=dtype)
    wt = torch.zeros(w_shape, dtype=torch.float32)
    with pytest.raises(RuntimeError, match=message):
        torch.ops.hoconv2d.hoconv2d_filter(x, wt)


def test_backward_rejects_mismatched_grad() -> None:
    x, wt = torch.zeros(1, 2, 5, 5), torch.zeros(1, 9, 5, 5)
    with pytest.raises(RuntimeError, match="grad_out"):
        torch.ops.hoconv2d.hoconv2d_filter_backward(torch.zeros(1, 2, 5, 4), x, wt)


def on_device(impl: str, device: str, inputs: dict, grad_out: torch.Tensor) -> list[torch.Tensor]:
    """An implementation's output and input gradients on `device`, brought back to the CPU in float64."""
    there = {k: v.detach().to(device).requires_grad_() for k, v in inputs.items()}
    out = FILTER.call(OP.implementations[impl].fn, there)
    grads = torch.autograd.grad(out, list(there.values()), grad_out.to(device, out.dtype))
    assert all(t.device.type == device and t.dtype == out.dtype for t in (out, *grads))
    return [t.detach().double().cpu() for t in (out, *grads)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("p", SHAPES, ids=lambda p: "x".join(str(v) for v in p.values()))
def test_cuda_matches_float64_reference(p: dict, dtype: torch.dtype) -> None:
    """The CUDA kernels (forward, grad X, grad weights) against the float64 reference on the CPU."""
    from support import require

    require(OP, "cuda", "cuda")
    EXT.load("cuda")
    inputs, (*expected, grad_out) = reference(p, dtype)
    for name, g, e in zip(("out", "grad_x", "grad_weights"), on_device("cuda", "cuda", inputs, grad_out), expected):
        torch.testing.assert_close(g, e, **TOL[dtype], msg=lambda m: f"{name}: {m}")


def test_registered_implementations() -> None:
    cpp, cuda = OP.implementations["cpp"], OP.implementations["cuda"]
    assert cpp.devices == ("cpu",) and cuda.devices == ("cuda",)
    assert cpp.unavailable_reason("cpu") is None
    assert "does not support" in cpp.unavailable_reason("cuda")
    if not torch.cuda.is_available():
        assert cuda.unavailable_reason("cuda")  # a reason, never an exception
    inputs = FILTER.make_inputs(Case(params(1, 2, 6, 7, 3)))
    assert cpp.prepare(inputs) is inputs


def test_registration_is_idempotent() -> None:
    """A second load (another import of ext, a second prepare) must not register kernels twice."""
    EXT.load("cpu")
    importlib.reload(EXT).load("cpu")
    x = torch.randn(1, 1, 4, 4, requires_grad=True)
    torch.ops.hoconv2d.hoconv2d_filter(x, torch.randn(1, 9, 4, 4)).sum().backward()
    assert x.grad is not None


def weight_gradient(batch: int) -> tuple[torch.Tensor, int]:
    """The cpp backward's weight gradient for a seeded batch of 224x224 images, and the minor page
    faults taken while it was computed (inputs made beforehand)."""
    gen = torch.Generator().manual_seed(batch)
    x, wt, g = (torch.randn(batch, c, 224, 224, generator=gen) for c in (3, 25, 3))
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    grad = torch.ops.hoconv2d.hoconv2d_filter_backward(g, x, wt)[1]
    return grad, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults


def test_large_results_reuse_the_memory_freed_results_gave_back() -> None:
    """A freed weight gradient (40 MB here) is kept for the next call of its size instead of going back
    to the OS: that call writes into pages already faulted in (fresh memory takes at least one fault
    per 2 MiB), and gets the same values. A gradient still alive is never handed out twice."""
    first, _ = weight_gradient(8)
    block, expected = first.data_ptr(), first.clone()
    del first
    again, faults = weight_gradient(8)
    huge_pages = again.nbytes / 2**21
    assert faults < huge_pages / 2, f"{faults} page faults for {huge_pages:.1f} huge pages of gradient"
    assert again.data_ptr() == block and torch.equal(again, expected)
    other, _ = weight_gradient(8)
    assert other.data_ptr() != block and torch.equal(other, expected)


def test_a_result_of_a_new_size_sends_the_kept_memory_back() -> None:
    """After a call at another batch size, the first size's gradient is fresh memory again (faulted in
    at least once per 2 MiB): blocks of old shapes are not kept for a sweep's later sizes."""
    weight_gradient(4)
    weight_gradient(2)
    grad, faults = weight_gradient(4)
    huge_pages = grad.nbytes / 2**21
    assert faults >= huge_pages / 2, f"{faults} page faults for {huge_pages:.1f} huge pages of gradient"

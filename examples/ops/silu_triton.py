import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

from benchctl.ops.param_rules import sizes
from benchctl.ops.registry import Operator, Target, randn, register


def make_inputs(case):
    return {"x": randn(case, case.generator(), case.params["batch_size"], case.params["dim"])}


OP = register(Operator(
    name="silu_triton", description="x * sigmoid(x), in Python and in Triton",
    params={"batch_size": 64, "dim": 4096},
    targets=(Target("op", make_inputs, bytes=lambda p, size: 2 * p["batch_size"] * p["dim"] * size),),
    quick={"batch_size": [8, 64]}, check_cases=({"batch_size": 3, "dim": 5},), rules=sizes("dim"),
))

@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=2),
                          triton.Config({"BLOCK": 1024}, num_warps=4)], key=["n"])
@triton.jit
def silu_fwd(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * tl.sigmoid(x), mask=mask)


@triton.jit
def silu_bwd(x_ptr, g_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    s = tl.sigmoid(x)
    g = tl.load(g_ptr + offs, mask=mask)
    tl.store(dx_ptr + offs, g * s * (1 + x * (1 - s)), mask=mask)


@triton_op("silu_triton::silu", mutates_args=())
def silu(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    wrap_triton(silu_fwd)[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    return y


@triton_op("silu_triton::silu_backward", mutates_args=())
def silu_backward(x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    x, grad = x.contiguous(), grad.contiguous()
    dx = torch.empty_like(x)
    n = x.numel()
    wrap_triton(silu_bwd)[(triton.cdiv(n, 1024),)](x, grad, dx, n, BLOCK=1024)
    return dx


def setup_context(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def backward(ctx, grad):
    return silu_backward(ctx.saved_tensors[0], grad)


silu.register_autograd(backward, setup_context=setup_context)


@OP.implementation("py")
def py(x):
    return x * torch.sigmoid(x)


@OP.implementation("triton", kernels=(silu_fwd, silu_bwd), config_variants=True)
def triton_silu(x):
    """Triton forward (autotuned over two block sizes) and backward."""
    return silu(x)

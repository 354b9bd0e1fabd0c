"""lstm_cell: one LSTM cell step with biases broadcast over the batch.

gates = x W_ih^T + b_ih + h W_hh^T + b_hh  (gate order i, f, g, o); i, f, o = sigmoid, g = tanh;
c' = f c + i g; h' = o tanh(c'). Outputs (h', c'); all seven inputs require grad.

Implementations: `py` (eager autograd, the reference), `jit` (torch.jit.script of the same function),
`compile` (torch.compile of it: the `py@compile` modifier under its old name), `cpp` (ATen matmuls + fused C++ pointwise forward/backward) and
`cuda` (the same with CUDA pointwise kernels). Params: batch_size, H (hidden) and I (input; None
means I = H, so a sweep over H keeps the cell square).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping


from benchctl.ops import lookup, triton_support
from benchctl.ops.param_rules import sizes
from benchctl.ops.registry import Case, Inputs, Operator, Output, Target, randn, register


ARGS = ("x", "h", "c", "w_ih", "w_hh", "b_ih", "b_hh")


def _dims(p: Mapping[str, Any]) -> tuple[int, int, int]:
    """(B, H, I) with I defaulting to H."""
    return int(p["batch_size"]), int(p["H"]), int(p.get("I") or p["H"])


def make_inputs(case: Case) -> Inputs:
    b, hid, inp = _dims(case.params)
    gen = case.generator()
    # nn.LSTMCell's init scale (1/sqrt(H)) keeps the gate pre-activations O(1), so the sigmoids and
    # tanhs are neither saturated (gradients ~0) nor linear (a wrong activation would go unnoticed).
    w = hid**-0.5
    return {
        "x": randn(case, gen, b, inp),
        "h": randn(case, gen, b, hid),
        "c": randn(case, gen, b, hid),
        "w_ih": randn(case, gen, 4 * hid, inp, scale=w),
        "w_hh": randn(case, gen, 4 * hid, hid, scale=w),
        "b_ih": randn(case, gen, 4 * hid, scale=0.1),
        "b_hh": randn(case, gen, 4 * hid, scale=0.1),
    }


def call_cell(fn: Callable[..., Output], inputs: Inputs) -> Output:
    return fn(*(inputs[k] for k in ARGS))


def flops(p: Mapping[str, Any]) -> float:
    # Two GEMMs, two broadcast bias adds over (B, 4H), ~10 pointwise flops per hidden element.
    b, hid, inp = _dims(p)
    return 2.0 * b * 4 * hid * (inp + hid) + 2.0 * b * 4 * hid + 10.0 * b * hid


def bwd_flops(p: Mapping[str, Any]) -> float:
    # Four GEMMs (grad x, grad h, grad W_ih, grad W_hh), the bias column sum, ~20 pointwise flops.
    b, hid, inp = _dims(p)
    return 4.0 * b * 4 * hid * (inp + hid) + 1.0 * b * 4 * hid + 20.0 * b * hid


def _params_elems(hid: int, inp: int) -> int:
    return 4 * hid * (inp + hid) + 2 * 4 * hid  # both weights and both biases


def fwd_bytes(p: Mapping[str, Any], itemsize: int) -> float:
    # Read x, h, c and the parameters once; write h' and c'.
    b, hid, inp = _dims(p)
    return float(b * inp + 2 * b * hid + _params_elems(hid, inp) + 2 * b * hid) * itemsize


def bwd_bytes(p: Mapping[str, Any], itemsize: int) -> float:
    # Read grad h', grad c' and the inputs; write a gradient for each of the seven inputs.
    b, hid, inp = _dims(p)
    inputs = b * inp + 2 * b * hid + _params_elems(hid, inp)
    return float(2 * b * hid + 2 * inputs) * itemsize


# opcheck runs each op a dozen ways (fake tensors, AOT autograd, dynamic shapes): small inputs suffice.
OPCHECK_MAX = {"batch_size": 4, "H": 16, "I": 16}

OP = register(
    Operator(
        name="lstm_cell",
        description="One LSTM cell step (broadcast biases): eager vs TorchScript vs torch.compile vs fused C++/CUDA",
        params={"batch_size": 64, "H": 64, "I": None},
        targets=(
            Target("cell", make_inputs, call_cell, flops=flops, bytes=fwd_bytes,
                   bwd_flops=bwd_flops, bwd_bytes=bwd_bytes),
        ),
        axis="batch_size",
        rules=sizes("H", "I"),
        reference="py",
        quick={"batch_size": [16, 64, 256], "H": 64},
        # Fewer rows keep the float64 reference cheap; H stays, so the kernels see the timed width.
        check_params=lambda p: {**p, "batch_size": min(int(p["batch_size"]), 16)},
        check_cases=(
            {"batch_size": 1, "H": 5, "I": 3},  # narrower than one SIMD vector: tail path only
            {"batch_size": 3, "H": 17, "I": 17},  # full vectors plus a 1-element tail
            {"batch_size": 7, "H": 33, "I": 9},  # I != H
        ),
        source=__file__,
    )
)

# The implementations register themselves with the decorator, as an operator file does: the pure-PyTorch
# ones (py.py; TorchScript's in compiled.py), the C++/CUDA extension's (ext.py), and Triton's where triton
# imports (tri.py).
from . import py, compiled  # noqa: E402,F401

# torch.compile of py is the @compile modifier (`py@compile`); `compile` stays its name here, as in older results.
lookup.alias(OP, "compile", "py@compile")
from . import ext  # noqa: E402,F401

if triton_support.missing():
    triton_support.placeholder(OP)
else:
    from . import tri  # noqa: E402,F401

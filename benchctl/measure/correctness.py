"""An implementation against the float64 reference: the output and every input gradient.

The reference is the operator's reference implementation run in float64 on the CPU, on the same
seeded inputs; an implementation that changes an input in place or returns an input's storage fails
too (tamper.py). Errors are reported as the max absolute difference and that difference relative to the
largest reference magnitude (so a tensor of small values is not judged by a fixed absolute bar).
An output of all zeros, or anything non-finite, never passes. float32 on a GPU is judged by the TF32 bar
while torch lets matmuls or cuDNN convolutions round their inputs to TF32 (10 mantissa bits): what
is checked is what is timed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping

import torch

from benchctl.measure import tamper
from benchctl.measure.passes import as_tuple, backward_from, grad_outputs, has_backward
from benchctl.ops.params import Params
from benchctl.ops.registry import Case, Implementation, Operator, Target

# Max error relative to the reference's largest magnitude, per dtype.
TOLERANCE = {torch.float64: 1e-9, torch.float32: 2e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}
TF32_TOLERANCE = 2e-3
TAMPERED = "inputs"  # the name of a failed comparison that is a tamper.py problem, not a numeric error


def tf32_enabled() -> bool:
    """Whether torch may run float32 CUDA matmuls or cuDNN convolutions in TF32."""
    return bool(torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32)


def set_tf32(allowed: bool | None) -> None:
    """Allow (True) or forbid (False) TF32 for float32 CUDA matmuls and cuDNN convolutions; None
    leaves torch's own setting (matmul off, convolutions on)."""
    if allowed is not None:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = allowed


def tolerance(dtype: torch.dtype, device: str) -> float:
    if dtype == torch.float32 and device.startswith("cuda") and tf32_enabled():
        return TF32_TOLERANCE
    return TOLERANCE.get(dtype, 1e-3)


@dataclass(frozen=True)
class Agreement:
    name: str
    max_abs_err: float
    max_rel_err: float
    tolerance: float
    passed: bool
    reason: str = ""


@dataclass(frozen=True)
class CheckResult:
    comparisons: tuple[Agreement, ...]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.comparisons)

    @property
    def max_abs_err(self) -> float:
        return max(c.max_abs_err for c in self.comparisons)

    @property
    def max_rel_err(self) -> float:
        return max(c.max_rel_err for c in self.comparisons)

    @property
    def tolerance(self) -> float:
        return self.comparisons[0].tolerance

    def failures(self) -> str:
        return "; ".join(c.reason if c.name == TAMPERED else f"{c.name}: {c.reason}"
                         for c in self.comparisons if not c.passed)

    @property
    def tampered(self) -> bool:
        """It changed its inputs or returned one of them (not a numeric error)."""
        return any(c.name == TAMPERED and not c.passed for c in self.comparisons)


def _non_finite(got: torch.Tensor, ref: torch.Tensor) -> str:
    """How many values are NaN or infinite, of how many, and the first one with the reference's value there (its
    shape is the reference's): "non-finite values: 3 of 98,304 (nan at [0, 5, 12], where the reference is 0.231)"."""
    bad = ~torch.isfinite(got)
    first = tuple(int(i) for i in bad.nonzero()[0])
    return (f"non-finite values: {int(bad.sum()):,} of {got.numel():,} ({got[first].item()} at {list(first)}, where "
            f"the reference is {ref[first].item():.3g})")


def agree(name: str, got: torch.Tensor | None, ref: torch.Tensor, tol: float, is_output: bool,
          scale: float | None = None, dtype: torch.dtype | None = None) -> Agreement:
    """`got` against `ref`, its error relative to `scale` (the reference's largest magnitude: of `ref` itself
    unless given, for a `ref` that is a sample of a larger tensor). With `dtype` (the cell's), an output whose
    reference is floating point must be of it, as a torch op returns its inputs' dtype: one computed and returned
    in float64 for a float32 cell passes every error bar and is timed as what it is not."""
    if got is None:
        missing = "not returned (the reference returns more outputs)" if is_output else "no gradient was computed"
        return Agreement(name, float("inf"), float("inf"), tol, False, missing)
    if tuple(got.shape) != tuple(ref.shape):
        return Agreement(name, float("inf"), float("inf"), tol, False,
                          f"shape {tuple(got.shape)} != reference {tuple(ref.shape)}")
    if is_output and dtype is not None and ref.is_floating_point() and got.dtype != dtype:
        return Agreement(name, float("inf"), float("inf"), tol, False,
                          f"dtype {_dtype_name(got.dtype)}, not the cell's {_dtype_name(dtype)}")
    got64 = got.detach().to("cpu", torch.float64)
    if not (ref.is_floating_point() or ref.is_complex()):
        return _exactly(name, got64, ref.to(torch.float64), tol)
    if not torch.isfinite(got64).all():
        return Agreement(name, float("inf"), float("inf"), tol, False, _non_finite(got64, ref))
    abs_err = float((got64 - ref).abs().max()) if ref.numel() else 0.0
    if scale is None:
        scale = float(ref.abs().max()) if ref.numel() else 0.0
    rel_err = abs_err / scale if scale > 0 else abs_err
    if is_output and ref.numel() and not got64.any() and bool(ref.any()):
        return Agreement(name, abs_err, rel_err, tol, False, "output is all zeros")
    passed = rel_err <= tol
    return Agreement(name, abs_err, rel_err, tol, passed, "" if passed else f"error {rel_err:.3g} > {tol:.3g}")


def _exactly(name: str, got64: torch.Tensor, ref64: torch.Tensor, tol: float) -> Agreement:
    """An integer or boolean output (top-k's indices, a mask) is compared element by element, with no tolerance:
    "2 of 512 elements differ, compared exactly (an integer output): 5 at [1, 0], where the reference is 7"."""
    differ = got64 != ref64
    if not bool(differ.any()):
        return Agreement(name, 0.0, 0.0, tol, True)
    abs_err = float((got64 - ref64).abs().max())
    scale = float(ref64.abs().max())
    first = tuple(int(i) for i in differ.nonzero()[0])
    there = f"{got64[first].item():g} at {list(first)}, where the reference is {ref64[first].item():g}"
    return Agreement(name, abs_err, abs_err / scale if scale > 0 else abs_err, tol, False,
                     f"{int(differ.sum()):,} of {ref64.numel():,} elements differ, compared exactly (an integer "
                     f"output): {there}")


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class Run:
    """One forward+backward call: its outputs, the inputs' gradients, and what it did to its inputs; `carried`:
    whether an output carried a gradient back (passes.py: an implementation whose outputs require no grad, a
    forward-only kernel, has no backward)."""

    outs: tuple[torch.Tensor, ...]
    grads: dict[str, Any]
    problems: tuple[str, ...] = ()
    carried: bool = True


def run_once(target: Target, impl: Implementation, case: Case) -> Run:
    """Outputs and input gradients of one forward+backward call on the case's seeded inputs."""
    return run_on(target, impl, target.make_inputs(case))


def run_on(target: Target, impl: Implementation, inputs: dict[str, Any], watched: bool = True) -> Run:
    """Outputs and input gradients of one forward+backward call on `inputs` (as the target makes them);
    `watched`: what it did to its inputs is looked at too (tamper.py: a copy of every input)."""
    if impl.prepare is not None:
        inputs = impl.prepare(inputs)
    before = tamper.snapshot(inputs) if watched else None
    outs = as_tuple(target.call(impl.fn, inputs))
    writes = target.writes  # the buffers it fills (tamper.py)
    problems = tamper.problems(inputs, before, outs, writes) if watched else []  # before the backward changes any
    from_outputs = grad_outputs(outs)
    if has_backward(from_outputs):  # from the outputs that carry a gradient (passes.py)
        backward_from(inputs, from_outputs, accumulate=True)(outs)
    problems = problems or (tamper.problems(inputs, before, (), writes) if watched else [])
    grads = {name: t.grad for name, t in inputs.items() if isinstance(t, torch.Tensor) and t.requires_grad}
    return Run(tuple(o.detach() for o in outs), grads, tuple(problems), has_backward(from_outputs))


@dataclass(frozen=True)
class _Reference:
    """What a reference run is cached by (names, params, seed); it carries the target and implementation
    it runs, so the registry is not asked again."""
    op_name: str
    target_name: str
    params: Params
    seed: int
    target: Target = field(compare=False)
    impl: Implementation = field(compare=False)


@lru_cache(maxsize=8)
def _reference(key: _Reference) -> Run:
    return run_once(key.target, key.impl, Case(key.params.to_dict(), torch.float64, "cpu", key.seed))


def reference(op: Operator, target: Target, params: Mapping[str, Any], seed: int = 0) -> Run:
    return _reference(_Reference(op.name, target.name, params if isinstance(params, Params) else Params(params),
                                 seed, target, op.implementations[op.reference]))


# What the gate and gradcheck say where gradients are missing on one side, or on both.
UNCHECKED_BACKWARD = ("the reference's outputs carry no gradient, and this implementation's do: its backward "
                      "cannot be checked (make the reference differentiable, or its inputs require no grad)")
NO_GRAD_INPUTS = "no input requires grad: nothing to gradcheck"
FORWARD_ONLY = "its outputs carry no gradient (none requires grad): a forward-only implementation, no backward to check"


def check(op: Operator, target: Target, impl: Implementation, device: str, dtype: torch.dtype,
          params: Mapping[str, Any], seed: int = 0) -> CheckResult:
    """Compare `impl` at (device, dtype) with the float64 reference on the same inputs."""
    ref = reference(op, target, params, seed)
    got = run_once(target, impl, Case(dict(params), dtype, device, seed))
    tol = tolerance(dtype, device)
    found = [Agreement(TAMPERED, 0.0, 0.0, tol, False, problem) for problem in got.problems]
    found += [agree(f"output{i}" if len(ref.outs) > 1 else "output", got.outs[i] if i < len(got.outs) else None,
                     want, tol, True, dtype=dtype) for i, want in enumerate(ref.outs)]
    if got.carried and not ref.carried:  # its backward would be timed with nothing to check it against
        found.append(Agreement("grad", float("inf"), float("inf"), tol, False, UNCHECKED_BACKWARD))
    elif got.carried:  # else a forward-only implementation: judged on its outputs, its backward never timed
        found += [agree(f"grad {name}", got.grads.get(name), want, tol, False) for name, want in ref.grads.items()
                  if want is not None]  # not an input the reference's outputs carry no gradient back to
    return CheckResult(tuple(found))


class NotChecked(Exception):
    """gradcheck has nothing to check (NO_GRAD_INPUTS, FORWARD_ONLY): not a failure."""


def gradcheck(target: Target, impl: Implementation, device: str, params: Mapping[str, Any], seed: int = 0) -> bool:
    """torch.autograd.gradcheck in float64 through the implementation on small inputs; NotChecked where there is
    no gradient to check."""
    inputs = target.make_inputs(Case(dict(params), torch.float64, device, seed))
    if impl.prepare is not None:
        inputs = impl.prepare(inputs)
    names = [n for n, t in inputs.items() if isinstance(t, torch.Tensor) and t.requires_grad]
    if not names:
        raise NotChecked(NO_GRAD_INPUTS)

    def fn(*tensors: torch.Tensor):
        return as_tuple(target.call(impl.fn, {**inputs, **dict(zip(names, tensors))}))

    if not has_backward(grad_outputs(fn(*(inputs[n] for n in names)))):
        raise NotChecked(FORWARD_ONLY)

    return torch.autograd.gradcheck(fn, tuple(inputs[n] for n in names), eps=1e-6, atol=1e-5, rtol=1e-4)


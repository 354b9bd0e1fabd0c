"""`benchctl check`: every implementation against the float64 reference over seeds and shapes,
gradcheck in float64 on small inputs, and opcheck for registered custom ops."""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import torch

from benchctl.measure import correctness
from benchctl.errors import error_message
from benchctl.ops.registry import Case, Implementation, Operator, dtype_name
from benchctl.vocab import Device, Status

# torch's words when a kernel meets a dtype it was not written for (AT_DISPATCH, TORCH_CHECK on dtype); a tensor's
# repr (`dtype=torch.float64`, in gradcheck's Jacobians) is not one
DTYPE_ERROR = re.compile(r"scalar ?type|dtype(?!=torch\.)|not implemented for '(Double|Float|Half|BFloat16)'|"
                         r"expected .*(Double|Float)|(Double|Float) .*expected", re.I)
SEEDS = (0, 1)
DTYPES = (torch.float32, torch.float64)  # compared with the reference unless `check --dtype` names others
GRADCHECK_NOT_INTERPRETED = "too slow in Triton's interpreter; the reference check covers every gradient"


@dataclass(frozen=True)
class CheckRow:
    op: str
    target: str
    impl: str
    device: str
    kind: str  # reference / gradcheck / opcheck / unavailable
    case: str
    dtype: str
    max_abs_err: float | None
    max_rel_err: float | None
    tolerance: float | None
    passed: bool | None  # None: could not run here (not a failure)
    detail: str = ""

    def name(self) -> str:
        return f"{self.op}/{self.target} {self.impl} on {self.device} {self.kind} {self.dtype} {self.case}"


def whole_message(exc: BaseException) -> str:
    """The exception's whole text (every line; opcheck's explanations run over several) and where it
    was raised."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    loc = f" ({frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {str(exc).strip()}{loc}"


def dtype_hint(impl: Implementation, dtype: torch.dtype, message: str) -> str:
    """A dtype error from an implementation that declares no dtypes, suggesting `dtypes=` ("" else)."""
    if impl.dtypes or not DTYPE_ERROR.search(message):
        return ""
    return (f" (hint: {impl.name} fails at {dtype_name(dtype)} with a dtype error; if it supports only some "
            f"dtypes, declare them: @OP.implementation(\"{impl.name}\", dtypes=(\"float32\",)))")


def _failure(impl: Implementation, dtype: torch.dtype, exc: BaseException, whole: bool = False) -> str:
    text = whole_message(exc) if whole else error_message(exc)
    return text + dtype_hint(impl, dtype, str(exc))


def cases(op: Operator, interpreted: bool = False) -> list[dict]:
    """The shapes to check at; under Triton's interpreter (slow) only the first, the smallest."""
    found = [dict(c) for c in op.check_cases] or [op.params_for_check(op.params)]
    return found[:1] if interpreted else found


def check_impl(op: Operator, impl: Implementation, device: str, given: Sequence[Mapping[str, Any]] = (),
               dtypes: Sequence[torch.dtype] = DTYPES) -> Iterator[CheckRow]:
    """Every check of `impl` on `device`. The reference is compared at the `given` params (`check --param`),
    else at the operator's check cases, in each of `dtypes` the implementation supports; gradcheck (in float64)
    and opcheck stay at its first, small case (gradcheck's finite differences cost two calls per input element)."""
    reason = impl.unavailable_reason(device, timed=False)
    if reason:
        yield CheckRow(op.name, "*", impl.name, device, Status.UNAVAILABLE, "", "", None, None, None, None, reason)
        return
    yield from _unsupported_rows(op, impl, device, dtypes)
    dtypes = [d for d in dtypes if impl.dtype_reason(d) is None]
    shapes = [dict(p) for p in given] or cases(op, interpreted=device == Device.CPU and bool(impl.kernels))
    for target in op.targets:
        for params in shapes:
            for dtype in dtypes:
                for seed in SEEDS:
                    yield _reference_row(op, target, impl, device, params, dtype, seed)
        yield _gradcheck_row(op, target, impl, device, cases(op)[0])
    if impl.opcheck is not None:
        yield _opcheck_row(op, impl, device, cases(op)[0])


def _unsupported_rows(op: Operator, impl: Implementation, device: str,
                      dtypes: Sequence[torch.dtype]) -> Iterator[CheckRow]:
    """A dtype the implementation does not declare is unavailable there, not a failure."""
    for dtype in dtypes:
        reason = impl.dtype_reason(dtype)
        if reason:
            yield CheckRow(op.name, "*", impl.name, device, Status.UNAVAILABLE, "", dtype_name(dtype),
                           None, None, None, None, reason)


def _case_label(params: dict, seed: int | None = None) -> str:
    text = " ".join(f"{k}={v}" for k, v in sorted(params.items()))
    return text if seed is None else f"{text} seed={seed}"


@dataclass(frozen=True)
class CheckSummary:
    key: tuple[str, ...]  # operator, target, impl, device, check, dtype
    cases: int
    max_abs_err: float | None
    max_rel_err: float | None
    tolerance: float | None
    result: str


def summarize_rows(rows: Sequence[CheckRow]) -> list[CheckSummary]:
    groups: dict[tuple[str, ...], list[CheckRow]] = {}
    for r in rows:
        groups.setdefault((r.op, r.target, r.impl, r.device, r.kind, r.dtype), []).append(r)
    return [_summary(key, group) for key, group in groups.items()]


def _summary(key: tuple[str, ...], group: list[CheckRow]) -> CheckSummary:
    def worst(values):
        values = [v for v in values if v is not None]
        return max(values) if values else None

    failed = sum(r.passed is False for r in group)
    if any(r.passed is None for r in group):
        result = f"skipped: {group[0].detail}"
    else:
        result = f"FAIL ({failed} of {len(group)})" if failed else "pass"
    return CheckSummary(key, len(group), worst(r.max_abs_err for r in group),
                        worst(r.max_rel_err for r in group), worst(r.tolerance for r in group), result)


def _reference_row(op, target, impl, device, params, dtype, seed) -> CheckRow:
    label, dname = _case_label(params, seed), dtype_name(dtype)
    try:
        res = correctness.check(op, target, impl, device, dtype, params, seed)
    except Exception as exc:
        return CheckRow(op.name, target.name, impl.name, device, "reference", label, dname,
                        None, None, None, False, _failure(impl, dtype, exc))
    return CheckRow(op.name, target.name, impl.name, device, "reference", label, dname, res.max_abs_err,
                    res.max_rel_err, res.tolerance, res.passed, res.failures())


def _gradcheck_row(op, target, impl, device, params) -> CheckRow:
    if device == Device.CPU and impl.kernels:
        return CheckRow(op.name, target.name, impl.name, device, "gradcheck", _case_label(params), "float64",
                        None, None, None, None, GRADCHECK_NOT_INTERPRETED)
    if impl.dtype_reason(torch.float64):  # gradcheck's finite differences need float64
        return CheckRow(op.name, target.name, impl.name, device, "gradcheck", _case_label(params), "float64",
                        None, None, None, None, f"gradcheck needs float64; {impl.dtype_reason(torch.float64)}")
    try:
        ok, detail = correctness.gradcheck(target, impl, device, params), ""
    except correctness.NotChecked as nothing:
        ok, detail = None, str(nothing)
    except Exception as exc:  # gradcheck raises GradcheckError with the mismatching Jacobians
        ok, detail = False, _failure(impl, torch.float64, exc)
    return CheckRow(op.name, target.name, impl.name, device, "gradcheck", _case_label(params), "float64",
                    None, None, None, ok, detail)


def _opcheck_row(op, impl, device, params) -> CheckRow:
    dtype = impl.first_dtype((torch.float64, *DTYPES, torch.float16, torch.bfloat16)) or torch.float64
    try:
        impl.opcheck(Case(params, dtype, device))  # in a dtype the implementation supports
        ok, detail = True, ""
    except Exception as exc:  # opcheck's message names what to fix over several lines: shown whole
        ok, detail = False, _failure(impl, dtype, exc, whole=True)
    return CheckRow(op.name, "*", impl.name, device, "opcheck", _case_label(params), dtype_name(dtype),
                    None, None, None, ok, detail)


def interpreted(rows: Sequence[CheckRow], selection: Sequence[tuple[Operator, Implementation, str]]) -> list[str]:
    """`op impl` of each Triton implementation checked on the CPU, i.e. by Triton's interpreter."""
    ran = {(r.op, r.impl) for r in rows if r.device == Device.CPU and r.passed is not None}
    return [f"{op.name} {impl.name}" for op, impl, device in selection
            if device == Device.CPU and impl.kernels and (op.name, impl.name) in ran]


def run_checks(selection: Sequence[tuple[Operator, Implementation, str]],
               given: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
               dtypes: Sequence[torch.dtype] = DTYPES) -> Iterator[CheckRow]:
    """The checks of each selected implementation; `given`: params to compare at, by operator name; `dtypes`: the
    dtypes to compare with the reference in."""
    for op, impl, device in selection:
        yield from check_impl(op, impl, device, (given or {}).get(op.name, ()), dtypes)

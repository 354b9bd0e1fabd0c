"""The `opcheck` hook of a custom-op implementation, on a small version of the check case.

torch.library.opcheck runs an op a dozen ways (fake tensors, AOT autograd, dynamic shapes), so small
inputs suffice and large ones only cost time. An operator names its own limits, and
`small_opcheck(check, make_inputs, limits)` is the hook: it cuts each param named in `limits` down to
its limit, builds the inputs with the operator's own factory and hands them to `check`.
"""

from __future__ import annotations

from typing import Callable, Mapping

from benchctl.ops.registry import Case, Inputs


def shrunk(case: Case, limits: Mapping[str, int]) -> Case:
    """`case` with each param named in `limits` at most its limit; the other params (and a param
    whose value is None, meaning its default) as they are."""
    params = dict(case.params)
    for name, limit in limits.items():
        if params.get(name) is not None:
            params[name] = min(int(params[name]), limit)
    return Case(params, case.dtype, case.device, case.seed)


def small_opcheck(check: Callable[[Inputs], None], make_inputs: Callable[[Case], Inputs],
                  limits: Mapping[str, int]) -> Callable[[Case], None]:
    """The `opcheck=` hook: `check(make_inputs(case cut down to limits))`; `check` raises on failure."""
    limits = dict(limits)

    def opcheck(case: Case) -> None:
        check(make_inputs(shrunk(case, limits)))

    return opcheck

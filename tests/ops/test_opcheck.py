"""The shared opcheck hook: a small version of the check case, built by the operator's own factory."""

from __future__ import annotations

import torch

from benchctl.ops.opcheck import shrunk, small_opcheck
from benchctl.ops.registry import Case


def test_shrunk_cuts_the_named_params_and_keeps_the_rest() -> None:
    case = Case({"batch_size": 64, "H": 5, "I": None, "k": 7}, torch.float64, "cpu", seed=3)
    small = shrunk(case, {"batch_size": 4, "H": 16, "I": 16})
    assert dict(small.params) == {"batch_size": 4, "H": 5, "I": None, "k": 7}
    assert (small.dtype, small.device, small.seed) == (torch.float64, "cpu", 3)
    assert case.params["batch_size"] == 64  # the case it was given is left as it was


def test_small_opcheck_hands_the_small_inputs_to_the_check() -> None:
    seen: list[dict] = []

    def make_inputs(case: Case) -> dict:
        return {"x": torch.zeros(case.params["batch_size"], case.params["dim"], dtype=case.dtype)}

    hook = small_opcheck(lambda inputs: seen.append(inputs), make_inputs, {"batch_size": 2, "dim": 3})
    hook(Case({"batch_size": 9, "dim": 2}, torch.float64))
    (inputs,) = seen
    assert inputs["x"].shape == (2, 2) and inputs["x"].dtype == torch.float64

"""Helpers the operator tests share."""

import pytest

from benchctl.ops.registry import Operator, cuda_device_reason


def require(op: Operator, name: str, device: str = "cpu") -> None:
    """Skip, naming the reason, only when `device` is not on this machine (no GPU). Any other reason an
    implementation cannot run (a failed or cached failed build, a missing compiler) fails the test:
    a broken extension must never turn its correctness tests into skips."""
    no_device = cuda_device_reason() if device == "cuda" else None
    if no_device:
        pytest.skip(f"{name} on {device}: {no_device}")
    reason = op.implementations[name].unavailable_reason(device)
    if reason:
        pytest.fail(f"{name} cannot run on {device} here: {reason}")

"""Helpers the operator tests share."""

import pytest

from benchctl.ops.registry import Operator


def require(op: Operator, name: str, device: str = "cpu") -> None:
    """Skip, naming the reason, when implementation `name` cannot run on `device` here."""
    reason = op.implementations[name].unavailable_reason(device)
    if reason:
        pytest.skip(f"{name} unavailable on {device}: {reason}")

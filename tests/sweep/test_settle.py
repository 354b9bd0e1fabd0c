"""A session waits for a slow machine within its plan's budget (the canary's wait replaced by a script)."""

from types import SimpleNamespace

import torch

from benchctl.sweep import session as session_module
from benchctl.sweep.session import Session


def session(settle_s: float, calibrated: float | None = 1e-3) -> Session:
    peaks = {"cpu": {"canary_s": calibrated, "threads": torch.get_num_threads()}} if calibrated else {}
    plan = SimpleNamespace(settle=settle_s, settings=lambda: SimpleNamespace(peaks=peaks))
    return Session(plan, SimpleNamespace(meta={"settled": []}))


def scripted(monkeypatch, outcomes: list[tuple[float, float]]) -> list[float]:
    """Each wait returns the next (ratio, seconds waited); the limits asked are returned."""
    limits: list[float] = []

    def wait_for_speed(calibrated_s, limit_s, on_wait):
        limits.append(limit_s)
        return outcomes.pop(0)

    monkeypatch.setattr(session_module.canary, "wait_for_speed", wait_for_speed)
    return limits


def test_the_waits_share_the_plans_budget_and_go_into_the_metadata(monkeypatch):
    limits = scripted(monkeypatch, [(1.05, 20.0), (1.1, 35.0), (1.05, 5.0)])
    s = session(60.0)
    for _ in range(4):
        s.settle()
    assert limits == [60.0, 40.0, 5.0]  # the fourth finds the budget spent
    assert [(w["waited_s"], w["canary_ratio"]) for w in s.writer.meta["settled"]] == [
        (20.0, 1.05), (35.0, 1.1), (5.0, 1.05)]


def test_no_calibration_or_no_budget_no_wait(monkeypatch):
    limits = scripted(monkeypatch, [])
    session(60.0, calibrated=None).settle()
    session(0.0).settle()
    assert limits == []

"""A session waits for a busy or slow machine within its plan's budget (the load's and the canary's waits
replaced by scripts)."""

from types import SimpleNamespace

import torch

from benchctl.sweep import session as session_module
from benchctl.sweep.session import Session, Settled


def session(settle_s: float, calibrated: float | None = 1e-3, threads: int | None = None) -> Session:
    by_threads = {"1": 3 * calibrated, str(torch.get_num_threads()): calibrated} if calibrated else {}
    peaks = {"cpu": {"canary_s_by_threads": by_threads}} if calibrated else {}
    plan = SimpleNamespace(settle=settle_s, threads=threads, settings=lambda: SimpleNamespace(peaks=peaks))
    return Session(plan, SimpleNamespace(meta={"settled": []}))


def scripted(monkeypatch, outcomes: list[tuple[float, float]], quiet: list[tuple[float, float]] | None = None
             ) -> list[float]:
    """Each wait for speed returns the next (ratio, seconds waited), each wait for quiet the next of `quiet`
    (busy cores, seconds waited: none busy, at once, by default); the limits asked of either are returned."""
    limits: list[float] = []

    def wait_for_quiet(seconds):
        limits.append(seconds)
        return quiet.pop(0) if quiet else (0.1, 0.0)

    monkeypatch.setattr(session_module.load, "wait_for_quiet", wait_for_quiet)

    def wait_for_speed(calibrated_s, limit_s, on_wait, read):
        limits.append(limit_s)
        return outcomes.pop(0)

    monkeypatch.setattr(session_module.canary, "wait_for_speed", wait_for_speed)
    return limits


def test_the_waits_share_the_plans_budget_and_go_into_the_metadata(monkeypatch):
    limits = scripted(monkeypatch, [(1.05, 20.0), (1.1, 35.0), (1.05, 5.0)])
    s = session(60.0)
    for _ in range(4):
        s.settle()
    assert limits == [60.0, 60.0, 40.0, 40.0, 5.0, 5.0]  # the fourth finds the budget spent
    assert [(w["waited_s"], w["canary_ratio"]) for w in s.writer.meta["settled"]] == [
        (20.0, 1.05), (35.0, 1.1), (5.0, 1.05)]


def test_a_wait_for_other_work_to_stop_comes_first_and_shares_the_budget(monkeypatch):
    limits = scripted(monkeypatch, [(1.0, 2.0), (1.0, 1.0)], quiet=[(1.0, 60.0), (0.2, 3.0)])
    s = session(90.0)
    s.settle()  # still busy after 60 s: the speed is waited for in the 30 s left
    s.settle()  # ... quiet after 3 s of the 28 s left
    assert limits == [90.0, 30.0, 28.0, 25.0]
    assert [(w["waited_s"], w["other_cores"]) for w in s.writer.meta["settled"]] == [(62.0, 1.0), (4.0, 0.2)]


def test_no_calibration_waits_for_quiet_only_and_no_budget_not_at_all(monkeypatch):
    limits = scripted(monkeypatch, [])
    uncalibrated = session(60.0, calibrated=None)
    uncalibrated.settle()
    session(0.0).settle()
    assert limits == [60.0] and uncalibrated.writer.meta["settled"][0]["canary_ratio"] is None


def test_with_run_threads_the_canary_is_read_and_held_on_them(monkeypatch):
    """A `--threads 1` run's passes ran on one thread: the machine is at speed for them when the canary on one
    thread is at its one-thread calibrated time (here 3x torch's default's, on more than one core)."""
    asked: list[tuple[float, int]] = []

    def wait_for_speed(calibrated_s, limit_s, on_wait, read):
        monkeypatch.setattr(session_module.canary, "canary", torch.get_num_threads)  # the threads it ran on
        asked.append((calibrated_s, read()))
        return 1.0, 0.0

    monkeypatch.setattr(session_module.load, "wait_for_quiet", lambda seconds: (0.0, 0.0))
    monkeypatch.setattr(session_module.canary, "wait_for_speed", wait_for_speed)
    given = torch.get_num_threads()
    one = session(60.0, threads=1)
    one.settle()
    assert asked == [(one.plan.settings().peaks["cpu"]["canary_s_by_threads"]["1"], 1)]
    assert torch.get_num_threads() == given


def test_a_sweep_on_this_machine_waits_for_it_before_its_first_cell(monkeypatch):
    """Within the same budget as the waits before re-measurements, and before the worker starts."""
    limits, order = scripted(monkeypatch, [(1.05, 12.0)]), []

    class Sweep:
        def __init__(self, *args, **kwargs):
            order.append(("sweep", len(s.writer.meta["settled"])))

        def run(self):
            order.append("run")

    monkeypatch.setattr(session_module, "Sweep", Sweep)
    monkeypatch.setattr(session_module, "environment", dict)
    s = session(60.0)
    s.plan.local_executor = lambda: order.append(("worker", len(s.writer.meta["settled"]))) or SimpleNamespace(
        close=lambda: order.append("close"))
    s.plan.cells, s.plan.total_rounds, s.plan.remeasure, s.plan.processes, s.plan.recheck_above = [], 1, 0, 1, 50.0
    s.writer.look = None
    s._run_here(lambda cell: None, lambda cell, rows: None, s.settle)
    assert limits == [60.0, 60.0] and order == [("worker", 1), ("sweep", 1), "run", "close"]


def test_each_wait_that_took_time_is_told_how_it_ended(monkeypatch):
    """A run whose wait ran out with the machine slow had said only that it waited."""
    scripted(monkeypatch, [(1.3, 58.0), (1.0, 0.2)], quiet=[(0.1, 2.0), (0.1, 0.0)])
    s, told = session(90.0), []
    s.settle(on_settled=told.append)
    s.settle(on_settled=told.append)  # at speed at once: nothing to tell
    assert told == [Settled(60.0, 1.3, 0.1)] and told[0].slow and not told[0].busy
    assert [w["waited_s"] for w in s.writer.meta["settled"]] == [60.0, 0.2]


def test_a_canary_far_faster_than_calibrated_is_told_though_the_wait_took_no_time(monkeypatch):
    """The calibration ran in a slow phase: the run is told before its first cell, while it can still be stopped."""
    scripted(monkeypatch, [(0.8, 0.0), (0.9, 0.0)], quiet=[(0.1, 0.0), (0.1, 0.0)])
    s, told = session(90.0), []
    s.settle(on_settled=told.append)
    s.settle(on_settled=told.append)  # 0.90x: within 15% of the calibration, at once: nothing to tell
    assert told == [Settled(0.0, 0.8, 0.1)] and told[0].fast and not told[0].slow

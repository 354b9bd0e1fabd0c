"""The seal over the clocks and statistics: a replaced function or clock counter is named."""

import importlib

from benchctl.measure import seal, timing
from benchctl.measure.clocks import CpuClock


def test_nothing_changed_reads_empty_and_a_replaced_statistic_is_named(monkeypatch):
    seal.bind()
    assert seal.broken() == ""
    monkeypatch.setattr(timing, "summarize", lambda s: {})
    said = seal.broken()
    assert said.startswith("the measured code replaced benchctl's timing code (benchctl.measure.timing.summarize")
    monkeypatch.undo()
    assert seal.broken() == ""


def test_a_clocks_replaced_counter_is_named():
    clock = CpuClock()
    before = seal.clock_marks(clock)
    assert seal.broken(before, seal.clock_marks(clock)) == ""
    clock.counter = lambda: 0
    assert "CpuClock.counter" in seal.broken(before, seal.clock_marks(clock))


def test_a_replaced_library_function_or_a_trace_hook_is_named(monkeypatch):
    import sys
    import threading

    import torch

    seal.bind()
    real = threading.active_count
    monkeypatch.setattr(threading, "active_count", lambda: real())
    assert seal.broken().startswith("the measured code replaced what the harness and the references call "
                                    "(threading.active_count)")
    monkeypatch.undo()
    monkeypatch.setattr(torch, "tanh", lambda *a, **k: None)
    monkeypatch.setattr(torch.Tensor, "clone", lambda self: self, raising=False)  # shadows the C method
    assert "(torch.Tensor.clone, torch.tanh)" in seal.broken()
    monkeypatch.undo()
    assert seal.broken() == ""
    before = sys.getprofile()
    sys.setprofile(lambda *a: None)
    try:
        assert "sys.getprofile" in seal.broken()
    finally:
        sys.setprofile(before)
    assert seal.broken() == ""


def test_torch_wrapping_its_own_function_is_no_change():
    seal.bind()
    importlib.import_module("torch._dynamo")  # wraps torch.manual_seed on import

    assert seal.broken() == ""

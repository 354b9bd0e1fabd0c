"""The seal over the clocks and statistics: a replaced function or clock counter is named."""

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

"""Disturbed samples: a fake machine whose calls wait for a CPU by scripted amounts (set aside, the row
says so, too few clean samples are `disturbed`), windows for cheap calls, and one real busy neighbour."""

import os
import subprocess
import sys
import time

import pytest

from benchctl.measure.clocks import CpuClock
from benchctl.measure.interference import (DISTURBED_WAIT, RunQueue, RunQueueMeter, SmClockMeter, WatchedClock,
                                           is_disturbed, watched_gpu, window_for)
from benchctl.measure.stats import disturbed_message
from benchctl.measure.timing import Policy, measure
from benchctl.vocab import Stop


class Machine:
    """A fake machine and its clock: each call takes the next scripted (seconds, seconds waited for a CPU);
    `read` is the run-queue counter, `counter` the wall clock in ns."""

    def __init__(self, calls):
        self.calls = list(calls)
        self.now_ns = 0
        self.waited = 0.0

    def time(self, thunk) -> float:
        took, waited = self.calls.pop(0)
        thunk()
        self.now_ns += int(took * 1e9)
        self.waited += waited
        return took

    def counter(self) -> int:
        return self.now_ns

    def read(self) -> float:
        return self.waited

    def close(self) -> None:
        pass

    def elapsed(self) -> float:
        return self.now_ns * 1e-9


def watched(machine: Machine, read_cost_s: float = 0.0) -> WatchedClock:
    return WatchedClock(machine, RunQueueMeter(machine), counter=machine.counter, read_cost_s=read_cost_s)


CLEAN, HIT = (1e-3, 0.0), (5e-3, 4e-3)  # a clean call, and one that waited a scheduler tick
NO_WARMUP = Policy(warmup=0, min_time=0.0, max_time=10.0)


def test_samples_whose_threads_waited_are_set_aside_and_kept():
    machine = Machine([CLEAN, CLEAN, HIT] * 10)
    m = measure(lambda: lambda: None, watched(machine), NO_WARMUP, elapsed=machine.elapsed)
    # every third sample waited: set aside, so ten clean ones converge at 1 ms after fourteen samples
    assert m.stop == Stop.CONVERGED
    assert m.samples == (1e-3, 1e-3, 5e-3) * 4 + (1e-3, 1e-3)
    assert m.disturbed == (False, False, True) * 4 + (False, False)
    assert m.disturbed_share == pytest.approx(4 / 14)
    assert m.stats["n"] == 10 and m.median == 1e-3 and m.stats["max_s"] == 1e-3
    assert m.readings == (0.0, 0.0, 4e-3) * 4 + (0.0, 0.0)


def test_a_pass_with_too_few_clean_samples_is_disturbed_and_says_by_how_much():
    machine = Machine([HIT] * 8 + [CLEAN] * 4 + [HIT] * 100)
    policy = Policy(warmup=0, min_time=0.0, max_time=0.2)
    m = measure(lambda: lambda: None, watched(machine), policy, elapsed=machine.elapsed)
    assert m.stop == Stop.DISTURBED
    assert sum(m.disturbed) == len(m.samples) - 4
    assert m.median == 1e-3  # the clean samples' statistics, few as they are
    text = disturbed_message(m.disturbed, m.readings, m.median)
    assert text.startswith(f"disturbed: {len(m.samples) - 4} of {len(m.samples)} samples")
    assert "median wait 4 ms per call" in text and "4 clean sample(s) left" in text


def test_running_out_of_time_with_many_set_aside_is_disturbed_not_noisy():
    noisy_clean = [(1e-3 * (1 + (i % 7) / 5), 0.0) for i in range(60)]  # never within +-1%
    calls = [c for pair in zip(noisy_clean, [HIT] * 60) for c in pair]
    machine = Machine(calls)
    m = measure(lambda: lambda: None, watched(machine), Policy(warmup=0, min_time=0.0, max_time=0.15),
                elapsed=machine.elapsed)
    assert m.stop == Stop.DISTURBED and m.disturbed_share == pytest.approx(0.5, abs=0.05)


def test_an_undisturbed_pass_keeps_its_stop():
    machine = Machine([CLEAN] * 20)
    m = measure(lambda: lambda: None, watched(machine), NO_WARMUP, elapsed=machine.elapsed)
    assert m.stop == Stop.CONVERGED and not any(m.disturbed) and m.disturbed_share == 0.0


def test_cheap_calls_are_judged_in_windows_and_a_disturbed_window_sets_all_its_calls_aside():
    calls = [(1e-5, 0.0)] * 30
    calls[12] = (1e-5, 5e-5)  # one call of the third window waited five times its length
    machine = Machine(calls)
    clock = watched(machine, read_cost_s=1e-6)
    assert window_for(1e-6, 1e-5) == 7  # two reads of 1 us within 3% of the window's calls
    for _ in range(30):
        clock.time(lambda: None)
    clock.flush()
    # windows: the first call alone, then 7 calls each (1-7, 8-14, ...): calls 8-14 are set aside
    assert clock.disturbed == [False] * 8 + [True] * 7 + [False] * 15
    assert clock.readings[8] == pytest.approx(5e-5 / 7)


def test_windows_are_sized_by_their_wall_time_so_a_flush_before_each_call_hides_no_wait():
    """Caches flushed before each call (1 ms of wall, no sample): sized by its 10 us samples, a window would hold 7
    calls and span 7 ms, and a wait twenty calls long (0.2 ms) would be under 5% of it."""
    class Flushing(Machine):
        def time(self, thunk) -> float:
            self.now_ns += 1_000_000
            return super().time(thunk)

    calls = [(1e-5, 0.0)] * 12
    calls[6] = (1e-5, 2e-4)
    clock = watched(Flushing(calls), read_cost_s=1e-6)
    for _ in range(12):
        clock.time(lambda: None)
    clock.flush()
    assert clock.window == 1 and clock.disturbed == [False] * 6 + [True] + [False] * 5


def test_a_call_on_unseen_data_is_judged_in_a_window_of_its_own_and_the_windows_keep_their_size():
    calls = [(1e-5, 0.0)] * 30
    calls[12] = (1e-3, 1e-4)  # the call on unseen data: a miss, on a machine crowded for it
    machine = Machine(calls)
    clock = watched(machine, read_cost_s=1e-6)
    for i in range(30):
        if i == 12:
            clock.alone()  # its draw was unseen (audit.py)
        clock.time(lambda: None)
    clock.flush()
    # windows: the first call, 1-7, 8-11 (closed before the unseen call), 12 alone, 13-19, 20-26, 27-29
    assert clock.disturbed == [False] * 12 + [True] + [False] * 17
    assert clock.window == 7  # the miss's own time does not size the windows after it


def test_the_rule_and_the_window_bounds():
    assert is_disturbed(DISTURBED_WAIT * 1e-3 * 1.01, 1e-3) and not is_disturbed(DISTURBED_WAIT * 1e-3, 1e-3)
    assert window_for(1e-6, 1.0) == 1 and window_for(1e-3, 1e-9) == 1000 and window_for(1e-6, 0.0) == 1000


def test_the_watched_clock_passes_on_what_its_clock_records():
    clock = WatchedClock(CpuClock(), RunQueueMeter(Machine([])), read_cost_s=0.0)
    clock.time(lambda: None)
    assert len(clock.usage_per_call) == 1


def test_a_call_that_raises_in_an_open_window_keeps_its_error_when_the_clock_closes():
    """An out-of-memory in the first timed call left a window with no call; closing it divided by zero,
    and that error replaced the out-of-memory one in the row."""
    clock = watched(Machine([(1e-3, 0.0)]), read_cost_s=1e-4)

    def out_of_memory():
        raise MemoryError("no room")
    with pytest.raises(MemoryError, match="no room"):
        try:
            clock.time(out_of_memory)
        finally:
            clock.close()
    assert clock.disturbed == [] and clock.readings == []


class Gpu:
    """A fake GPU clock (NVML's SM clock, scripted per reading) beside a fake machine's calls."""

    def __init__(self, mhz):
        self.mhz = list(mhz)

    def read(self):
        return self.mhz.pop(0)


def test_gpu_samples_taken_below_ninety_percent_of_the_sm_clock_are_set_aside():
    # readings before and after each call (windows of one): the third call ran while the clock read 1400
    gpu = Gpu([1980, 1980, 1980, 1980, 1980, 1400] + [1980] * 40)
    machine = Machine([(1e-3, 0.0)] * 20)
    clock = WatchedClock(machine, SmClockMeter(gpu.read, 1980.0), counter=machine.counter, read_cost_s=0.0,
                         kind="cuda")
    m = measure(lambda: lambda: None, clock, NO_WARMUP, elapsed=machine.elapsed)
    assert m.disturbed[:4] == (False, False, True, False) and m.watched == "cuda"
    assert m.readings[2] == 1400 and m.stats["n"] == len(m.samples) - 1
    assert disturbed_message((False, True), (1980.0, 1400.0), 1e-3, "cuda").startswith(
        "disturbed: 1 of 2 samples (50%) ran below 90% of the SM clock (median 1400 MHz)")


def test_a_gpu_clock_nvml_cannot_read_counts_as_full_and_no_maximum_means_no_watch():
    meter = SmClockMeter(lambda: None, 1980.0)
    assert meter.judge(meter.open(), 1e-3, 1) == (False, 1980.0)
    assert watched_gpu(Machine([]), lambda: 1000.0, 0.0) is None


BUSY = "import time\nend = time.monotonic() + 20\nwhile time.monotonic() < end: pass"


@pytest.mark.skipif(not RunQueue(), reason="no per-thread schedstat here (not Linux)")
def test_a_busy_neighbour_shows_as_run_queue_delay_and_disturbed_samples():
    """Every core taken by a neighbour: the OS must make this process's calls wait for one. Judged by what
    the OS reported (the wait, the flags), not by how long anything took."""
    neighbours = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.3)  # the neighbours are running
        queue = RunQueue()
        clock = WatchedClock(CpuClock(), RunQueueMeter(queue))
        before = queue.read()

        def spin():
            end = time.perf_counter() + 0.02
            while time.perf_counter() < end:
                pass

        for _ in range(15):
            clock.time(spin)
        clock.flush()
        assert queue.read() - before > 0.0
        assert sum(clock.disturbed) >= 1 and max(clock.readings) > 0.0
        clock.close()
    finally:
        for p in neighbours:
            p.kill()
            p.wait()

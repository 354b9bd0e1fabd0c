"""The timing loop with fake clocks: exact sample counts, stop rules (convergence, and the fixed rule of
`ci_target=0`), statistics, the CUDA event path."""

import gc

import pytest

from benchctl.measure.clocks import CpuClock, CudaEventClock, OsUsage

from benchctl.measure import stats as stats_module
from benchctl.measure.stats import CI_MIN_SAMPLES, is_noisy, median_ci, noisy_message, summarize
from benchctl.measure.timing import MIN_TIME_OVER_MAX_SAMPLES, Policy, measure
from benchctl.vocab import Stop


class FakeCounter:
    """A ns counter that advances by scripted durations on each start/stop pair."""

    def __init__(self, durations_s):
        self.durations = list(durations_s)
        self.now = 0
        self.reads = 0

    def __call__(self) -> int:
        self.reads += 1
        if self.reads % 2 == 0:  # a stop read: the timed call took the next duration
            self.now += int(self.durations.pop(0) * 1e9)
        return self.now


class FakeElapsed:
    def __init__(self, step: float):
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


class Wall:
    """A wall clock that moves with the timed calls and `setup_s` for each untimed setup."""

    def __init__(self, counter: FakeCounter, setup_s: float = 0.0):
        self.counter, self.setup_s, self.setups = counter, setup_s, 0

    def setup(self):
        self.setups += 1
        return lambda: None

    def __call__(self) -> float:
        return self.counter.now * 1e-9 + self.setups * self.setup_s


def test_cpu_clock_times_only_the_thunk():
    counter = FakeCounter([0.25])
    calls = []
    assert CpuClock(counter).time(lambda: calls.append(1)) == pytest.approx(0.25)
    assert calls == [1]


def test_a_cpu_clock_runs_its_before_hook_outside_the_clock_and_the_os_reading():
    counter, order = FakeCounter([0.25, 0.5]), []
    usage = lambda: order.append("usage") or OsUsage(0, 0.0, 0.0, 0.0)  # noqa: E731
    clock = CpuClock(lambda: order.append("clock") or counter(), usage=usage, before=lambda: order.append("flush"))
    assert clock.time(lambda: order.append("call")) == pytest.approx(0.25)
    assert clock.time(lambda: order.append("call")) == pytest.approx(0.5)
    assert order == ["flush", "usage", "clock", "call", "clock", "usage"] * 2


def test_cpu_clock_counts_what_the_os_did_for_each_call_outside_the_clock():
    readings = iter([OsUsage(100, 1.0, 3.0, 7.0), OsUsage(130, 1.25, 3.5, 7.5), OsUsage(130, 1.25, 3.5, 8.0),
                     OsUsage(131, 1.25, 3.625, 8.25)])
    clock = CpuClock(FakeCounter([0.1, 0.1]), usage=lambda: next(readings))  # before/after each call
    clock.time(lambda: None)
    clock.time(lambda: None)
    assert [u[:4] for u in clock.usage_per_call] == [(30, pytest.approx(0.25), 0.5, 0.5), (1, 0.0, 0.125, 0.25)]


def test_measure_keeps_every_sample_and_reports_robust_stats():
    durations = [9.0] + [0.0100, 0.0101, 0.0102, 0.0100, 0.100, 0.0101, 0.0100]  # warm-up first, one outlier
    policy = Policy(ci_target=0, warmup=1, min_samples=7, min_time=0.0, max_time=100)
    counter = FakeCounter(durations)
    m = measure(lambda: (lambda: None), CpuClock(counter), policy, Wall(counter))
    assert m.warmup_s == (pytest.approx(9.0),)
    assert len(m.samples) == 7
    assert m.stats["median_s"] == pytest.approx(0.0101)
    assert m.stats["min_s"] == pytest.approx(0.0100) and m.stats["max_s"] == pytest.approx(0.100)
    assert m.stats["iqr_s"] == pytest.approx(0.01015 - 0.0100)
    # seven samples pin the median only between the smallest and the largest: the outlier makes it noisy
    assert (m.stats["ci_lo_s"], m.stats["ci_hi_s"]) == pytest.approx((0.0100, 0.100)) and m.noisy


def test_warm_up_goes_on_until_warmup_time_so_a_slow_first_phase_stays_out_of_the_samples():
    counter = FakeCounter([0.1] * 5 + [0.02] * 5)  # five slow first calls (new memory being backed), then steady
    wall = Wall(counter)
    policy = Policy(ci_target=0, warmup=10, warmup_time=0.45, min_samples=5, min_time=0.0, max_time=100)
    m = measure(wall.setup, CpuClock(counter), policy, wall)
    assert m.warmup_s == pytest.approx((0.1,) * 5)  # 0.4 s after four: one more (ten calls would be 1 s)
    assert m.samples == pytest.approx((0.02,) * 5)
    assert m.wall_s == pytest.approx(0.6)


def test_warm_up_is_bounded_by_wall_clock_when_the_untimed_setup_is_the_costly_part():
    counter = FakeCounter([40e-6] * 200)  # a 40 us backward behind a 10 ms forward
    wall = Wall(counter, setup_s=0.010)
    policy = Policy(ci_target=0, warmup=50, warmup_min_time=0.3, warmup_time=0.5, min_samples=5, min_time=0.0,
                    max_time=100)
    m = measure(wall.setup, CpuClock(counter), policy, wall)
    assert len(m.warmup_s) == 50  # 0.5 s of wall clock; by the timed time alone it would be 12,500 calls
    assert len(m.samples) == 5
    assert m.wall_s == pytest.approx(55 * 0.01004)


def test_a_cheap_call_is_warm_after_its_warmup_calls_and_warmup_min_time():
    counter = FakeCounter([0.001] * 400)
    wall = Wall(counter, setup_s=0.004)  # 5 ms of wall clock a call
    policy = Policy(ci_target=0, warmup=10, warmup_min_time=0.1, warmup_time=0.5, min_samples=5, min_time=0.0,
                    max_time=100)
    m = measure(wall.setup, CpuClock(counter), policy, wall)
    assert len(m.warmup_s) == 20  # 0.1 s, not the 0.5 s a slow call gets (100 calls)
    few = Policy(ci_target=0, warmup=40, warmup_min_time=0.1, warmup_time=0.5, min_samples=5, min_time=0.0,
                 max_time=100)
    assert len(measure(wall.setup, CpuClock(counter), few, wall).warmup_s) == 40  # 40 calls, 0.2 s


def test_each_pass_collects_only_the_young_generations(monkeypatch):
    generations = []
    monkeypatch.setattr(gc, "collect", lambda generation=2: generations.append(generation) or 0)
    policy = Policy(ci_target=0, warmup=0, min_samples=2, min_time=0.0, max_time=100)
    measure(lambda: (lambda: None), CpuClock(FakeCounter([0.1, 0.1])), policy, FakeElapsed(0.0))
    assert generations == [1]  # not the whole heap (2), which costs 50-180 ms with torch loaded


def test_warmup_zero_means_no_warm_up_whatever_warmup_time_says():
    policy = Policy(ci_target=0, warmup=0, warmup_time=10.0, min_samples=2, min_time=0.0, max_time=100)
    m = measure(lambda: (lambda: None), CpuClock(FakeCounter([0.1, 0.2])), policy, FakeElapsed(0.0))
    assert m.warmup_s == () and m.samples == pytest.approx((0.1, 0.2))


def test_measure_stops_at_min_time_after_min_samples():
    policy = Policy(ci_target=0, warmup=0, min_samples=3, min_time=0.5, max_time=100, max_samples=1000)
    m = measure(lambda: (lambda: None), CpuClock(FakeCounter([0.1] * 100)), policy, FakeElapsed(0.0))
    assert len(m.samples) == 5  # 5 x 0.1 s reaches min_time


def test_measure_is_capped_by_max_time():
    policy = Policy(ci_target=0, warmup=0, min_samples=50, min_time=10, max_time=1.0)
    m = measure(lambda: (lambda: None), CpuClock(FakeCounter([0.01] * 100)), policy, FakeElapsed(0.3))
    assert len(m.samples) == 4  # 0.3 s of wall clock per sample: past 1 s after the 4th


def test_measure_stops_early_when_the_median_is_stable():
    policy = Policy(ci_target=0, warmup=0, min_samples=5, min_time=100, max_time=1000, stable_window=5, stable_rtol=0.01)
    m = measure(lambda: (lambda: None), CpuClock(FakeCounter([2.5] * 100)), policy, FakeElapsed(0.0))
    assert len(m.samples) == 10  # stable from the start: twice min_samples, 25 s = a quarter of min_time


def test_a_cheap_stable_call_still_samples_a_quarter_of_min_time():
    policy = Policy(ci_target=0, warmup=0, min_samples=5, min_time=0.2, max_time=100, stable_window=5, stable_rtol=0.01)
    m = measure(lambda: (lambda: None), CpuClock(FakeCounter([0.001] * 1000)), policy, FakeElapsed(0.0))
    assert len(m.samples) == 50  # 50 x 1 ms = 0.05 s, not the 10 samples that were already stable


def test_noisy_warning_threshold():
    assert summarize([1.0, 1.0, 1.3, 1.3])["iqr_s"] == pytest.approx(0.3)
    policy = Policy(ci_target=0, warmup=0, min_samples=4, min_time=0, max_time=100)
    noisy = measure(lambda: (lambda: None), CpuClock(FakeCounter([1.0, 1.0, 1.3, 1.3])), policy, FakeElapsed(0))
    assert noisy.noisy


def test_setup_is_not_timed():
    counter = FakeCounter([0.002] * 10)

    def setup():
        counter.now += 10**9  # a whole second of untimed setup (e.g. building a graph)
        return lambda: None

    m = measure(setup, CpuClock(counter), Policy(ci_target=0, warmup=0, min_samples=3, min_time=0), FakeElapsed(0))
    assert m.samples == pytest.approx((0.002, 0.002, 0.002))


@pytest.mark.parametrize("enabled_before", [True, False])
def test_the_garbage_collector_is_off_while_sampling_and_restored_after(enabled_before):
    states = []

    def setup():
        return lambda: states.append(gc.isenabled())

    gc.enable() if enabled_before else gc.disable()
    try:
        measure(setup, CpuClock(FakeCounter([0.001] * 4)), Policy(ci_target=0, warmup=1, warmup_time=0, min_samples=3, min_time=0),
                FakeElapsed(0))
        assert states == [False] * 4 and gc.isenabled() is enabled_before
    finally:
        gc.enable()


def test_the_garbage_collector_is_restored_when_a_thunk_raises():
    def setup():
        return lambda: 1 / 0

    with pytest.raises(ZeroDivisionError):
        measure(setup, CpuClock(FakeCounter([0.001])), Policy(ci_target=0, warmup=0, min_samples=1, min_time=0))
    assert gc.isenabled()


class FakeEvent:
    log: list

    def __init__(self, log, times):
        self.log, self.times = log, times

    def record(self):
        self.log.append("record")
        self.t = self.times.pop(0)

    def synchronize(self):
        pass

    def elapsed_time(self, end) -> float:
        self.log.append("elapsed")
        return end.t - self.t


def test_cuda_clock_records_events_around_the_call_and_synchronizes_before_reading():
    log, times = [], [0.0, 4.0]  # ms
    clock = CudaEventClock(event_factory=lambda: FakeEvent(log, times), synchronize=lambda: log.append("sync"),
                           before=lambda: log.append("flush"), spin=lambda s: log.append("spin"),
                           counter=FakeCounter([0.0]))
    assert clock.time(lambda: log.append("call")) == pytest.approx(0.004)
    assert log == ["flush", "sync", "sync", "spin", "record", "call", "record", "sync", "elapsed"]  # 2nd: idle


def test_cuda_clock_keeps_the_gpu_busy_while_the_host_issues_and_times_a_host_bound_call_at_host_speed():
    counter = FakeCounter([0.0002, 0.003, 0.0001])  # the host's time to issue each call
    times = [0.0, 4.0, 10.0, 11.0, 20.0, 24.0]  # the GPU, from the start event on: 4 ms, 1 ms, 4 ms
    spins = []
    clock = CudaEventClock(event_factory=lambda: FakeEvent([], times), synchronize=lambda: None, counter=counter,
                           spin=spins.append)
    assert [clock.time(lambda: None) for _ in range(3)] == pytest.approx([0.004, 0.003, 0.004])
    assert clock.host_per_call == pytest.approx([0.0002, 0.003, 0.0001])
    assert clock.gpu_per_call == pytest.approx([0.004, 0.001, 0.004])
    assert spins == pytest.approx([1e-4, 4e-4, 1e-3])  # twice the last host time, at most 1 ms


def test_cuda_path_through_measure():
    times = [0.0, 2.0, 10.0, 13.0, 20.0, 22.0, 30.0, 32.0]
    clock = CudaEventClock(event_factory=lambda: FakeEvent([], times), synchronize=lambda: None,
                           spin=lambda s: None, counter=FakeCounter([0.0] * 4))
    policy = Policy(ci_target=0, warmup=1, warmup_time=0, min_samples=3, min_time=0)
    m = measure(lambda: (lambda: None), clock, policy, FakeElapsed(0))
    assert m.warmup_s == (pytest.approx(0.002),)
    assert m.samples == pytest.approx((0.003, 0.002, 0.002))


def test_the_median_interval_is_the_binomial_order_statistics():
    samples = list(range(1, 101))  # 100 samples: ranks 40 and 61 bound the median with 95% confidence
    assert median_ci(samples) == (40.0, 61.0)
    assert median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)  # too few for 95%: the range


def test_sampling_stops_once_the_median_converges():
    durations = [0.010, 0.01005, 0.00995] * 100  # +-0.5% around 10 ms
    policy = Policy(warmup=0, min_samples=5, min_time=0.05, max_time=100)
    m = measure(lambda: (lambda: None), CpuClock(FakeCounter(durations)), policy, FakeElapsed(0.0))
    assert m.stop == "converged" and len(m.samples) == 10  # min_time after 5, the first judgement at 10
    assert not m.noisy and m.stats["ci_lo_s"] <= m.stats["median_s"] <= m.stats["ci_hi_s"]


def test_a_noisy_call_samples_until_max_time_and_stays_noisy():
    durations = [0.010, 0.020] * 500  # two values, half each: the median never settles
    policy = Policy(warmup=0, min_samples=5, min_time=0.05, max_time=1.0)
    m = measure(lambda: (lambda: None), CpuClock(FakeCounter(durations)), policy, FakeElapsed(0.01))
    assert m.stop == "max_time" and len(m.samples) == 100 and m.noisy


def test_a_spread_out_call_converges_with_enough_samples():
    import numpy as np
    durations = list(np.random.default_rng(0).lognormal(np.log(0.001), 0.05, 5000))  # IQR ~7% of the median
    policy = Policy(warmup=0, min_samples=5, min_time=0.01, max_time=100, max_samples=5000)
    m = measure(lambda: (lambda: None), CpuClock(FakeCounter(durations)), policy, FakeElapsed(0.0))
    assert m.stop == "converged" and not m.noisy
    assert 80 < len(m.samples) < 400  # +-1% needs about (1.96 * 1.25 * 0.05 / 0.01)^2 = 150 samples


def test_max_samples_stops_a_cheap_call_only_once_min_time_is_sampled():
    policy = Policy(ci_target=0, warmup=0, min_samples=2, min_time=0.5, max_time=100, max_samples=3)
    m = measure(lambda: (lambda: None), CpuClock(FakeCounter([0.1] * 100)), policy, FakeElapsed(0.0))
    assert len(m.samples) == 5 and m.stop == Stop.MAX_SAMPLES  # 3 samples were 0.3 s, short of 0.5


def test_past_max_samples_min_time_is_pursued_only_up_to_a_ceiling():
    policy = Policy(ci_target=0, warmup=0, min_samples=2, min_time=10.0, max_time=1e9, max_samples=3)
    m = measure(lambda: (lambda: None), CpuClock(FakeCounter([0.001] * 1000)), policy, FakeElapsed(0.0))
    assert len(m.samples) == 3 * MIN_TIME_OVER_MAX_SAMPLES == 300 and m.stop == Stop.MAX_SAMPLES



class FakeDevice:
    """A device-wide synchronise that costs the host `idle` us with nothing queued, plus `left` us after a
    call that left work on another stream."""

    def __init__(self, left_us: float, idle_us: list[float]):
        self.now, self.pending, self.left, self.idle = 0, False, left_us, list(idle_us)

    def call(self) -> None:
        self.pending = self.left > 0

    def synchronize(self) -> None:
        self.now += int(1000 * (self.idle.pop(0) if self.idle else 5.0))
        if self.pending:
            self.now, self.pending = self.now + int(1000 * self.left), False


def event_clock(device: FakeDevice, calls: int = 1) -> CudaEventClock:
    times = [t for i in range(calls) for t in (10.0 * i, 10.0 * i + 1.0)]  # ms: 1 ms a call
    return CudaEventClock(event_factory=lambda: FakeEvent([], times), synchronize=device.synchronize,
                          spin=lambda s: None, counter=FakeCounter([0.0] * calls), wall=lambda: device.now)


def test_a_gpu_call_that_leaves_work_on_another_stream_is_timed_to_the_devices_end():
    busy = FakeDevice(left_us=300, idle_us=[])
    clock = event_clock(busy)
    assert clock.time(busy.call) == pytest.approx(1e-3 + 300e-6)
    assert clock.stray_per_call == [pytest.approx(300e-6)]
    quiet = FakeDevice(left_us=0, idle_us=[])
    assert event_clock(quiet).time(quiet.call) == pytest.approx(1e-3)


def test_an_idle_synchronise_that_yields_for_tens_of_us_is_no_stray_work():
    """Every fourth synchronise waits 80 us with nothing queued (its thread yielded): over STRAY_MIN_S by
    itself, under the idle synchronises' 90th percentile, so no sample grows."""
    device = FakeDevice(left_us=0, idle_us=[5, 5, 5, 80] * 40)
    clock = event_clock(device, 40)
    samples = [clock.time(device.call) for _ in range(40)]
    assert max(clock.idle_sync_s) == pytest.approx(80e-6)
    assert sum(s > 0 for s in clock.stray_per_call) <= 1 and samples.count(pytest.approx(1e-3)) >= 39


def test_a_pass_with_fewer_samples_than_a_95_percent_interval_needs_is_noisy_not_a_point():
    assert CI_MIN_SAMPLES == 6  # P(Binomial(5, 1/2) = 0) = 1/32 > 2.5%: five samples cannot bound a median
    assert (stats_module._rank(CI_MIN_SAMPLES - 1), stats_module._rank(CI_MIN_SAMPLES)) == (0, 1)  # scipy agrees
    one = summarize([0.000285])
    assert (one["ci_lo_s"], one["ci_hi_s"]) == (0.000285, 0.000285)  # a point: "known to +-0%" is false
    assert is_noisy(one)
    assert noisy_message(one) == "noisy: 1 sample(s), too few for a 95% interval of the median (it takes 6)"
    six = summarize([1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    assert not is_noisy(six)


def test_the_audits_probes_stay_in_the_samples_and_leave_the_statistics_and_the_stop_rule():
    """Every third call is the audit's and reads 3x (caches left cold by the harness): the policy waits for ten
    of the others, and the statistics are theirs."""
    durations = [0.030 if i % 3 == 0 else (0.010, 0.01005, 0.00995)[i % 3] for i in range(300)]
    calls = []
    policy = Policy(warmup=0, min_samples=5, min_time=0.05, max_time=100)
    m = measure(lambda: (lambda: calls.append(1)), CpuClock(FakeCounter(durations)), policy, FakeElapsed(0.0),
                probe=lambda: len(calls) % 3 == 1)
    assert m.stop == "converged" and len(m.samples) == 15 and m.probe == (True, False, False) * 5
    assert m.aside == m.probe and m.stats == summarize([s for s, p in zip(m.samples, m.probe) if not p])
    assert m.median == pytest.approx(0.010)
    counted = measure(lambda: (lambda: None), CpuClock(FakeCounter(durations)), policy, FakeElapsed(0.0))
    assert counted.probe == () and counted.median == pytest.approx(0.01005)  # the 30 ms calls are in it
    assert len(counted.samples) > 2 * len(m.samples)  # and they held its interval wide

"""The timing loop: warm-up, sampling until the median is known, every sample kept, robust statistics.

Sampling stops by convergence, as nvbench does: once the minimum samples and time are in, it stops when
the 95% confidence interval of the median (distribution-free: two order statistics picked with the
binomial distribution) is within +-`ci_target` of it, and at `max_time` or `max_samples` otherwise. Rows
record why sampling stopped (`stop`) and the interval (`ci_lo_s`, `ci_hi_s`); a median that did not
settle is `noisy`.

A measured step is split in two: `setup()` runs untimed and returns the thunk that is timed (so a
backward's graph is built outside the clock). The clocks (clocks.py) are replaceable: tests drive the
loop with fake ones, the CUDA path included.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

from benchctl.measure.clocks import Clock, Thunk
from benchctl.measure.interference import WatchedClock
from benchctl.measure.stats import CI_TARGET, is_noisy, median_ci, summarize
from benchctl.results.schema import set_aside
from benchctl.vocab import Stop

# For min_time, sampling goes past max_samples, up to this many times it: every sample is stored in
# the row, and a call of a few us (clock overhead included) would otherwise keep millions.
MIN_TIME_OVER_MAX_SAMPLES = 100
CI_MIN_SAMPLES = 10  # fewer samples give an interval as wide as their range: never judged converged
# A pass that ran out of time with more than this share of its samples disturbed is `disturbed`, not noisy.
DISTURBED_UNSETTLED = 0.25
# Before each pass only the young generations are collected: the whole heap (torch's objects, 400k more
# once torch.compile has run) took 50-180 ms a collection, a quarter of a quick sweep's time. A cell
# collects it whole once (execute.run_cell).
YOUNG_GENERATIONS = 1
Probe = Callable[[], bool]  # after a sample: whether its call was the audit's own (fresh.Draw.probe)


@dataclass(frozen=True)
class Policy:
    """How long to measure: at least `min_samples` and `min_time` seconds of samples, then until the
    median's confidence interval is within +-`ci_target` of it (converged), at most `max_samples` (once
    `min_time` is sampled: a cheap call asked for a second gets its second) and `max_time`. With
    `ci_target` 0, the fixed rule instead: stop at `min_time`, or early once the running median moved
    less than `stable_rtol` over the last `stable_window` samples and a quarter of `min_time` is sampled.

    Before sampling, untimed calls until both `warmup` of them and `warmup_min_time` seconds are done, or
    until `warmup_time` seconds have passed (at least one call; none at all when `warmup` is 0). Wall
    clock, untimed setup included: judged by the timed part alone, a backward of 40 us behind a 10 ms
    forward warmed up for 2,500 forwards. Sampling is bounded by `max_time` of wall clock too. The first
    calls can run in another state than the rest: on a VM that hands freed memory back to its host, a
    kernel returning a new 80 MB gradient ran its first five calls 7x slower, nearly all of it OS time
    while the host backed the memory again, then settled; a call that slow warms up for all of
    `warmup_time`, while a cheap one is warm after its `warmup` calls."""

    warmup: int = 10
    warmup_min_time: float = 0.1
    warmup_time: float = 0.5
    min_samples: int = 5
    max_samples: int = 1000
    min_time: float = 0.05  # convergence decides the rest (benchmarks/README.md, "Convergence")
    max_time: float = 1.5
    stable_rtol: float = 0.01
    stable_window: int = 5
    ci_target: float = CI_TARGET


@dataclass(frozen=True)
class Measurement:
    samples: tuple[float, ...]
    warmup_s: tuple[float, ...] = ()
    stats: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0  # warm-up and sampling, untimed setup included
    stop: Stop = Stop.MIN_TIME  # why sampling ended
    ci_target: float = CI_TARGET  # noisy: the median's interval is wider than +-this
    disturbed: tuple[bool, ...] = ()  # per sample, set aside (interference.py); empty where not watched
    readings: tuple[float, ...] = ()  # per sample, its window's meter: seconds waited per call (CPU), MHz (GPU)
    watched: str = ""  # the device whose meter watched the samples: cpu or cuda (empty: not watched)
    probe: tuple[bool, ...] = ()  # per sample, the audit's call (fresh.Draw.probe): out of the statistics too

    @property
    def aside(self) -> tuple[bool, ...]:
        """Per sample, left out of the statistics: disturbed or a probe (empty where neither is known)."""
        return tuple(set_aside(len(self.samples), self.disturbed, self.probe))

    @property
    def median(self) -> float:
        return self.stats["median_s"]

    @property
    def fastest(self) -> float:
        return self.stats["min_s"]

    @property
    def disturbed_share(self) -> float | None:
        return sum(self.disturbed) / len(self.disturbed) if self.disturbed else None

    @property
    def noisy(self) -> bool:
        return is_noisy(self.stats, self.ci_target)


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    """Python's cyclic garbage collector off (after collecting what is new), as timeit has it: a
    collection of the whole heap (torch's objects included) would otherwise land in whichever repetition
    crossed its allocation threshold. Reference counting still frees each repetition's tensors and graph."""
    was_enabled = gc.isenabled()
    gc.collect(YOUNG_GENERATIONS)
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def measure(setup: Callable[[], Thunk], clock: Clock, policy: Policy = Policy(),
            elapsed: Callable[[], float] = time.monotonic,
            between: Callable[[], None] = lambda: None, probe: Probe | None = None) -> Measurement:
    """Warm up, then repeat until `policy` is satisfied. Only `thunk()` is inside the clock; `between`
    runs after each sample, outside it (e.g. a GPU clock reading); `probe` says after each whether its call
    was the audit's own (Sampler).

    Python's cyclic garbage collector is off meanwhile (collector_off).
    """
    with collector_off():
        began = elapsed()
        warm = warm_up(setup, clock, policy, elapsed)
        sampler = sample(setup, clock, policy, elapsed, between, probe)
    return sampler.measurement(warm, elapsed() - began)


def sample(setup: Callable[[], Thunk], clock: Clock, policy: Policy, elapsed: Callable[[], float],
           between: Callable[[], None], probe: Probe | None = None) -> Sampler:
    """Samples until `policy` is done with them (the call warm already)."""
    sampler = Sampler(policy, watch_of(clock), probe)
    start = elapsed()
    while not sampler.stop:
        sampler.add(clock.time(setup()))
        between()
        sampler.judge(elapsed() - start)
    return sampler


def watch_of(clock: Clock) -> WatchedClock | None:
    """The clock itself where it watches its calls for interference."""
    return clock if isinstance(clock, WatchedClock) else None


class Sampler:
    """One call's samples as they come, and whether `policy` is done with them (`stop`, set once).

    Under a watched clock (interference.py), the samples it flags disturbed are kept but set aside: the
    policy judges the clean ones (`clean`), and the statistics are theirs. A flag is known once the
    clock's window closes, so the clean samples trail the samples by at most a window. So are the samples
    `probe` calls the audit's own (asked after each sample: fresh.Draw.probe), which find the caches cold
    by the harness's doing: the policy waits for enough of the others.

    The clean samples' sum and (fixed rule) their sorted copy are kept up as samples come: a cheap call
    takes tens of thousands before min_time, and a sum or a median of all of them per sample would cost
    n^2 between the samples."""

    def __init__(self, policy: Policy, watch: WatchedClock | None = None, probe: Probe | None = None):
        self.policy = policy
        self.samples: list[float] = []
        self.probe, self.probes = probe, []  # per sample: the audit's call
        self.clean: list[float] = []
        self.sampled = 0.0
        self.ordered: list[float] = []
        self.medians: list[float] = []
        self.checks = _Convergence(policy.ci_target)
        self.stop: Stop | None = None
        self.watch = watch
        if watch is not None:
            watch.flush()  # the warm-up's calls are judged apart from the samples
        self.first = len(watch.disturbed) if watch is not None else 0  # the watch's index of sample 0
        self.judged = 0

    def add(self, sample: float) -> None:
        self.samples.append(sample)
        self.probes.append(self.probe is not None and self.probe())
        self._sort_out()

    def _sort_out(self) -> None:
        known = len(self.samples) if self.watch is None else len(self.watch.disturbed) - self.first
        for i in range(self.judged, known):
            if not self.probes[i] and (self.watch is None or not self.watch.disturbed[self.first + i]):
                self._keep(self.samples[i])
        self.judged = known

    def _keep(self, sample: float) -> None:
        self.clean.append(sample)
        self.sampled += sample
        if not self.policy.ci_target:
            bisect.insort(self.ordered, sample)
            self.medians.append(_sorted_median(self.ordered))

    def judge(self, spent: float) -> None:
        if not self.stop:
            self.stop = _done(self.clean, len(self.samples), self.sampled, self.medians, spent, self.policy,
                              self.checks)

    def measurement(self, warm: tuple[float, ...], wall: float) -> Measurement:
        flags: tuple[bool, ...] = ()
        readings: tuple[float, ...] = ()
        if self.watch is not None:
            self.watch.flush()
            self._sort_out()
            end = self.first + len(self.samples)
            flags, readings = tuple(self.watch.disturbed[self.first:end]), tuple(self.watch.readings[self.first:end])
        stop = self.stop or Stop.MAX_TIME
        if flags and too_disturbed(flags.count(False), sum(flags) / len(flags), stop, self.policy):
            stop = Stop.DISTURBED
        return Measurement(tuple(self.samples), warm, summarize(self.clean or self.samples), wall, stop,
                           self.policy.ci_target or CI_TARGET, flags, readings,
                           self.watch.kind if self.watch is not None else "",
                           tuple(self.probes) if any(self.probes) else ())


def too_disturbed(clean: int, share: float, stop: Stop, policy: Policy) -> bool:
    """Samples were set aside, and fewer clean ones than the policy's minimum were left, or sampling ran
    out of time or samples with more than DISTURBED_UNSETTLED of them set aside."""
    if share <= 0:
        return False
    return clean < policy.min_samples or (stop in (Stop.MAX_TIME, Stop.MAX_SAMPLES) and share > DISTURBED_UNSETTLED)


def warm_up(setup: Callable[[], Thunk], clock: Clock, policy: Policy,
             elapsed: Callable[[], float]) -> tuple[float, ...]:
    times: list[float] = []
    start = elapsed()
    while policy.warmup and not _warm(len(times), elapsed() - start, policy):
        times.append(clock.time(setup()))
    return tuple(times)


def _warm(calls: int, spent: float, policy: Policy) -> bool:
    if not calls:
        return False
    return spent >= policy.warmup_time or (calls >= policy.warmup and spent >= policy.warmup_min_time)


class _Convergence:
    """Whether the median has converged, judged again each time the samples grew by a tenth (an interval
    per sample would cost more than a cheap call)."""

    def __init__(self, target: float):
        self.target = target
        self.next_check = CI_MIN_SAMPLES

    def converged(self, samples: list[float]) -> bool:
        if len(samples) < self.next_check:
            return False
        self.next_check = len(samples) + max(1, len(samples) // 10)
        lo, hi = median_ci(samples)
        return not is_noisy({"median_s": statistics.median(samples), "ci_lo_s": lo, "ci_hi_s": hi}, self.target)


def _sorted_median(ordered: list[float]) -> float:
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _done(samples: list[float], taken: int, sampled: float, medians: list[float], spent: float, policy: Policy,
          checks: _Convergence) -> Stop | None:
    """Why sampling stops now, if it does; `samples` are the clean ones, `sampled` their sum, `taken` how
    many were taken, the disturbed included (max_samples bounds them all)."""
    if taken >= policy.max_samples and (sampled >= policy.min_time
                                        or taken >= MIN_TIME_OVER_MAX_SAMPLES * policy.max_samples):
        return Stop.MAX_SAMPLES
    if spent >= policy.max_time:
        return Stop.MAX_TIME
    if len(samples) < policy.min_samples:
        return None
    if policy.ci_target:
        return Stop.CONVERGED if sampled >= policy.min_time and checks.converged(samples) else None
    if sampled >= policy.min_time:
        return Stop.MIN_TIME
    enough = len(samples) >= 2 * policy.min_samples and sampled >= policy.min_time / 4
    return Stop.STABLE if enough and _stable(medians, policy) else None


def _stable(medians: list[float], policy: Policy) -> bool:
    if len(medians) < policy.stable_window:
        return False
    window = medians[-policy.stable_window:]
    ref = window[-1]
    return ref > 0 and all(abs(m - ref) <= policy.stable_rtol * ref for m in window)

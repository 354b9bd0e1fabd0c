"""Each dtype's matmul throughput (GFLOP/s) on a device, the roofline's compute peak (calibrate.py stores it).

A rate is the fastest call of a square matmul: the floor a pass is held to (trust.below_floor) must not be beaten
by an honest matmul at a faster moment of a drifting VM. On the CPU the float32 matmul's own speed is read before
and after each rate: a rate timed while that read slow is timed again at the end, up to RETRIES times, its fastest
kept, and what is still timed slow is raised to the readings' fastest (`at_matmul_speed`).
"""

from __future__ import annotations

import functools
import statistics
from typing import Any, Callable

import torch

from benchctl.measure.execute import make_clock
from benchctl.measure.timing import Policy, measure
from benchctl.ops.cells import DTYPES
from benchctl.results.schema import CANARY_SLOW
from benchctl.vocab import DTYPE_NAMES, TF32_PEAK, Device

MATMUL_N = 2048
# A dtype without fast matmul kernels on this CPU (float16 on an AMD EPYC: 0.4 GFLOP/s, 43 s per 2048
# matmul, and `measure` makes several calls) is timed at a smaller size: the largest power of two from
# MATMUL_MIN_N whose call a first timing at MATMUL_MIN_N puts under MATMUL_CALL_S.
MATMUL_MIN_N = 256
MATMUL_CALL_S = 0.25
SIZING = Policy(warmup=1, min_samples=1, min_time=0.0, max_time=1.0)
POLICY = Policy(warmup=2, min_samples=10, min_time=0.5, max_time=10.0)
# The float32 matmul's own speed, read before and after each CPU matmul rate is timed: the fastest of
# READING_CALLS calls at the float32 peak's size (a rate is its fastest call). The canary, a call of 0.2 ms,
# does not say it: over 120 s on the 2-core VM the float32 peak's time correlated with the canary's at 0.13,
# with these readings' at 0.85 (benchmarks/matmul_speed_bench.py).
READING_CALLS = 3
READ_DTYPE = "float32"  # the dtype of the readings' matmul
READING = Policy(warmup=1, warmup_min_time=0.0, min_samples=READING_CALLS, max_samples=READING_CALLS,
                 min_time=0.0, max_time=5.0, ci_target=0.0)
# What a calibration's CPU matmul peaks were raised by where timed slow (`matmul_raised_by`). Files without it
# raised them by the compute canary's slowdown, which overstated them (at_matmul_speed); stale_matmul_peaks.
MATMUL_RAISED_BY = "float32 matmul readings"
# The matmul rates measured: a pass is held against the rate of its own dtype (a GPU's bfloat16 tensor cores
# do over ten times its float32 rate). TF32_PEAK: float32 with TF32 allowed, for float32 GPU passes timed so.
MATMUL_DTYPES = {"cpu": DTYPE_NAMES, "cuda": (*DTYPE_NAMES, TF32_PEAK)}
# Times each CPU rate timed while the float32 matmul read over CANARY_SLOW under its fastest reading is timed again,
# after every dtype's first: a bfloat16 peak timed in a slow stretch of the 2-core VM read 216 GFLOP/s (313 raised)
# where its calls do 415-433 at any other moment, and an honest bfloat16 bmm at 398 read below its floor.
RETRIES = 2


def matmul_gflops(device: str, dtype: str = "float32") -> float:
    """A square matmul in `dtype` (TF32_PEAK: float32 with TF32 allowed; plain float32 has it off), at
    MATMUL_N or the size matmul_size picks for a slow dtype."""
    allowed = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == TF32_PEAK
    try:
        return _matmul_rate(device, dtype, matmul_size(device, dtype), POLICY)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allowed


def matmul_reading() -> float:
    """The CPU's float32 matmul speed now (GFLOP/s): the fastest of READING_CALLS calls at the size of the
    float32 peak (MATMUL_N, or less on a CPU too slow for it)."""
    return _matmul_rate(Device.CPU, READ_DTYPE, _reading_size(), READING)


@functools.cache
def _reading_size() -> int:
    return matmul_size(Device.CPU, READ_DTYPE)


def matmul_size(device: str, dtype: str) -> int:
    """MATMUL_N, or less where one call at MATMUL_MIN_N shows a full-size call would take over MATMUL_CALL_S."""
    n = min(MATMUL_MIN_N, MATMUL_N)
    gflops = _matmul_rate(device, dtype, n, SIZING)
    while n < MATMUL_N and 2 * (2 * n) ** 3 / (gflops * 1e9) <= MATMUL_CALL_S:
        n *= 2
    return n


def _matmul_rate(device: str, dtype: str, n: int, policy: Policy) -> float:
    """The rate of the fastest call: a peak is what the machine can do, and the floor a pass is held to
    (trust.below_floor) must not be beaten by an honest matmul at a faster moment of a drifting VM (by the
    median, the float32 peak read 190 GFLOP/s here, and a sweep's bmm then did 211)."""
    a, b = (torch.randn(n, n, device=device).to(DTYPES.get(dtype, torch.float32)) for _ in range(2))
    m = measure(lambda: (lambda: a @ b), make_clock(device), policy)
    return 2 * n**3 / m.fastest * 1e-9


Around = dict[str, tuple[float, float]]  # dtype -> the float32 matmul's readings (GFLOP/s) before and after its rate


def matmul_rates(device: str, after: Callable[[], None] = lambda: None) -> tuple[dict[str, float], Around]:
    """Each dtype's matmul GFLOP/s, and on the CPU the float32 matmul's speed read before and after its timing
    (matmul_reading); `after` runs after each dtype's first timing. A CPU rate timed slow is timed again (RETRIES),
    the fastest kept with its readings."""
    rates: dict[str, float] = {}
    around: Around = {}
    for dt in MATMUL_DTYPES[device]:
        rates[dt], pair = _between_readings(device, dt)
        around.update({dt: pair} if pair else {})
        after()
    for _ in range(RETRIES):  # only CPU rates have readings, so only they are timed again
        for dt in [dt for dt, r in _slowdowns(around).items() if r > 1 + CANARY_SLOW]:
            rate, pair = _between_readings(device, dt)
            if rate > rates[dt]:
                rates[dt], around[dt] = rate, pair
    return rates, around


def _between_readings(device: str, dtype: str) -> tuple[float, tuple[float, float] | None]:
    """A dtype's rate, and on the CPU the float32 matmul's readings just before and after it."""
    before = matmul_reading() if device == Device.CPU else None
    rate = matmul_gflops(device, dtype)
    return rate, None if before is None else (before, matmul_reading())


def _slowdowns(around: Around) -> dict[str, float]:
    """Each rate's readings against the fastest reading of them all: how much slower the machine read around it."""
    return {dt: _fastest(around) / statistics.mean(pair) for dt, pair in around.items()}


def _fastest(around: Around) -> float:
    return max((r for pair in around.values() for r in pair), default=0.0)


def at_matmul_speed(rates: dict[str, float], around: Around) -> tuple[dict[str, float], dict[str, float]]:
    """Each rate as if timed with the float32 matmul at its fastest reading of the calibration, and the ratio it
    was raised by: a rate whose two readings read, on average, over CANARY_SLOW slower than that is raised by
    the ratio, never lowered. A peak timed slow put an honest bmm's 209 GFLOP/s under the floor
    (trust.below_floor) against its 146; raised by the canary's ratio instead, the float32 peak read 363 GFLOP/s,
    a rate no call of the machine reached (benchmarks/matmul_speed_bench.py). The readings time the float32 peak's
    own matmul, so float32's is raised to their fastest at most: by their ratio it read 225-230 GFLOP/s where no
    float32 call of the 2-core VM at its size did over 199 (a rate is the fastest of many calls, a reading of three)."""
    slow = {dt: r if r > 1 + CANARY_SLOW else 1.0 for dt, r in _slowdowns(around).items()}
    if slow.get(READ_DTYPE, 1.0) > 1.0 and rates.get(READ_DTYPE):
        slow[READ_DTYPE] = max(1.0, min(slow[READ_DTYPE], _fastest(around) / rates[READ_DTYPE]))
    return {dt: rate * slow.get(dt, 1.0) for dt, rate in rates.items()}, slow


def stale_matmul_peaks(cpu: dict[str, Any]) -> str | None:
    """Why a stored CPU calibration's matmul peaks cannot be trusted, or None: raised by the compute canary's
    slowdown (a calibration from before MATMUL_RAISED_BY), which put the float32 peak up to 1.56x above the
    fastest rate timed (benchmarks/README.md, "The matmul peak, and the floor it sets")."""
    raised = {dt: r for dt, r in cpu.get("matmul_slowdown", {}).items() if r > 1.0}
    if not raised or cpu.get("matmul_raised_by") == MATMUL_RAISED_BY:
        return None
    which = ", ".join(f"{dt} {r:.2f}x" for dt, r in raised.items())
    return (f"the calibration raised its CPU matmul peaks by the compute canary's slowdown ({which}), a rule that "
            "stored them above any rate the machine reaches, so compute-bound passes read a low % of peak: "
            "calibrate again (`benchctl env --calibrate`)")

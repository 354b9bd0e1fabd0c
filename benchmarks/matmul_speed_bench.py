"""What to raise a CPU matmul peak timed in a slow moment by: the compute canary's slowdown, or the float32
matmul's own. For `--seconds`, over and over: the canary (the median of five readings) and the float32 matmul's
speed (`matmul_peaks.matmul_reading`) before and after the float32 peak is timed as `env --calibrate` times it.

    .venv/bin/python benchmarks/matmul_speed_bench.py [--seconds 120]

Prints the peaks as timed, and what each rule would store from each of them: raised by the canary's ratio to
its fastest reading, as calibrate did, or by the matmul readings' ratio to their fastest, as it does (each only
where over 5% slower). A stored peak is a rate the machine reaches: held against the fastest peak timed in the
whole run, one over 1 is a rate no timing reached. Run it with nothing else busy.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchctl.machine.canary import canary
from benchctl.measure.matmul_peaks import matmul_gflops, matmul_reading
from benchctl.results.schema import CANARY_SLOW

CANARY_READINGS = 5


def canary_now() -> float:
    return statistics.median(canary() for _ in range(CANARY_READINGS))


def rounds(seconds: float) -> np.ndarray:
    """Rows of (canary s around, matmul reading before, after (GFLOP/s), float32 peak as timed (GFLOP/s))."""
    rows = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        canary_before, before = canary_now(), matmul_reading()
        peak = matmul_gflops("cpu", "float32")
        after, canary_after = matmul_reading(), canary_now()
        rows.append(((canary_before + canary_after) / 2, before, after, peak))
    return np.array(rows)


def raised(peaks: np.ndarray, ratio: np.ndarray) -> np.ndarray:
    return np.where(ratio > 1 + CANARY_SLOW, peaks * ratio, peaks)


def describe(name: str, peaks: np.ndarray, fastest: float) -> str:
    return (f"{name}: {np.median(peaks):.0f} GFLOP/s median ({peaks.min():.0f}-{peaks.max():.0f}), "
            f"{np.median(peaks) / fastest:.2f}x the fastest peak timed ({peaks.max() / fastest:.2f}x at most)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    rows = rounds(args.seconds)
    canary_s, around, peaks = rows[:, 0], rows[:, 1:3].mean(axis=1), rows[:, 3]
    fastest = peaks.max()
    print(f"{len(rows)} peaks timed over {args.seconds:g} s: canary {canary_s.min() * 1e6:.0f}-"
          f"{canary_s.max() * 1e6:.0f} us, matmul readings {rows[:, 1:3].min():.0f}-{rows[:, 1:3].max():.0f} GFLOP/s")
    print(f"correlation with the peak's time (1 / its rate): the canary's time {np.corrcoef(canary_s, 1 / peaks)[0, 1]:.2f}, "
          f"the readings' {np.corrcoef(1 / around, 1 / peaks)[0, 1]:.2f}")
    print(describe("as timed", peaks, fastest))
    print(describe("raised by the canary", raised(peaks, canary_s / canary_s.min()), fastest))
    print(describe("raised by the matmul readings", raised(peaks, rows[:, 1:3].max() / around), fastest))


if __name__ == "__main__":
    main()

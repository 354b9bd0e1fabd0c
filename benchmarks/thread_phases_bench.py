"""Whose speed moves: the canary on one thread and on torch's default threads, read in turn.

    .venv/bin/python benchmarks/thread_phases_bench.py [--seconds 60] [--window 5]

Reads the canary (machine/canary.py) on one thread, then on torch's default threads, back to back for
`--seconds`, and prints each count's readings against its own calibrated time (`env --calibrate`): their
10/50/90% quantiles, the share over the `slow` mark (SLOW_PHASE), the medians of each `--window` seconds
side by side, and the correlation of the two counts' readings. A machine whose one thread holds while its
threads together move is slow in its parallel work only (a second core shared on the host, say), and a
`run --threads 1` there times on the steady part. Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from benchctl.machine import canary
from benchctl.measure import calibrate
from benchctl.results.schema import SLOW_PHASE


def readings(counts: tuple[int, ...], seconds: float) -> tuple[list[float], dict[int, list[float]]]:
    """When each round of readings began (s from the start), and each count's readings (s)."""
    found: dict[int, list[float]] = {n: [] for n in counts}
    began, start = [], time.monotonic()
    while time.monotonic() - start < seconds:
        began.append(time.monotonic() - start)
        for n in counts:
            found[n].append(canary.canary_on(n))
    return began, found


def report(began: list[float], found: dict[int, list[float]], calibrated: dict[int, float], window: float) -> None:
    ratios = {n: np.array(found[n]) / calibrated[n] for n in found}
    for n, r in ratios.items():
        q = np.quantile(r, [0.1, 0.5, 0.9])
        print(f"{n} thread(s), {len(r)} readings against {calibrated[n] * 1e6:.0f} us: 10/50/90% "
              + ", ".join(f"{v:.2f}" for v in q) + f"x; over {1 + SLOW_PHASE:.2f}x: {np.mean(r > 1 + SLOW_PHASE):.0%}")
    counts = sorted(ratios)
    if len(counts) > 1:
        print(f"correlation of the two counts' readings: {np.corrcoef(ratios[counts[0]], ratios[counts[-1]])[0, 1]:.2f}")
    slots = np.floor(np.array(began) / window)
    for slot in np.unique(slots):
        at = slots == slot
        print(f"{slot * window:5.0f} s  " + "  ".join(f"{n}: {statistics.median(ratios[n][at]):.2f}x" for n in counts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--window", type=float, default=5.0)
    args = parser.parse_args()
    peaks = calibrate.load_peaks().get("cpu", {})
    counts = tuple(n for n in calibrate.canary_threads() if canary.calibrated_s(peaks, n))
    if not counts:
        raise SystemExit("no calibrated canary: run `benchctl env --calibrate` first")
    began, found = readings(counts, args.seconds)
    report(began, found, {n: canary.calibrated_s(peaks, n) for n in counts}, args.window)


if __name__ == "__main__":
    torch.manual_seed(0)
    main()

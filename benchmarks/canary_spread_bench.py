"""How far the canary reads from its calibrated time on a quiet machine at speed: the spread a pass's `slow`
mark must stand clear of.

    .venv/bin/python benchmarks/canary_spread_bench.py [--seconds 60] [--every 2]

Takes a window of readings every `--every` seconds for `--seconds` (each reading as a sweep takes one around
a pass: a memory probe, then the canary, on torch's default threads; a window as `env --calibrate` takes
one), and prints, against the fastest window's median (the calibrated time's rule): each window's median,
the share of single readings and of two-reading means (what a pass's row keeps: the mean of the reading
before it and the one after) over 1.05, 1.10 and 1.15, and their quantiles. The calibration on disk is
left alone. Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchctl.measure import calibrate, trust

BARS = (1.05, 1.10, 1.15)


def windows(seconds: float, every: float) -> list[list[float]]:
    """Windows of calibrate.CANARY_READINGS readings, one every `every` seconds."""
    found, start = [], time.monotonic()
    while time.monotonic() - start < seconds:
        began = time.monotonic()
        found.append([trust.probe()[1] for _ in range(calibrate.CANARY_READINGS)])
        time.sleep(max(0.0, every - (time.monotonic() - began)))
    return found


def report(found: list[list[float]]) -> None:
    fastest = min(statistics.median(w) for w in found)
    singles = np.array([r for w in found for r in w]) / fastest
    pairs = (singles[:-1:2] + singles[1::2]) / 2
    print(f"fastest window's median: {fastest * 1e6:.1f} us; windows: "
          + ", ".join(f"{statistics.median(w) / fastest:.3f}" for w in found))
    for name, ratios in (("single readings", singles), ("two-reading means", pairs)):
        over = ", ".join(f"over {bar:.2f}: {np.mean(ratios > bar):.0%}" for bar in BARS)
        q = np.quantile(ratios, [0.1, 0.5, 0.9, 0.99])
        print(f"{name} ({len(ratios)}): {over}; quantiles 10/50/90/99%: " + ", ".join(f"{v:.3f}" for v in q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=2.0)
    args = parser.parse_args()
    report(windows(args.seconds, args.every))


if __name__ == "__main__":
    main()

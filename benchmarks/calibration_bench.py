"""How much the canary's calibrated time moves from one `env --calibrate` to the next, by three rules: one
window of readings after the peaks (the rule before), the median of the calibration's windows, and the
fastest of them (the rule now).

    .venv/bin/python benchmarks/calibration_bench.py [--calibrations 8] [--pause 10]

Calibrates `--calibrations` times, `--pause` seconds apart, into a scratch cache (the machine's own
calibration is left alone), and prints each calibration's windows on torch's default threads, then each
rule's calibrated times across calibrations: fastest, median, slowest, and slowest over fastest. A
calibration that lands in a slow phase of the machine makes every run after it blind to one (its canary
reads under 1). Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import torch

from benchctl.measure import calibrate


def calibrated_windows() -> list[float]:
    """One calibration's canary windows on torch's default threads (seconds), in the order taken."""
    seen: list[dict[int, float]] = []
    take = calibrate.canary_window

    def recorded(counts: tuple[int, ...]) -> dict[int, float]:
        seen.append(take(counts))
        return seen[-1]

    calibrate.canary_window = recorded
    try:
        calibrate.calibrate(["cpu"])
    finally:
        calibrate.canary_window = take
    threads = torch.get_num_threads()
    return [w[threads] for w in seen if threads in w]


def spread(name: str, values: list[float]) -> str:
    us = sorted(v * 1e6 for v in values)
    return (f"{name:<22} fastest {us[0]:6.0f} us, median {statistics.median(us):6.0f}, slowest {us[-1]:6.0f}, "
            f"slowest/fastest {us[-1] / us[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrations", type=int, default=8)
    parser.add_argument("--pause", type=float, default=10.0, help="seconds between calibrations")
    args = parser.parse_args()
    os.environ["BENCHCTL_CACHE"] = tempfile.mkdtemp(prefix="calibration-bench-")
    rules = {"one window (before)": lambda w: w[-1], "median of windows": statistics.median,
             "fastest window (now)": min}
    found: dict[str, list[float]] = {name: [] for name in rules}
    for i in range(args.calibrations):
        windows = calibrated_windows()
        for name, rule in rules.items():
            found[name].append(rule(windows))
        print(f"calibration {i + 1}: windows {', '.join(f'{w * 1e6:.0f}' for w in windows)} us", flush=True)
        if i + 1 < args.calibrations:
            time.sleep(args.pause)
    for name, values in found.items():
        print(spread(name, values))


if __name__ == "__main__":
    main()

"""How much the canary's calibrated time moves from one `env --calibrate` to the next, by three rules: one
window of readings after the peaks (the rule before), the median of the calibration's windows, and the
fastest of them (the rule now); and the float32 matmul peak, as timed and raised to the canary's
calibrated speed (the rule now).

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


def calibrated_windows() -> tuple[list[float], dict]:
    """One calibration's canary windows on torch's default threads (seconds), in the order taken, and its
    CPU peaks."""
    seen: list[dict[int, float]] = []
    take = calibrate.canary_window

    def recorded(counts: tuple[int, ...]) -> dict[int, float]:
        seen.append(take(counts))
        return seen[-1]

    calibrate.canary_window = recorded
    try:
        peaks = calibrate.calibrate(["cpu"])["cpu"]
    finally:
        calibrate.canary_window = take
    threads = torch.get_num_threads()
    return [w[threads] for w in seen if threads in w], peaks


def spread(name: str, values: list[float], unit: str = "us", scale: float = 1e6) -> str:
    v = sorted(x * scale for x in values)
    return (f"{name:<22} least {v[0]:6.0f} {unit}, median {statistics.median(v):6.0f}, most {v[-1]:6.0f}, "
            f"most/least {v[-1] / v[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrations", type=int, default=8)
    parser.add_argument("--pause", type=float, default=10.0, help="seconds between calibrations")
    args = parser.parse_args()
    os.environ["BENCHCTL_CACHE"] = tempfile.mkdtemp(prefix="calibration-bench-")
    rules = {"one window (before)": lambda w: w[-1], "median of windows": statistics.median,
             "fastest window (now)": min}
    found: dict[str, list[float]] = {name: [] for name in rules}
    peaks: dict[str, list[float]] = {"float32 as timed": [], "float32 raised (now)": []}
    for i in range(args.calibrations):
        windows, cpu = calibrated_windows()
        for name, rule in rules.items():
            found[name].append(rule(windows))
        raised = cpu["matmul_slowdown"]["float32"]
        peaks["float32 as timed"].append(cpu["gflops"] / raised)
        peaks["float32 raised (now)"].append(cpu["gflops"])
        print(f"calibration {i + 1}: windows {', '.join(f'{w * 1e6:.0f}' for w in windows)} us; float32 "
              f"{cpu['gflops'] / raised:.0f} GFLOP/s timed, raised {raised:.2f}x", flush=True)
        if i + 1 < args.calibrations:
            time.sleep(args.pause)
    for name, values in found.items():
        print(spread(name, values))
    for name, values in peaks.items():
        print(spread(name, values, "GFLOP/s", 1.0))


if __name__ == "__main__":
    main()

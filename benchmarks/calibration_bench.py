"""How much the canary's calibrated time moves from one `env --calibrate` to the next, by three rules: one
window of readings after the peaks (the rule before), the median of the calibration's windows, and the
fastest of them (the rule now); and the float32 matmul peak, as timed and raised to the float32
matmul's fastest reading (the rule now); and the memory probe's typical reading (`read_gbps_typical`, the bar a run's
start is warned against), as the median of ten probes back to back after the calibration (the rule before) and of
the probes its canary windows take all through it (the rule now), with the share of those spread probes, a quiet
machine's, that would have been warned under 60% of it (preflight.SLOW_MEMORY_SHARE).

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

from benchctl.machine import membw
from benchctl.measure import calibrate
from benchctl.sweep.preflight import SLOW_MEMORY_SHARE


def calibrated_windows() -> tuple[list[float], list[float], dict]:
    """One calibration's canary windows on torch's default threads (seconds), in the order taken, the memory
    probes they took (GB/s), and its CPU peaks."""
    seen: list[calibrate.Window] = []
    take = calibrate.canary_window

    def recorded(counts: tuple[int, ...]) -> calibrate.Window:
        seen.append(take(counts))
        return seen[-1]

    calibrate.canary_window = recorded
    try:
        peaks = calibrate.calibrate(["cpu"])["cpu"]
    finally:
        calibrate.canary_window = take
    threads = torch.get_num_threads()
    reads = [gbps for w in seen for gbps in w.read_gbps]
    return [w.canary_s[threads] for w in seen if threads in w.canary_s], reads, peaks


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
    typical: dict[str, list[float]] = {"ten at the end (before)": [], "windows' probes (now)": []}
    warned: dict[str, list[float]] = {name: [] for name in typical}
    for i in range(args.calibrations):
        windows, reads, cpu = calibrated_windows()
        ten = statistics.median(membw.probe() for _ in range(10))
        for name, bar in zip(typical, (ten, cpu["read_gbps_typical"])):
            typical[name].append(bar)
            warned[name].append(sum(r < SLOW_MEMORY_SHARE * bar for r in reads) / len(reads))
        for name, rule in rules.items():
            found[name].append(rule(windows))
        raised = cpu["matmul_slowdown"]["float32"]
        peaks["float32 as timed"].append(cpu["gflops"] / raised)
        peaks["float32 raised (now)"].append(cpu["gflops"])
        print(f"calibration {i + 1}: windows {', '.join(f'{w * 1e6:.0f}' for w in windows)} us; float32 "
              f"{cpu['gflops'] / raised:.0f} GFLOP/s timed, raised {raised:.2f}x; memory probes "
              f"{min(reads):.1f}-{max(reads):.1f} GB/s (median {cpu['read_gbps_typical']:.1f}), ten at the end "
              f"median {ten:.1f}", flush=True)
        if i + 1 < args.calibrations:
            time.sleep(args.pause)
    for name, values in found.items():
        print(spread(name, values))
    for name, values in peaks.items():
        print(spread(name, values, "GFLOP/s", 1.0))
    for name, values in typical.items():
        print(spread(f"read typical, {name}", values, "GB/s", 1.0)
              + f"; spread probes under 60% of it: median {statistics.median(warned[name]):.0%}, "
              f"most {max(warned[name]):.0%}")


if __name__ == "__main__":
    main()

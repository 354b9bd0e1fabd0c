"""How far a calibrated copy bandwidth moves from one calibration to the next, by the rule that reads it: one
window's median call (one copy timed as `env --calibrate` once timed it), or the fastest of several windows'
medians spread over the calibration (as it times them now, copies.copy_window).

    .venv/bin/python benchmarks/copy_peak_bench.py [--windows 18] [--pause 10] [--best-of 6]

Takes `--windows` windows `--pause` seconds apart, each the DRAM copy and the copy within each cache level
(copies.copy_window), and prints per level, lowest to highest and how many times the lowest the highest is:
each window's GB/s (one window a calibration), and the best of each `--best-of` consecutive windows (a
calibration that takes that many). The peak a pass's `% of peak` is held to is one such reading: the rule whose
readings move least moves every later row least. Run it with nothing else on the machine; the calibration on
disk is left alone.
"""

from __future__ import annotations

import argparse
import time

from benchctl.measure import copies, matmul_peaks


def spread(readings: list[float]) -> str:
    """Readings as "54.7-66.9 GB/s (1.22x)"."""
    low, high = min(readings), max(readings)
    return f"{low:.1f}-{high:.1f} GB/s ({high / low:.2f}x)"


def best_of(readings: list[float], n: int) -> list[float]:
    """The best of each `n` consecutive readings (a last group short of `n` left out)."""
    return [max(readings[i:i + n]) for i in range(0, len(readings) - n + 1, n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=18)
    parser.add_argument("--pause", type=float, default=10.0)
    # as many windows as a CPU calibration takes: one first, one after each dtype's matmul rate, one last
    parser.add_argument("--best-of", type=int, default=len(matmul_peaks.MATMUL_DTYPES["cpu"]) + 2)
    args = parser.parse_args()
    found: dict[str, list[float]] = {}
    for i in range(args.windows):
        for level, gbps in copies.copy_window("cpu").items():
            found.setdefault(level, []).append(gbps)
        print(f"window {i + 1}/{args.windows}: " + ", ".join(f"{lv} {v[-1]:.1f}" for lv, v in found.items()),
              flush=True)
        time.sleep(args.pause)
    print(f"| level | one window | best of {args.best_of} |\n|---|---|---|")
    for level, readings in found.items():
        print(f"| {level} | {spread(readings)} | {spread(best_of(readings, args.best_of))} |")


if __name__ == "__main__":
    main()

"""The machine's own speed over time: one fixed call (a chain of twenty 64x64 matmuls and tanh, about
0.3 ms on the 2-core VM) timed as 100-call medians back to back, and the stretches in which it ran slow.

    .venv/bin/python benchmarks/vm_phases_bench.py [--seconds 40] [--slow 1.3]

Prints the windows, the fastest median, the share of windows at least `--slow` times slower, and how long
each slow stretch lasted. Run it with nothing else on the machine: what it shows is then the host's doing.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def chain(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = a
    for _ in range(20):
        out = torch.tanh(out @ b / 8.0)
    return out


def windows(seconds: float) -> list[float]:
    """100-call medians of the chain, back to back, for `seconds`."""
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 64, generator=gen), torch.randn(64, 64, generator=gen)
    start, medians = time.monotonic(), []
    while time.monotonic() - start < seconds:
        times = []
        for _ in range(100):
            t = time.perf_counter()
            chain(a, b)
            times.append(time.perf_counter() - t)
        medians.append(statistics.median(times))
    return medians


def stretches(slow: list[bool]) -> list[int]:
    """The lengths of the runs of consecutive slow windows."""
    runs, current = [], 0
    for s in slow + [False]:
        if s:
            current += 1
        elif current:
            runs.append(current)
            current = 0
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--slow", type=float, default=1.3, help="a window this many times the fastest is slow")
    args = parser.parse_args()
    medians = windows(args.seconds)
    fastest, per = min(medians), args.seconds / len(medians)
    slow = [m >= args.slow * fastest for m in medians]
    print(f"{len(medians)} windows of {per * 1e3:.0f} ms; fastest {fastest * 1e6:.0f} us; slow windows "
          f"{sum(slow)} ({sum(slow) / len(medians):.0%}); slow stretches (s): "
          f"{[round(r * per, 2) for r in stretches(slow)]}")


if __name__ == "__main__":
    main()

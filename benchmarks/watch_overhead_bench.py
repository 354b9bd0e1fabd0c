"""What watching for disturbed samples costs the sampling loop: the same call sampled for a second on a
plain CPU clock and on a watched one (measure/interference.py), alternating, several rounds; the figure
is the watched loop's wall time per sample over the plain loop's (goal: at most 1.10), and each one's
median sample (the watch must not change what the clock reads).

    .venv/bin/python benchmarks/watch_overhead_bench.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics

import torch

from benchctl.measure.clocks import CpuClock
from benchctl.measure.interference import watched
from benchctl.measure.timing import Policy, measure

POLICY = Policy(warmup=10, min_time=1.0, max_time=1.0, max_samples=10**9, ci_target=0.0)
CALLS = {  # name -> (setup returning the thunk)
    "add 16 floats (~3 us)": (lambda a=torch.ones(16): lambda: a + a),
    "64x256 @ 256x256 (~50 us)": (lambda a=torch.ones(64, 256), b=torch.ones(256, 256): lambda: a @ b),
    "lstm-sized matmul 64x256 @ 256x1024 (~300 us)": (lambda a=torch.ones(64, 256), b=torch.ones(256, 1024): lambda: a @ b),
}


def per_sample(setup, watch: bool) -> tuple[float, float]:
    clock = watched(CpuClock()) if watch else CpuClock()
    m = measure(lambda: setup(), clock, POLICY)
    if watch:
        clock.close()
    return m.wall_s / len(m.samples), m.median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print("| call | plain us/sample | watched us/sample | watched / plain (median of rounds) | median sample plain / watched us |")
    print("|---|---|---|---|---|")
    for name, setup in CALLS.items():
        plain, seen, ratios, med_p, med_w = [], [], [], [], []
        for r in range(args.rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            got = {w: per_sample(setup, w) for w in order}
            plain.append(got[False][0]), seen.append(got[True][0]), ratios.append(got[True][0] / got[False][0])
            med_p.append(got[False][1]), med_w.append(got[True][1])
        print(f"| {name} | {statistics.median(plain) * 1e6:.2f} | {statistics.median(seen) * 1e6:.2f} | "
              f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) | "
              f"{statistics.median(med_p) * 1e6:.2f} / {statistics.median(med_w) * 1e6:.2f} |", flush=True)


if __name__ == "__main__":
    main()

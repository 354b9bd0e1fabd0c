"""Whether the sweep's wait for the machine to return to speed (canary.wait_for_speed, run --settle) ends when
the machine is back, or on one lucky reading: a trace of the canary read as the wait reads it, one reading a
POLL_S, and every wait that could have started in it played back under each rule of when to stop.

    .venv/bin/python benchmarks/settle_bench.py [--seconds 600] [--after 10] [--out trace.json]

A wait starts at each slow reading (over 1 + SLOW_PHASE of the calibrated time, the `slow` mark's bar) and
ends at the first reading its rule accepts: `first` (that reading is under the bar: the sweep's rule before), or
the median of the last 2 or 3 readings under it (3: the sweep's rule, canary.SPEED_READINGS). For each rule it prints the waits' lengths and, over the
`--after` seconds after each wait ended (where the sweep measures its slow cells again), the median ratio
read, and the share of those stretches whose median is itself over the bar (the cells measured then come
out `slow` again). `--trace` plays back a trace written before instead of reading a new one. Run it with
nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from benchctl.machine import canary
from benchctl.measure import calibrate
from benchctl.results.schema import SLOW_PHASE

BAR = 1 + SLOW_PHASE
RULES = {"first": 1, "median of 2": 2, "median of 3": 3}  # readings whose median must be under the bar


def trace(seconds: float, calibrated_s: float) -> list[float]:
    """The canary's ratio to its calibrated time, read every canary.POLL_S for `seconds`."""
    ratios, start = [], time.monotonic()
    while time.monotonic() - start < seconds:
        ratios.append(canary.canary() / calibrated_s)
        time.sleep(canary.POLL_S)
    return ratios


def waits(ratios: list[float], last: int, after: int) -> list[tuple[int, float]]:
    """Each wait that starts at a slow reading, played back through the sweep's own wait (canary.wait_for_speed)
    on a canary that reads the trace, ending where the median of the `last` readings is under the bar: its length
    in readings, and the median ratio of the `after` readings that follow it (the waits that have them)."""
    found = []
    for start, ratio in enumerate(ratios):
        if ratio <= BAR:
            continue
        now = [0.0]
        try:
            _, waited = canary.wait_for_speed(1.0, math.inf, read=iter(ratios[start:]).__next__,
                                              sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0],
                                              readings=last)
        except StopIteration:  # the trace ended first
            continue
        end = start + round(waited / canary.POLL_S)
        if end + after < len(ratios):
            found.append((end - start, statistics.median(ratios[end + 1:end + 1 + after])))
    return found


def report(ratios: list[float], after_s: float) -> None:
    after = max(1, round(after_s / canary.POLL_S))
    print(f"{len(ratios)} readings, median {np.median(ratios):.3f}x calibrated, "
          f"{np.mean(np.array(ratios) > BAR):.0%} over {BAR:.2f}; quantiles 10/50/90%: "
          + " / ".join(f"{q:.3f}" for q in np.quantile(ratios, [0.1, 0.5, 0.9])))
    print(f"\n| rule | waits | readings waited (median, 90%) | median ratio after | after still over {BAR:.2f} |")
    print("|---|---|---|---|---|")
    for name, last in RULES.items():
        found = waits(ratios, last, after)
        if not found:
            print(f"| {name} | 0 | | | |")
            continue
        lengths, later = np.array([w[0] for w in found]), np.array([w[1] for w in found])
        print(f"| {name} | {len(found)} | {np.median(lengths):.0f}, {np.quantile(lengths, 0.9):.0f} | "
              f"{np.median(later):.3f} | {np.mean(later > BAR):.0%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--after", type=float, default=10.0, help="seconds after a wait's end to read")
    parser.add_argument("--out", type=Path, help="write the trace here")
    parser.add_argument("--trace", type=Path, help="play back this trace instead of reading one")
    args = parser.parse_args()
    if args.trace:
        ratios = json.loads(args.trace.read_text())["ratios"]
    else:
        peaks = calibrate.load_peaks().get("cpu", {})
        calibrated_s = canary.calibrated_s(peaks, torch.get_num_threads())
        if not calibrated_s:
            raise SystemExit("no calibrated canary: run `benchctl env --calibrate` first")
        ratios = trace(args.seconds, calibrated_s)
        if args.out:
            args.out.write_text(json.dumps({"calibrated_s": calibrated_s, "ratios": ratios}))
    report(ratios, args.after)


if __name__ == "__main__":
    main()

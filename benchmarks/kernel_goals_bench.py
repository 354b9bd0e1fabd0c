"""Each seed operator's C++ kernel against its goal and its floor, through `benchctl run` as a user runs it,
with interleaved rounds (--rounds 3: each time is the median of samples pooled from 3 rounds) and the kernel
timed sample by sample in alternation with its baseline (--pair-with): each ratio is the median of the
sample pairs' own ratios, with its 95% confidence interval (a kernel more than 10x faster is timed alone,
and its ratio is the median of the rounds' own ratios). Each pass samples for --min-time seconds (3:
one second a round). Measured apart, even back to back, a kernel and its baseline could sit in different
phases of the host, which swings by up to 2x for a second at a time: grid_sample at 2048 once took 0.18 ms
in one round of a second and 0.34 ms in the next two, and decided a goal on that alone.

    .venv/bin/benchctl env --calibrate      # the peaks the floor is computed from
    .venv/bin/python benchmarks/kernel_goals_bench.py [--rounds 3] [--min-time 3] [--op lstm_cell]
        [--allocator tcmalloc]

The floor of a cell is the time its bytes take at the bandwidth of the cache level they fit in, or its
FLOPs at the calibrated peak, whichever is longer (the bound behind the report's % of peak and the floor
line on its time chart). `% of probe` holds the kernel's GB/s against the read bandwidth probed around
that very cell (mem_gbps), the fairest floor on a machine whose bandwidth moves with its neighbours.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from benchctl.results import storage
from benchctl.analysis.speedup import speedup


Line = dict  # one line of the table, as cells() gives it


@dataclass(frozen=True)
class Goal:
    op: str
    impl: str
    baseline: str
    args: tuple[str, ...]
    met: Callable[[Line], bool | None]  # whether a cell meets the goal; None: no goal for that cell
    what: str


def at_least(ratio: float, probe_pct: float = 0.0) -> Callable[[Line], bool]:
    """The baseline's time over the kernel's reaches `ratio`, and the kernel's GB/s `probe_pct`% of the
    read bandwidth probed around it."""
    return lambda c: c["ratio"] >= ratio and (not probe_pct or (c["probe"] or 0.0) >= probe_pct)


def grid_sample_met(c: Line) -> bool:
    return at_least(1.5 if c["at"] == "image_size=4096" else 1.0)(c)


GOALS = (
    Goal("hoconv2d", "cpp", "py", ("--target", "filter", "--batch-sizes", "16", "--passes", "forward,backward"),
         lambda c: at_least(50.0, probe_pct=50.0)(c) if c["pass"] == "backward" else None,
         "backward at least 50x py and 50% of the probed read bandwidth; forward at its read floor"),
    Goal("naflex_posembed", "cpp", "loop", ("--batch-sizes", "256", "--passes", "forward_backward"),
         at_least(10.0), "forward+backward at least 10x the loop"),
    Goal("grid_sample", "cpp", "py", ("--param", "image_size=256,512,1024,2048,4096", "--passes", "backward"),
         grid_sample_met, "backward never slower than py (and 1.5x at 4096)"),
    Goal("lstm_cell", "cpp", "py", ("--param", "H=64", "--batch-sizes", "64", "--passes", "forward_backward"),
         at_least(2.0), "forward+backward at least 2x eager"),
    Goal("patch_resample", "bmm", "vmap", ("--passes", "forward,backward"), lambda c: None, "no ratio goal: its floor"),
)


def run(goal: Goal, rounds: int, min_time: float, allocator: str) -> pd.DataFrame:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "benchctl", "run", f"{goal.baseline},{goal.impl}", "cpu", "--op", goal.op,
               *goal.args, "--pair-with", goal.baseline, "--rounds", str(rounds), "--min-time", str(min_time),
               "--allocator", allocator, "--out", out]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        return storage.load(root=out)


def cells(goal: Goal, rows: pd.DataFrame) -> list[dict]:
    """One line per cell: both medians, their ratio and the kernel against its floor."""
    ok = rows[rows["status"] == "ok"].assign(key=lambda d: d["params"] + d["pass"])
    out = []
    for _, cell in ok.groupby("key", sort=False):
        by = {r["impl"]: r for _, r in cell.iterrows()}
        if goal.impl not in by or goal.baseline not in by:
            continue
        mine, base = by[goal.impl], by[goal.baseline]
        floor_s = mine["median_s"] * mine["pct_of_peak"] / 100 if pd.notna(mine["pct_of_peak"]) else None
        out.append({"op": goal.op, "pass": mine["pass"], "at": _at(mine), "base": base["median_s"],
                    "mine": mine["median_s"], "ratio": speedup(base, mine),
                    "ci": _ci(mine),
                    "floor": floor_s, "pct": mine["pct_of_peak"], "level": mine["peak_level"],
                    "probe": 100 * mine["gbps"] / mine["mem_gbps"] if pd.notna(mine["mem_gbps"]) else None,
                    "spread": mine["round_spread"], "noisy": bool(mine["noisy"]),
                    "modes": _modes(mine)})
    return out


def _ci(row: pd.Series) -> str:
    """The paired ratio's 95% interval; none where the kernel was timed alone (too far from its baseline
    to pair: the row's message says so)."""
    if pd.isna(row.get("paired_ci_lo")):
        return ""
    return f" ({row['paired_ci_lo']:.2f}-{row['paired_ci_hi']:.2f})"


def _modes(row: pd.Series) -> str:
    """The fast and slow modes' medians when the rounds disagreed (the row's median is one of them)."""
    if pd.isna(row.get("mode_fast_s")):
        return ""
    return f"{row['mode_fast_s'] * 1e3:.3g} / {row['mode_slow_s'] * 1e3:.3g}"


def _at(row: pd.Series) -> str:
    params = json.loads(row["params"])
    return f"{row['axis']}={params.get(row['axis'], row['axis_value'])}"


def fmt(value, spec: str) -> str:
    return "" if value is None or pd.isna(value) else format(value, spec)


VERDICT = {True: "met", False: "**missed**", None: ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=3.0, help="seconds of samples per pass, all rounds")
    parser.add_argument("--op", action="append", help="only this operator (repeatable)")
    parser.add_argument("--allocator", default="system", choices=("system", "jemalloc", "tcmalloc"))
    args = parser.parse_args()
    print("| operator | pass | cell | baseline ms | kernel ms | ratio (95% CI) | floor ms | % of floor (level) "
          "| % of probe | round spread | kernel modes ms | goal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    verdicts = []
    for goal in (g for g in GOALS if not args.op or g.op in args.op):
        print(f"| **{goal.op}** ({goal.impl} vs {goal.baseline}) | | {goal.what} |{' |' * 9}", flush=True)
        for c in cells(goal, run(goal, args.rounds, args.min_time, args.allocator)):
            met = goal.met(c)
            verdicts += [met] if met is not None else []
            print(f"| {c['op']} | {c['pass']} | {c['at']} | {c['base'] * 1e3:.3g} | {c['mine'] * 1e3:.3g}"
                  f"{' ~' if c['noisy'] else ''} | {c['ratio']:.2f}x{c['ci']} | "
                  f"{fmt(c['floor'] and c['floor'] * 1e3, '.3g')} | "
                  f"{fmt(c['pct'], '.0f')} ({c['level'] or '-'}) | {fmt(c['probe'], '.1f')} | "
                  f"{fmt(c['spread'], '.2f')} | {c['modes']} | {VERDICT[met]} |", flush=True)
    print(f"\n{sum(verdicts)} of {len(verdicts)} cells with a goal meet it.")


if __name__ == "__main__":
    main()

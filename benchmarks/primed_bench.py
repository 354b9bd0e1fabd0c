"""Paired turns begun with an untimed call on every side, against turns where a side whose call takes
PRIMED_UP_TO (10 ms) or longer skips it (measure/paired.py): what it buys (pairs, intervals, time) and
whether it moves the speedups beyond what two runs of one kind move them.

    .venv/bin/python benchmarks/primed_bench.py --out /tmp/primed --reps 2
    .venv/bin/python benchmarks/primed_bench.py --out /tmp/primed --judge-only

Runs `benchctl run all cpu --quick --in-process` on the operators with calls of 10 ms and more, ABAB...: A
with every turn primed (PRIMED_UP_TO set to infinity in this process), B as the code has it. Then, for the
paired passes: the speedups' move between the two kinds (each cell's median over its runs), set against
their move between two runs of one kind; the signed median shift (a bias of the untimed call's absence);
pairs per pass, passes with an interval, and each run's wall time. Nothing else may run meanwhile.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from benchctl.results import storage

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling, wherever the script is run from
from speedup_repeat_bench import moved, speedups, wall  # noqa: E402

OPS = "hoconv2d,naflex_posembed,patch_resample"
# What each kind sets before benchctl starts timing (the sealed clock refuses a change after): A primes
# every turn, B runs the code as it is.
KINDS = {"A": "import benchctl.measure.paired as p; p.PRIMED_UP_TO = float('inf'); ", "B": ""}


def run(out: Path, label: str) -> None:
    """One sweep in a process of its own, its cells in that process (--in-process)."""
    argv = ["run", "all", "cpu", "--op", OPS, "--quick", "--in-process", "--out", str(out / label)]
    code = KINDS[label[0]] + f"from benchctl.cli import main; main({argv!r})"
    subprocess.run([sys.executable, "-c", code], check=False)


def pairs(folder: Path) -> pd.DataFrame:
    """Each paired pass's pairs and whether it got an interval."""
    rows = storage.load([folder])
    rows = rows[(rows["status"] == "ok") & rows["paired_with"].notna()]
    return pd.DataFrame({"pairs": [len(s) for s in rows["samples_s"]],
                         "interval": rows["paired_ci_lo"].notna().to_numpy()})


def judge(out: Path) -> None:
    labels = sorted(p.name for p in out.iterdir() if p.is_dir() and p.name[0] in KINDS)
    found = {label: speedups(out / label) for label in labels}
    for kind in KINDS:
        mine = [label for label in labels if label[0] == kind]
        counted = pd.concat([pairs(out / label) for label in mine])
        print(f"{kind}: runs took " + ", ".join(f"{wall(out / label):.0f} s" for label in mine)
              + f"; {len(counted)} paired passes, median {counted['pairs'].median():.0f} pairs (turns of the slower"
              f" side), {int(counted['interval'].sum())} with an interval")
        for a, b in itertools.combinations(mine, 2):
            print(f"  {a} vs {b}: median move {moved(found[a], found[b])['median_move']:.1%}")
    medians = {kind: pd.concat([found[label]["speedup"] for label in labels if label[0] == kind], axis=1).median(axis=1)
               for kind in KINDS}
    both = medians["A"].index.intersection(medians["B"].index)
    shift = np.log(medians["B"].loc[both] / medians["A"].loc[both])
    print(f"A vs B, each cell's median: {len(both)} cells, median move {np.expm1(np.median(np.abs(shift))):.1%},"
          f" signed median shift {np.expm1(np.median(shift)):+.1%}, >10% {int((np.abs(shift) > np.log(1.1)).sum())}")
    for key, value in shift.sort_values().items():
        print(f"  {np.expm1(value):+7.1%}  {' '.join(str(k) for k in key)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--judge-only", action="store_true")
    args = parser.parse_args()
    if not args.judge_only:
        for rep in range(args.reps):
            for kind in KINDS:
                run(args.out, f"{kind}{rep + 1}")
    judge(args.out)


if __name__ == "__main__":
    main()

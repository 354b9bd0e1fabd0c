"""A/A runs: the same sweep run twice and compared, on a quiet machine and with a busy neighbour in the
second run; then a planted 20% slowdown, which must still be found.

    .venv/bin/python benchmarks/aa_bench.py [--pairs 10] [--processes 3] [--out /tmp/aa] [--judge-only]

Each side is `benchctl run` as a user types it (lstm_cell py,cpp at B=16,64 and grid_sample py,cpp at
256, default settings), and each pair is judged by `benchctl compare --json`. The busy neighbour is a
process that keeps one core busy for the whole of the second run. The planted change is the `slowed`
operator's `planted` implementation (benchmarks/aa_ops), whose chain of matmuls the second run makes 1.2x
longer; its reference `py`, timed in alternation with it, stays as it was. A `gross` pair plants a 3x
slowdown the same way, both runs `--quick` (one process, as a quick bisect measures): it must be found by
the own times, past verdict.GROSS, whatever the machine's drift says. Prints one table
row per kind of pair: the verdicts counted over its cells, the second runs' passes with samples set
aside, those more than 5% off the first run's median with nothing marking them (not disturbed, not on a
slow machine, not noisy), the largest change of a cell no neighbour touched, as verdict.gross measures it
(the nearer end of its interval, divided by the machine's change; for a quiet pair it must stay under
GROSS), and the median wall time of a run. Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from benchctl.analysis import verdict
from benchctl.results import storage
from benchctl.results.schema import left_alone, slow_machine

HERE = Path(__file__).resolve().parent
BENCHCTL = [sys.executable, "-m", "benchctl"]
SWEEPS = (["py,cpp", "cpu", "--op", "lstm_cell", "--batch-sizes", "16,64"],
          ["py,cpp", "cpu", "--op", "grid_sample", "--param", "image_size=256"])
PLANTED = ["py,planted", "cpu", "--ops-dir", str(HERE / "aa_ops"), "--op", "slowed"]
# each kind's sweeps and the second run's AA_SLOWDOWN (quiet and busy: none)
KINDS = {"planted": ([PLANTED], "1.2"), "gross": ([[*PLANTED, "--quick"]], "3")}
NEIGHBOURS = (verdict.DISTURBED, verdict.BESIDE_WORK)  # the doubts a neighbour casts: no gross change outgrows them
BUSY = "while True: pass"


def run(out: Path, sweeps: list[list[str]], processes: int | None, env: dict[str, str] | None = None) -> float:
    """The sweeps into `out` (one run folder each); seconds they took."""
    start = time.monotonic()
    for sweep in sweeps:
        extra = ["--processes", str(processes)] if processes else []
        subprocess.run([*BENCHCTL, "run", *sweep, *extra, "--out", str(out)], check=True, capture_output=True,
                       env={**os.environ, **(env or {})})
    return time.monotonic() - start


def verdicts(base: Path, new: Path) -> tuple[collections.Counter, list[str], float]:
    done = subprocess.run([*BENCHCTL, "compare", str(base), str(new), "--json"], capture_output=True, text=True)
    cells = json.loads(done.stdout)["cells"]
    counted = collections.Counter(c["verdict"] for c in cells)
    counted["by pairs"] = sum(bool(c.get("by_pairs")) for c in cells)
    counted["past gross"] = sum(bool(c.get("despite")) for c in cells)
    reasons = [c["reason"] for c in cells if c.get("reason")]
    return counted, reasons, max(map(gross_change, cells), default=1.0)


def gross_change(cell: dict) -> float:
    """How far the cell moved as verdict.gross holds a change (either way, 1: none): the nearer end of its
    interval (and the rows' ratio), divided by the machine's change where that goes the same way; 1 for a
    cell a neighbour touched, or without an interval."""
    if cell.get("ratio_low") is None or (cell.get("reason") or "").startswith(NEIGHBOURS):
        return 1.0
    interval, machine = (cell["ratio_low"], cell["ratio_high"]), cell.get("machine") or {}
    return max(1.0, *(verdict.gross_change(said, interval, cell["ratio"], machine) for said in verdict.DECISIVE))


def rows_of(folder: Path):
    rows = storage.load([folder])
    return rows[rows["status"] == "ok"].set_index(["op", "impl", "params", "pass"])


def disturbed(base: Path, new: Path) -> tuple[int, int, int]:
    """Of B's passes: how many had samples set aside, how many are off A's median by over 5% with no mark
    (not stopped disturbed, not on a slow machine, not timed beside other work, not noisy: the tables' marks),
    and how many there are."""
    a, b = rows_of(base), rows_of(new)
    set_aside = (b["disturbed_share"].fillna(0) > 0).sum()
    flagged = [not left_alone(r) or slow_machine(r) for r in b.to_dict("records")]
    marked = pd.Series(flagged, index=b.index, dtype=bool) | b["noisy"].fillna(False).astype(bool)
    off = (b["median_s"] / a["median_s"].reindex(b.index) - 1).abs() > 0.05
    return int(set_aside), int((off & ~marked).sum()), len(b)


def pairs(kind: str, n: int, out: Path, processes: int | None, judge_only: bool) -> dict:
    counts: collections.Counter = collections.Counter()
    reasons: collections.Counter = collections.Counter()
    walls, marked, unmarked, passes, flagged, largest = [], 0, 0, 0, 0, 1.0
    for i in range(n):
        base, new = out / kind / f"{i}-a", out / kind / f"{i}-b"
        if not judge_only:
            walls += measure_pair(kind, base, new, processes)
        got, why, moved = verdicts(base, new)
        largest = max(largest, moved)
        counts.update(got)
        flagged += bool(got.get("slower") or got.get("faster"))
        reasons.update(why)
        m, u, p = disturbed(base, new)
        marked, unmarked, passes = marked + m, unmarked + u, passes + p
        print(f"{kind} pair {i + 1}/{n}: {dict(got)} {dict(collections.Counter(why))}", file=sys.stderr, flush=True)
    return {"kind": kind, "pairs": n, "flagged": flagged, "verdicts": dict(counts), "reasons": dict(reasons),
            "disturbed_passes_in_b": f"{marked}/{passes}", "unmarked_off_in_b": f"{unmarked}/{passes}",
            "largest": largest, "median_run_s": statistics.median(walls) if walls else 0}


def measure_pair(kind: str, base: Path, new: Path, processes: int | None) -> list[float]:
    """Side A, then side B (beside a busy neighbour, or with the planted slowdown); their wall times."""
    sweeps, slowdown = KINDS.get(kind, (list(SWEEPS), None))
    walls = [run(base, sweeps, processes)]
    neighbour = subprocess.Popen([sys.executable, "-c", BUSY]) if kind == "busy" else None
    try:
        walls.append(run(new, sweeps, processes, {"AA_SLOWDOWN": slowdown} if slowdown else None))
    finally:
        if neighbour:
            neighbour.kill()
            neighbour.wait()
    return walls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--processes", type=int, help="run --processes (default: run's own)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/benchctl-aa"))
    parser.add_argument("--kinds", default="quiet,busy,planted,gross")
    parser.add_argument("--judge-only", action="store_true", help="compare the pairs already under --out again")
    args = parser.parse_args()
    if not args.judge_only and args.out.is_dir() and any(args.out.iterdir()):
        # compare reads a folder's runs together: a pair measured into one already holding runs is judged with them
        parser.error(f"--out {args.out} already holds pairs: give a new folder, or --judge-only to judge them again")
    print("| pairs | n | pairs with a slower or faster pass | slower | faster | same | unsure | of them by pairs | "
          "of them past GROSS | why unsure | B's passes with samples set aside | B's passes >5% off A, unmarked | "
          "largest change, as GROSS holds it | run s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for kind in args.kinds.split(","):
        r = pairs(kind, args.pairs, args.out, args.processes, args.judge_only)
        v = r["verdicts"]
        why = ", ".join(f"{k} {n}" for k, n in sorted(r["reasons"].items(), key=lambda kv: -kv[1]))
        counts = " | ".join(str(v.get(k, 0)) for k in ("slower", "faster", "same", "unsure", "by pairs", "past gross"))
        print(f"| {kind} | {r['pairs']} | {r['flagged']} | {counts} | {why} | {r['disturbed_passes_in_b']} | "
              f"{r['unmarked_off_in_b']} | {r['largest']:.2f}x | {r['median_run_s']:.0f} |", flush=True)


if __name__ == "__main__":
    main()

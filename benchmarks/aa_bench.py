"""A/A runs: the same sweep run twice and compared, on a quiet machine and with a busy neighbour in the
second run; then a planted 20% slowdown, which must still be found.

    .venv/bin/python benchmarks/aa_bench.py [--pairs 10] [--processes 3] [--out /tmp/aa]

Each side is `benchctl run` as a user types it (lstm_cell py,cpp at B=16,64 and grid_sample py,cpp at
256, default settings), and each pair is judged by `benchctl compare --json`. The busy neighbour is a
process that keeps one core busy for the whole of the second run. The planted change is the `slowed`
operator (benchmarks/aa_ops), whose chain of matmuls the second run makes 1.2x longer. Prints one table
row per kind of pair: the verdicts counted over its cells, the disturbed passes of the second runs, and
the median wall time of a run. Run it with nothing else on the machine.
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

HERE = Path(__file__).resolve().parent
BENCHCTL = [sys.executable, "-m", "benchctl"]
SWEEPS = (["py,cpp", "cpu", "--op", "lstm_cell", "--batch-sizes", "16,64"],
          ["py,cpp", "cpu", "--op", "grid_sample", "--param", "image_size=256"])
PLANTED = ["py", "cpu", "--ops-dir", str(HERE / "aa_ops"), "--op", "slowed"]
BUSY = "while True: pass"


def run(out: Path, sweeps: list[list[str]], processes: int | None, env: dict[str, str] | None = None) -> float:
    """The sweeps into `out` (one run folder each); seconds they took."""
    start = time.monotonic()
    for sweep in sweeps:
        extra = ["--processes", str(processes)] if processes else []
        subprocess.run([*BENCHCTL, "run", *sweep, *extra, "--out", str(out)], check=True, capture_output=True,
                       env={**os.environ, **(env or {})})
    return time.monotonic() - start


def verdicts(base: Path, new: Path) -> tuple[collections.Counter, list[str]]:
    done = subprocess.run([*BENCHCTL, "compare", str(base), str(new), "--json"], capture_output=True, text=True)
    cells = json.loads(done.stdout)["cells"]
    counted = collections.Counter(c["verdict"] for c in cells)
    reasons = [c["reason"] for c in cells if c.get("reason")]
    return counted, reasons


def disturbed(folder: Path) -> tuple[int, int]:
    """(passes that stopped disturbed or had samples set aside, passes) of a side's rows."""
    import pandas as pd

    rows = pd.concat(pd.read_parquet(p) for p in folder.rglob("*.parquet"))
    ok = rows[rows["status"] == "ok"]
    marked = (ok["stop"] == "disturbed") | (ok["disturbed_share"].fillna(0) > 0)
    return int(marked.sum()), len(ok)


def pairs(kind: str, n: int, out: Path, processes: int | None) -> dict:
    counts: collections.Counter = collections.Counter()
    reasons: collections.Counter = collections.Counter()
    walls, marked, passes = [], 0, 0
    for i in range(n):
        base, new = out / kind / f"{i}-a", out / kind / f"{i}-b"
        sweeps = [PLANTED] if kind == "planted" else list(SWEEPS)
        walls.append(run(base, sweeps, processes))
        neighbour = subprocess.Popen([sys.executable, "-c", BUSY]) if kind == "busy" else None
        try:
            walls.append(run(new, sweeps, processes, {"AA_SLOWDOWN": "1.2"} if kind == "planted" else None))
        finally:
            if neighbour:
                neighbour.kill()
                neighbour.wait()
        got, why = verdicts(base, new)
        counts.update(got)
        reasons.update(why)
        m, p = disturbed(new)
        marked, passes = marked + m, passes + p
        print(f"{kind} pair {i + 1}/{n}: {dict(got)} {dict(collections.Counter(why))}", file=sys.stderr, flush=True)
    return {"kind": kind, "pairs": n, "verdicts": dict(counts), "reasons": dict(reasons),
            "disturbed_passes_in_b": f"{marked}/{passes}", "median_run_s": statistics.median(walls)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--processes", type=int, help="run --processes (default: run's own)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/benchctl-aa"))
    parser.add_argument("--kinds", default="quiet,busy,planted")
    args = parser.parse_args()
    print("| pairs | n | slower | faster | same | unsure | why unsure | B's passes with disturbed samples | run s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind in args.kinds.split(","):
        r = pairs(kind, args.pairs, args.out, args.processes)
        v = r["verdicts"]
        why = ", ".join(f"{k} {n}" for k, n in sorted(r["reasons"].items(), key=lambda kv: -kv[1]))
        print(f"| {kind} | {r['pairs']} | {v.get('slower', 0)} | {v.get('faster', 0)} | {v.get('same', 0)} | "
              f"{v.get('unsure', 0)} | {why} | {r['disturbed_passes_in_b']} | {r['median_run_s']:.0f} |", flush=True)


if __name__ == "__main__":
    main()

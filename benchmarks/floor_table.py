"""The table of "The CUDA kernels at the GPU's floor" from `benchctl run` results: for every timed pass of
the implementations asked for (every one by default), its bytes, its median, GB/s, its share of the calibrated
copy bandwidth, its share of the roofline bound (`pct_of_peak`: the bytes at the bandwidth of the cache level
they fit in, or the FLOPs at the calibrated peak where that is longer) and whether that share meets the goal.

    python benchmarks/floor_table.py RUN_DIR_OR_FOLDER... [--impls cuda,triton] [--device cuda] [--goal 70]

A pass whose median is its host's issue time is marked `host` and never meets the goal: its share says
nothing of the kernel (time it as CUDA-graph replays, `run --cuda-graph`, to see the kernel). Each way of
timing (eager, cuda_graph, L2 flushed) is a row of its own. The copy bandwidth is the one `benchctl env
--calibrate` stored in the runs' metadata; without it the shares are left empty.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from benchctl.analysis.summary import host_bound_rows
from benchctl.analysis.timed_alike import timing_kinds
from benchctl.report.page import measured_peaks
from benchctl.results import storage
from benchctl.results.params import params_text
from benchctl.vocab import PASSES, Status

GOAL = 70.0  # % of the roofline bound: 70% of the calibrated copy bandwidth, or of the FLOP ceiling
HEADER = ("operator", "params", "pass", "impl", "timed", "MB", "ms", "GB/s", "% of copy", "% of bound", "goal")


def floor_rows(rows: pd.DataFrame, copy_gbps: float | None, impls: Sequence[str] | None, device: str,
               goal: float = GOAL) -> list[tuple[str, ...]]:
    """One line per ok pass of `impls` (None: every implementation) on `device`, cell by cell (the sweep axis
    in numeric order), then by pass and implementation."""
    ok = rows[(rows["status"] == Status.OK) & (rows["device"] == device)]
    ok = ok if impls is None else ok[ok["impl"].isin(impls)]
    ok = ok.assign(_timed=timing_kinds(ok).str.strip(" ()").replace("", "eager"), _host=host_bound_rows(ok),
                   _pass=ok["pass"].map({p: i for i, p in enumerate(PASSES)}))
    ok = ok.sort_values(["op", "target", "axis_value", "params", "_pass", "impl", "_timed"])
    return [_line(row, copy_gbps, goal) for row in ok.to_dict("records")]


def _line(row: dict[str, Any], copy_gbps: float | None, goal: float) -> tuple[str, ...]:
    nbytes, gbps, pct = row.get("bytes"), row.get("gbps"), row.get("pct_of_peak")
    share = f"{100 * gbps / copy_gbps:.0f}%" if _known(gbps) and copy_gbps else ""
    bound = f"{pct:.0f}% ({row.get('peak_level') or 'FLOPs'})" if _known(pct) else ""
    verdict = "host" if row["_host"] else "" if not _known(pct) else "yes" if pct >= goal else "no"
    op = row["op"] if row.get("target") in (None, "op") or pd.isna(row["target"]) else f"{row['op']}/{row['target']}"
    return (op, params_text(row["params"]), row["pass"], row["impl"], row["_timed"],
            f"{nbytes / 1e6:.1f}" if _known(nbytes) else "", f"{row['median_s'] * 1e3:.4g}",
            f"{gbps:.0f}" if _known(gbps) else "", share, bound, verdict)


def _known(value: Any) -> bool:
    return value is not None and not pd.isna(value)


def markdown(lines: Sequence[tuple[str, ...]]) -> str:
    head = "| " + " | ".join(HEADER) + " |\n|" + "---|" * len(HEADER) + "\n"
    return head + "".join("| " + " | ".join(line) + " |\n" for line in lines)


def copy_bandwidth(rows: pd.DataFrame, metas: Sequence[dict[str, Any]], device: str) -> float | None:
    """The calibrated copy GB/s of `device` the runs stored (the last run's where they differ)."""
    return measured_peaks(rows, metas).get(device, {}).get("gbps")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders, or folders of runs")
    parser.add_argument("--impls", help="comma list of implementations (default: all)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--goal", type=float, default=GOAL, help="%% of the roofline bound a pass should reach")
    args = parser.parse_args()
    folders = storage.run_folders(args.runs)
    if not folders:
        sys.exit(f"error: no runs in {', '.join(map(str, args.runs))}")
    rows, metas = pd.concat([storage.load_run(f) for f in folders], ignore_index=True), storage.run_metas(folders)
    copy = copy_bandwidth(rows, metas, args.device)
    lines = floor_rows(rows, copy, args.impls.split(",") if args.impls else None, args.device, args.goal)
    print(f"copy bandwidth: {f'{copy:.0f} GB/s (calibrated)' if copy else 'not calibrated'}; goal: "
          f"{args.goal:.0f}% of the roofline bound; {len(lines)} passes from {len(folders)} runs\n")
    print(markdown(lines), end="")


if __name__ == "__main__":
    main()

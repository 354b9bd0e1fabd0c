"""Honest implementations' calls on data never drawn before, against the calls around them, against the controls
(calls on seen data copied in as the unseen data was) and against the median of the pass's calls
(measure/unseen.py): how far from 1 their ratios go, set against CACHED_RATIO and OVERALL_RATIO, the bars a pass
must clear in every one of its judged calls, by one measure, to be called a result cache.

    .venv/bin/python benchmarks/unseen_bench.py --out /tmp/unseen

Runs `benchctl run all cpu --quick --in-process` with each pass's ratios recorded as its audit judges them,
then prints, per operator and for each measure, the passes judged, the median ratio, the largest ratio, and
the largest of the passes' smallest ratios (what the rule compares with its bar); how many passes the rule
called a cache, and how many the rule before the controls (against the pass's median) would have. The CPU-time
ratios are given for every pass, though the rule reads them only where the watch set the unseen calls aside
(unseen.by_cpu). `--neighbour` keeps a process spinning on one core throughout, as a busy machine would (a CI
job, a compile); `--neighbour forks` starts processes back to back instead, as a build does.
Nothing else may run meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchctl.measure import audit, unseen

# What keeps the machine busy beside the sweep (--neighbour): a process spinning on one core, or processes
# started back to back (each start a task the kernel makes, so every call's CPU time counts the process's clock
# beyond its listed threads', cores.call_cpu)
NEIGHBOURS = {"spin": [sys.executable, "-c", "while True: pass"],
              "forks": ["sh", "-c", "while :; do /bin/true; done"]}


def recorded(log: list[dict]) -> None:
    """Audit.verdict, recording each pass's unseen ratios beside its verdict."""
    real = audit.Audit.verdict

    def verdict(self, samples=(), aside=(), warm=0, cpu=()):
        said = real(self, samples, aside, warm, cpu)  # first: it observes the last call
        flags, controls = self.unseen[warm:], self.controls[warm:]
        ours = len(flags) == len(samples)
        cell = self.resolved.cell
        log.append({"op": cell.op, "impl": cell.impl, "pass": self.pass_name, "params": cell.params.to_dict(),
                    "ratios": unseen.ratios(samples, flags, aside) if ours else [],
                    "overall": unseen.overall(samples, flags, aside, controls) if ours else [],
                    "median": unseen.overall(samples, flags, aside) if ours else [],
                    "controlled": unseen.controlled(samples, controls, aside),
                    "cpu": unseen.ratios(cpu, flags) if len(cpu) == len(flags) else [],
                    "cpu_overall": unseen.overall(cpu, flags) if len(cpu) == len(flags) else [],
                    "by_cpu": unseen.by_cpu(flags, aside, cpu),
                    "cache": bool(unseen.cached(samples, flags, aside, cpu, controls)),
                    "cache_by_median": bool(unseen.cached(samples, flags, aside, cpu)), **_aside(flags, aside)})
        return said
    audit.Audit.verdict = verdict


def _aside(flags: list[bool], aside) -> dict:
    """How many of the pass's unseen and seen calls the watch set aside, and whether the unseen ones' flags
    were overruled (unseen.believed) or left them unjudged (unseen.unjudged)."""
    aside = list(aside)
    if len(aside) != len(flags):
        return {}
    mine = [a for a, u in zip(aside, flags) if u]
    return {"unseen": len(mine), "unseen_aside": sum(mine), "seen": len(flags) - len(mine),
            "seen_aside": sum(aside) - sum(mine), "overruled": unseen.believed(flags, aside) != aside,
            "unjudged": bool(unseen.unjudged(flags, aside))}


def set_aside(log: list[dict]) -> None:
    watched = [r for r in log if "unseen" in r]

    def share(part: str, whole: str) -> float:
        return sum(r[part] for r in watched) / max(1, sum(r[whole] for r in watched))
    print(f"\nset aside as disturbed: {share('unseen_aside', 'unseen'):.1%} of {sum(r['unseen'] for r in watched)} "
          f"unseen calls (each watched alone), {share('seen_aside', 'seen'):.1%} of the seen; passes whose unseen "
          f"calls' flags were overruled: {sum(r['overruled'] for r in watched)}, left unjudged: "
          f"{sum(r['unjudged'] for r in watched)}, judged by CPU time: {sum(r['by_cpu'] for r in watched)}, "
          f"of {len(watched)}")


def summary(log: list[dict]) -> None:
    for measure, title in (("ratios", "against the calls around them"),
                           ("overall", "against the controls (where two were left clean; else the pass's median)"),
                           ("median", "against the pass's median (the rule before the controls)"),
                           ("cpu", "CPU time against the calls around them"),
                           ("cpu_overall", "CPU time against the pass's median")):
        print(f"\n{title}\n")
        print("| op | passes judged | median ratio | largest ratio | largest smallest-of-a-pass | called a cache |")
        print("|---|---|---|---|---|---|")
        for op in sorted({r["op"] for r in log}):
            print(_row(op, [r for r in log if r["op"] == op], measure))
    print(f"\npasses: {len(log)}; judged: {sum(len(r['ratios']) >= unseen.UNSEEN_JUDGED for r in log)}; "
          f"CACHED_RATIO {unseen.CACHED_RATIO}, OVERALL_RATIO {unseen.OVERALL_RATIO}; set against their controls: "
          f"{sum(r['controlled'] for r in log)}; called a cache: {sum(r['cache'] for r in log)}, against the pass's "
          f"median (before the controls): {sum(r['cache_by_median'] for r in log)}")
    set_aside(log)


def _row(op: str, passes: list[dict], measure: str) -> str:
    judged = [r for r in passes if len(r[measure]) >= unseen.UNSEEN_JUDGED]
    every = [x for r in judged for x in r[measure]]
    if not every:
        return f"| {op} | 0 | | | | |"
    smallest = max(min(r[measure]) for r in judged)
    caches = sum(r["cache_by_median" if measure == "median" else "cache"] for r in passes)  # by that rule
    return f"| {op} | {len(judged)} | {np.median(every):.2f} | {max(every):.2f} | {smallest:.2f} | {caches} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--neighbour", nargs="?", const="spin", choices=sorted(NEIGHBOURS),
                        help="a neighbour throughout: a process spinning on one core (spin, the default), or a "
                             "shell starting processes back to back, as a build does (forks)")
    args = parser.parse_args()
    log: list[dict] = []
    recorded(log)
    from benchctl.cli import main as cli
    neighbour = subprocess.Popen(NEIGHBOURS[args.neighbour], start_new_session=True) if args.neighbour else None
    try:
        cli(["run", "all", "cpu", "--quick", "--in-process", "--out", str(args.out / "run")])
    except SystemExit as done:
        if done.code:
            raise
    finally:
        if neighbour is not None:
            os.killpg(neighbour.pid, signal.SIGKILL)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "ratios.json").write_text(json.dumps(log))
        summary(log)


if __name__ == "__main__":
    main()

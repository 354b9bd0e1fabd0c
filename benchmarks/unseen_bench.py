"""Honest implementations' calls on data never drawn before, against the calls around them (measure/unseen.py):
how far from 1 their ratios go, set against CACHED_RATIO, the bar a pass must clear in every one of its
judged calls to be called a result cache.

    .venv/bin/python benchmarks/unseen_bench.py --out /tmp/unseen

Runs `benchctl run all cpu --quick --in-process` with each pass's ratios recorded as its audit judges them,
then prints, per operator, the passes judged, the median ratio, the largest ratio, and the largest of the
passes' smallest ratios (what the rule compares with CACHED_RATIO); and how many passes the rule called a cache.
Nothing else may run meanwhile.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchctl.measure import audit, unseen


def recorded(log: list[dict]) -> None:
    """Audit.verdict, recording each pass's unseen ratios beside its verdict."""
    real = audit.Audit.verdict

    def verdict(self, samples=(), aside=(), warm=0):
        said = real(self, samples, aside, warm)  # first: it observes the last call
        flags = self.unseen[warm:]
        found = unseen.ratios(samples, flags, aside) if len(flags) == len(samples) else []
        cell = self.resolved.cell
        log.append({"op": cell.op, "impl": cell.impl, "pass": self.pass_name, "params": cell.params.to_dict(),
                    "ratios": found, "cache": bool(unseen.cached(samples, flags, aside))})
        return said
    audit.Audit.verdict = verdict


def summary(log: list[dict]) -> None:
    print("| op | passes judged | median ratio | largest ratio | largest smallest-of-a-pass | called a cache |")
    print("|---|---|---|---|---|---|")
    for op in sorted({r["op"] for r in log}):
        judged = [r for r in log if r["op"] == op and len(r["ratios"]) >= unseen.UNSEEN_JUDGED]
        every = [x for r in judged for x in r["ratios"]]
        if not every:
            print(f"| {op} | 0 | | | | |")
            continue
        smallest = max(min(r["ratios"]) for r in judged)
        caches = sum(r["cache"] for r in log if r["op"] == op)
        print(f"| {op} | {len(judged)} | {np.median(every):.2f} | {max(every):.2f} | {smallest:.2f} | {caches} |")
    print(f"\npasses: {len(log)}; judged: {sum(len(r['ratios']) >= unseen.UNSEEN_JUDGED for r in log)}; "
          f"CACHED_RATIO {unseen.CACHED_RATIO}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    log: list[dict] = []
    recorded(log)
    from benchctl.cli import main as cli
    try:
        cli(["run", "all", "cpu", "--quick", "--in-process", "--out", str(args.out / "run")])
    except SystemExit as done:
        if done.code:
            raise
    finally:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "ratios.json").write_text(json.dumps(log))
        summary(log)


if __name__ == "__main__":
    main()

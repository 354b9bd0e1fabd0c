"""Pairs timed on warm caches against pairs timed on flushed ones (run --flush-caches): how many passes timed in
pairs read their partner over PARTNER_APART off the partner's own row, how many of those the canary puts on the
machine and how many on the pairing itself (speedup.machine_moved, pairing_moved), and how far each paired speedup
lies from the ratio of the two rows' medians. Then, over the passes of every folder given, whether the machine's two
probes between the two cells (the canary's time, compute; `mem_gbps`, the memory's read bandwidth) follow the
partner's drift: their correlation, and among the drifts over PARTNER_APART, how many each probe's move matches
within PARTNER_APART, against the same with the probes' moves dealt at random among them.

    .venv/bin/benchctl run all cpu --quick --out /tmp/warm
    .venv/bin/benchctl run all cpu --quick --flush-caches --out /tmp/cold
    .venv/bin/python benchmarks/cold_pairs_bench.py /tmp/warm /tmp/cold

Each folder is one run (a folder of runs is read as one). Nothing else may run while the two sweeps do.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from benchctl.analysis.partner_lines import paired_with_base
from benchctl.analysis.speedup import PARTNER_APART, machine_moved, pairing_moved, partner_apart, partner_drift, speedup
from benchctl.results import storage


def pair_facts(base: dict, row: dict) -> dict:
    """One paired pass: its partner's drift, what the canary says moved it, the paired speedup over the medians'
    ratio, and the probes' moves from the partner's cell to this one (a slower machine reads above 1)."""
    medians = base["median_s"] / row["median_s"]
    probes = {"canary": _ratio(row.get("canary_ratio"), base.get("canary_ratio")),
              "memory": _ratio(base.get("mem_gbps"), row.get("mem_gbps"))}
    return {"op": row["op"], "drift": partner_drift(base, row), "apart": partner_apart(base, row), **probes,
            "machine": machine_moved(base, row) is True, "pairing": pairing_moved(base, row),
            "off": speedup(base, row) / medians, "wall": row.get("wall_s") or 0.0}


def summary(name: str, facts: list[dict]) -> str:
    drifts = np.array([abs(math.log(f["drift"])) for f in facts])
    offs = np.array([abs(math.log(f["off"])) for f in facts])
    apart = [f for f in facts if f["apart"]]
    return (f"{name}: {len(facts)} paired passes, {len(apart)} partners over {PARTNER_APART:.0%} off their own row "
            f"({sum(f['machine'] for f in apart)} the machine's, {sum(f['pairing'] for f in apart)} the pairing's); "
            f"partner drift median {math.exp(np.median(drifts)):.2f}x, largest {math.exp(drifts.max()):.2f}x; "
            f"paired speedup off the medians' ratio median {math.exp(np.median(offs)):.2f}x, largest "
            f"{math.exp(offs.max()):.2f}x; paired passes' wall {sum(f['wall'] for f in facts):.0f} s")


def by_op(facts: list[dict]) -> list[str]:
    ops = sorted({f["op"] for f in facts})
    return [f"  {op}: {sum(f['apart'] for f in facts if f['op'] == op)} of "
            f"{sum(f['op'] == op for f in facts)} apart, {sum(f['pairing'] for f in facts if f['op'] == op)} "
            "by the pairing" for op in ops]


def _ratio(a, b) -> float | None:
    return a / b if a and b and a > 0 and b > 0 else None


def probe_lines(facts: list[dict], deals: int = 2000) -> list[str]:
    """How well each probe's move follows the partner's drift (module docstring)."""
    rng, bound, out = np.random.default_rng(0), math.log1p(PARTNER_APART), []
    for probe in ("canary", "memory"):
        read = [f for f in facts if f[probe] is not None]
        drift, moved = (np.log([f[k] for f in read]) for k in ("drift", probe))
        apart = np.abs(drift) > bound
        matched = np.mean(np.abs(drift[apart] - moved[apart]) <= bound)
        dealt = np.mean([np.mean(np.abs(drift[apart] - rng.permutation(moved)[:apart.sum()]) <= bound)
                         for _ in range(deals)])
        out.append(f"{probe}: {len(read)} passes, drift and move correlate at {np.corrcoef(drift, moved)[0, 1]:.2f}; "
                   f"of {apart.sum()} drifts over {PARTNER_APART:.0%}, its move matches {matched:.0%} ({dealt:.0%} "
                   "dealt at random)")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="run folders (or folders of one run each)")
    every = []
    for folder in parser.parse_args(argv).folders:
        rows = storage.load([folder])
        facts = [pair_facts(b, r) for b, r in paired_with_base(rows) if partner_drift(b, r) is not None]
        print("\n".join([summary(folder, facts), *by_op(facts)]))
        every += facts
    print("\n".join(probe_lines(every)))


if __name__ == "__main__":
    main()

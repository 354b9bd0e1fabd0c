"""Pairs timed on warm caches against pairs timed on flushed ones (run --flush-caches): how many passes timed in
pairs read their partner over PARTNER_APART off the partner's own row, how many of those the canary puts on the
machine and how many on the pairing itself (speedup.machine_moved, pairing_moved), and how far each paired speedup
lies from the ratio of the two rows' medians.

    .venv/bin/benchctl run all cpu --quick --out /tmp/warm
    .venv/bin/benchctl run all cpu --quick --flush-caches --out /tmp/cold
    .venv/bin/python benchmarks/cold_pairs_bench.py /tmp/warm /tmp/cold

Each folder's latest run is read. Nothing else may run while the two sweeps do.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from benchctl.analysis.partner_lines import paired_with_base
from benchctl.analysis.speedup import machine_moved, pairing_moved, partner_apart, partner_drift, speedup
from benchctl.results import storage


def pair_facts(base: dict, row: dict) -> dict:
    """One paired pass: its partner's drift, what the canary says moved it, and the paired speedup over the
    medians' ratio."""
    medians = base["median_s"] / row["median_s"]
    return {"op": row["op"], "drift": partner_drift(base, row), "apart": partner_apart(base, row),
            "machine": machine_moved(base, row) is True, "pairing": pairing_moved(base, row),
            "off": speedup(base, row) / medians, "wall": row.get("wall_s") or 0.0}


def summary(name: str, facts: list[dict]) -> str:
    drifts = np.array([abs(math.log(f["drift"])) for f in facts])
    offs = np.array([abs(math.log(f["off"])) for f in facts])
    apart = [f for f in facts if f["apart"]]
    return (f"{name}: {len(facts)} paired passes, {len(apart)} partners over 25% off their own row "
            f"({sum(f['machine'] for f in apart)} the machine's, {sum(f['pairing'] for f in apart)} the pairing's); "
            f"partner drift median {math.exp(np.median(drifts)):.2f}x, largest {math.exp(drifts.max()):.2f}x; "
            f"paired speedup off the medians' ratio median {math.exp(np.median(offs)):.2f}x, largest "
            f"{math.exp(offs.max()):.2f}x; paired passes' wall {sum(f['wall'] for f in facts):.0f} s")


def by_op(facts: list[dict]) -> list[str]:
    ops = sorted({f["op"] for f in facts})
    return [f"  {op}: {sum(f['apart'] for f in facts if f['op'] == op)} of "
            f"{sum(f['op'] == op for f in facts)} apart, {sum(f['pairing'] for f in facts if f['op'] == op)} "
            "by the pairing" for op in ops]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="results folders (their latest run each)")
    for folder in parser.parse_args(argv).folders:
        rows = storage.load(root=folder)
        facts = [pair_facts(b, r) for b, r in paired_with_base(rows) if partner_drift(b, r) is not None]
        print("\n".join([summary(folder, facts), *by_op(facts)]))


if __name__ == "__main__":
    main()

"""How far the audit's own calls would move the numbers they audit: each row's median and paired speedup with its
probes (the `probe` column: calls on data never drawn before, their controls, and the calls whose inputs the
harness had just made or copied, fresh.Draw.probe) left in, against the row's own, which leaves them out.

    .venv/bin/benchctl run all cpu --quick && .venv/bin/python benchmarks/probe_bias_bench.py [RUN]

Reads a run's rows (the latest under results/ by default) and prints, by how many samples a pass took, the
passes with probes, the probes' share of their samples, the probes' median over the others', and the median
and largest shift of the median and of the paired speedup had the probes counted; then the passes moved most.
It times nothing, so it can run beside anything.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from benchctl.analysis.pairs import pair_ratios
from benchctl.results import storage
from benchctl.results.schema import clean_samples, own_aside, stored_list

BUCKETS = [0, 20, 50, 100, 300, np.inf]  # samples a pass took


def shifts(row: pd.Series) -> dict | None:
    """A row's median and paired speedup with its probes counted, over its own (None: no probes)."""
    samples, probe = stored_list(row.get("samples_s")), stored_list(row.get("probe"))
    if not any(probe) or len(probe) != len(samples):
        return None
    disturbed = stored_list(row.get("disturbed"))
    counted = float(np.median(clean_samples(samples, disturbed)))
    flags = np.array(probe, bool)
    kept = np.array(samples)[~np.array(own_aside(row), bool)]
    out = {"op": row["op"], "impl": row["impl"], "pass": row["pass"], "axis_value": row["axis_value"],
           "n": len(samples), "probes": int(flags.sum()), "median": counted / row["median_s"] - 1,
           "probe_over_rest": float(np.median(np.array(samples)[flags]) / np.median(kept)) if kept.size else np.nan,
           "speedup": np.nan}
    partner = stored_list(row.get("partner_samples_s"))
    if partner and row.get("paired_speedup"):
        ratios, clean = pair_ratios(samples, partner, disturbed, stored_list(row.get("partner_disturbed")))
        if clean.any():
            out["speedup"] = float(np.median(ratios[clean])) / row["paired_speedup"] - 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", nargs="?", help="a run folder (default: the latest under results/)")
    args = parser.parse_args()
    df = storage.load([args.run]) if args.run else storage.load(root="results")
    ok = df[(df["status"] == "ok") & df["median_s"].notna()]
    table = pd.DataFrame([s for s in (shifts(r) for _, r in ok.iterrows()) if s])
    if table.empty:
        print("no row has probes: a run from before the column, or one without the audit")
        return
    print(f"{len(table)} of {len(ok)} ok passes had probes")
    table["samples"] = pd.cut(table["n"], BUCKETS)
    summary = table.groupby("samples", observed=True).agg(
        passes=("n", "size"), probe_share=("probes", "sum"), samples_total=("n", "sum"),
        probe_over_rest=("probe_over_rest", "median"), median_shift=("median", "median"),
        largest=("median", "max"), speedup_shift=("speedup", "median"), speedup_largest=("speedup", "min"))
    summary["probe_share"] /= summary.pop("samples_total")
    print(summary.round(4).to_string())
    for limit in (0.01, 0.03):
        print(f"medians moved over {limit:.0%} by their probes: {(table['median'].abs() > limit).sum()}")
    print(table.sort_values("median", ascending=False).head(10).drop(columns="samples").round(4).to_string())


if __name__ == "__main__":
    main()

"""Interleaved rounds: a sweep measured in N short passes over all its cells instead of one long one.

A shared or throttling machine changes speed over minutes. Measured one after the other, two
implementations of the same cell can land in different phases, and their ratio moves by 10-20%. In
rounds, each round gives every cell 1/N of its time budget and goes through the whole sweep, so each
implementation is sampled at N moments spread over the run. The rounds' samples are pooled into one
row per cell and pass; `round_spread` (slowest round's median over the fastest's, minus 1) says how
much the machine moved meanwhile.

Rounds that disagree by more than MODES_APART are not averaged: the sorted round medians are split at
their widest gap into a fast and a slow mode, the row gives both (`mode_fast_s`, `mode_slow_s`) and says
so, and its median is the median of the mode that holds most samples (the slow one on a tie), never a
value between the two that no call took. Where the modes' page faults per call differ, the message gives
both: the mode with more is the one whose calls got fresh memory from the OS.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from typing import Any, Sequence

from benchctl.measure.paired import paired_stats
from benchctl.measure.stats import is_noisy, join_messages, noisy_message, summarize
from benchctl.measure.timing import Policy, too_disturbed
from benchctl.results.schema import Status, Stop, clean_samples

Rows = list[dict[str, Any]]
MODES_APART = 0.10  # round medians this far apart (slowest / fastest - 1) are two modes, not noise


def per_round(policy: Policy, rounds: int) -> Policy:
    """One round's share of `policy`: its times and sample counts divided by `rounds`."""
    if rounds == 1:
        return policy
    return replace(policy, min_time=policy.min_time / rounds, max_time=policy.max_time / rounds,
                   min_samples=max(2, math.ceil(policy.min_samples / rounds)),
                   max_samples=max(2, math.ceil(policy.max_samples / rounds)))


def all_ok(rows: Rows) -> bool:
    return all(r.get("status") == Status.OK for r in rows)


def merge(rounds_rows: Sequence[Rows]) -> Rows:
    """One row per pass from one cell's rows of each round (in round order)."""
    by_pass: dict[str, Rows] = {}
    for rows in rounds_rows:
        for row in rows:
            by_pass.setdefault(row["pass"], []).append(row)
    return [_merge_pass(rows) for rows in by_pass.values()]


def _merge_pass(rows: Rows) -> dict[str, Any]:
    """All rounds ok: pooled samples and the statistics and rates recomputed from them, and the worker
    processes they came from. Otherwise the first round that was not ok."""
    failed = next((r for r in rows if r.get("status") != Status.OK), None)
    if failed is not None or len(rows) == 1:  # one round: the row as measured, noisy by its own target
        return {**_without_process(failed or rows[0]), "rounds": len(rows)}
    return {**_without_process(_pooled(rows)), **_processes(rows)}


def _without_process(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "process"}


def _processes(rows: Rows) -> dict[str, Any]:
    """Rounds measured in several worker processes (run --processes): each process's median of its clean
    samples, and the spread between them (slowest / fastest - 1), which verdicts hold a change against."""
    by_process: dict[int, list[float]] = {}
    for row in rows:
        if row.get("process") is not None:
            by_process.setdefault(int(row["process"]), []).extend(_clean(row))
    if len(by_process) < 2:
        return {}
    medians = [statistics.median(by_process[p]) for p in sorted(by_process)]
    spread = max(medians) / min(medians) - 1 if min(medians) > 0 else None
    return {"processes": len(medians), "process_medians_s": medians, "process_spread": spread}


def _pooled(rows: Rows) -> dict[str, Any]:
    first = rows[0]
    samples = [s for r in rows for s in r["samples_s"]]
    flags = [f for r in rows for f in _flags(r)]
    clean = [s for s, f in zip(samples, flags) if not f]
    stats = summarize(clean or samples)
    medians = [r["median_s"] for r in rows]
    noisy = is_noisy(stats)
    merged = {**first, **stats, "samples_s": samples, "rounds": len(rows), "noisy": noisy,
              "message": noisy_message(stats) if noisy else "",
              **_disturbance(rows, flags, len(clean), noisy),
              "round_spread": max(medians) / min(medians) - 1 if len(rows) > 1 and min(medians) > 0 else None,
              "round_medians_s": medians,
              "peak_mem_bytes": _max_of(r.get("peak_mem_bytes") for r in rows),
              "page_faults": _median_of(r.get("page_faults") for r in rows),
              "sys_s": _median_of(r.get("sys_s") for r in rows),
              "host_s": _median_of(r.get("host_s") for r in rows),
              "mem_gbps": _median_of(r.get("mem_gbps") for r in rows),
              "canary_s": _median_of(r.get("canary_s") for r in rows),
              "canary_ratio": _median_of(r.get("canary_ratio") for r in rows),
              "wall_s": sum(r.get("wall_s") or 0.0 for r in rows)}
    merged.update(_pair_statistics(rows, samples))
    modes = _modes(rows)
    if modes:
        modes["message"] = join_messages(merged["message"], modes["message"])
    merged.update(modes)
    return {**merged, **_rates(first, merged["median_s"])}


def _flags(row: dict[str, Any]) -> list[bool]:
    """A row's per-sample disturbed flags (none set where its samples were not watched)."""
    return list(row.get("disturbed") or [False] * len(row["samples_s"]))


def _clean(row: dict[str, Any]) -> list[float]:
    return clean_samples(row["samples_s"], row.get("disturbed"))


def _disturbance(rows: Rows, flags: list[bool], clean: int, noisy: bool) -> dict[str, Any]:
    """The pooled flags, their share, the rounds' median wait, and `disturbed` as the stop where the pooled
    clean samples are too few or the median did not settle with many set aside."""
    if not any(r.get("disturbed") for r in rows):
        return {}
    share = sum(flags) / len(flags)
    out: dict[str, Any] = {"disturbed": flags, "disturbed_share": share,
                           "wait_s": _median_of(r.get("wait_s") for r in rows)}
    if too_disturbed(clean, share, Stop.MAX_TIME if noisy else Stop.CONVERGED, Policy()):
        out["stop"] = Stop.DISTURBED
    return out


def _pair_statistics(rows: Rows, samples: list[float]) -> dict[str, Any]:
    """Timed in alternation with a partner every round: its samples pooled as the own are (the pairs stay
    aligned) and the paired speedup taken over all the pairs."""
    if not all(r.get("partner_samples_s") for r in rows):
        return {}
    partner = [s for r in rows for s in r["partner_samples_s"]]
    return {"partner_samples_s": partner, **paired_stats(samples, partner)}


def _modes(rows: Rows) -> dict[str, Any]:
    """Two modes when the rounds disagree: both medians, and the majority mode's statistics."""
    ordered = sorted(enumerate(rows, start=1), key=lambda pair: pair[1]["median_s"])
    medians = [r["median_s"] for _, r in ordered]
    if len(rows) < 2 or medians[0] <= 0 or medians[-1] / medians[0] - 1 <= MODES_APART:
        return {}
    cut = max(range(1, len(ordered)), key=lambda i: medians[i] / medians[i - 1])
    fast, slow = ordered[:cut], ordered[cut:]
    fast_stats, slow_stats = (summarize([s for _, r in part for s in _clean(r)]) for part in (fast, slow))
    majority = fast_stats if fast_stats["n"] > slow_stats["n"] else slow_stats
    # n, min and max stay the pooled ones, as do the samples
    kept = {k: v for k, v in majority.items() if k not in ("n", "min_s", "max_s")}
    which = lambda part: ", ".join(str(i) for i, _ in sorted(part, key=lambda pair: pair[0]))  # noqa: E731
    return {**kept, "mode_fast_s": fast_stats["median_s"], "mode_slow_s": slow_stats["median_s"],
            "message": f"rounds disagree: {fast_stats['median_s'] * 1e3:.3g} ms in round(s) {which(fast)}, "
                       f"{slow_stats['median_s'] * 1e3:.3g} ms in round(s) {which(slow)}{_faults(fast, slow)}; "
                       f"the median is the {'fast' if majority is fast_stats else 'slow'} mode's, which holds "
                       "most samples"}


def _faults(fast: list, slow: list) -> str:
    """The two modes' page faults per call, where they differ: the mode with more got fresh memory from the
    OS each call, as a loop that frees and allocates its tensors again does under that allocator."""
    counts = [[r["page_faults"] for _, r in part if r.get("page_faults") is not None] for part in (fast, slow)]
    if not all(counts):
        return ""
    fast_faults, slow_faults = (statistics.median(c) for c in counts)
    if fast_faults == slow_faults:
        return ""
    return f" ({fast_faults:.0f} and {slow_faults:.0f} page faults per call)"


def _rates(first: dict[str, Any], median: float) -> dict[str, Any]:
    """GFLOP/s, GB/s and % of peak at the pooled median (the roofline bound is the same each round)."""
    if median <= 0:
        return {}
    out: dict[str, Any] = {}
    if first.get("flops") is not None:
        out["gflops"] = first["flops"] / median * 1e-9
    if first.get("bytes") is not None:
        out["gbps"] = first["bytes"] / median * 1e-9
    if first.get("pct_of_peak") is not None:
        out["pct_of_peak"] = first["pct_of_peak"] * first["median_s"] / median
    return out


def _max_of(values) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _median_of(values) -> float | None:
    present = [v for v in values if v is not None]
    return float(statistics.median(present)) if present else None

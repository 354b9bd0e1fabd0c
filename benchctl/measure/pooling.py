"""One pass's rounds pooled (PassResult.merge): the columns that the samples of every round give, their
statistics and rates recomputed, what the machine did meanwhile, and the rounds' and worker processes'
medians with their spread. Each round is read as a row (a mapping of its columns), so pooling needs no
more of a result than its columns.

What a round's message says of the call itself (timed alone, work left on another stream) is kept, once;
the doubts its samples gave (noisy, disturbed) are derived anew from the pooled samples.

Rounds that disagree by more than MODES_APART are not averaged: the sorted round medians are split at
their widest gap into a fast and a slow mode, the result gives both (`mode_fast_s`, `mode_slow_s`) and says
so, and its median is the median of the mode that holds most rounds (on a tie, most clean samples; the slow
one on a tie of both), never a value between the two that no call took; whether it is noisy is judged on
that mode's samples. Rounds before samples: a round that converged stops early, and one that a neighbour
made noisy samples on to its limit, so the mode of most samples was the neighbour's (lstm_cell's py backward
at B=16 beside a compile that came and went read 0.339 ms from one round against 0.214 ms from two, and
0.213 ms with nothing beside it). Where the
modes' page faults per call differ, the message gives both: the mode with more is the one whose calls got
fresh memory from the OS.

A round whose every sample was set aside as disturbed has no median of the call: its worker's fallback
(the median of all its samples) is a median of the stalls. It takes no part in the modes, the spread
between processes or the rounds' ratios: `round_medians_s` holds NaN for it, and the message names it.
Beside a busy neighbour, whole rounds of lstm_cell's cpp forward read 7.8 ms against 0.033 ms, all set
aside; two such rounds outvoted the clean one as "the slow mode", and the row read 7.81 ms, converged.

A round more than MODES_APART slower than another round of the same worker process (a re-measurement
adds one round in each), whose canary (machine/canary.py) read more than SLOW_PHASE slower than that
round's, or that was timed beside other work (`other_cores`, machine/load.py) where that round was not, is set
aside: its median stays in `round_medians_s`, the message names it, and its samples are
not pooled. A slow phase of the VM lasts seconds and slows a round, and the canary taken around the round
shows it; a process that landed in a slower mode stays in it for its whole life, so it is slow in every
round, keeps them, and shows in the spread between processes (docs/measuring.md, "Slow phases"). Without
the canary's word a slow round is kept: on a VM whose speed drifts rather than switching, the rule set
aside the slower of each process's two rounds, and an A/A pair read 18.9% "faster" from the faster half
(rounds 66-78 us kept, 80-92 set aside, against 82-87 us in the other run's single rounds).
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from benchctl.analysis.pairs import pair_ratios
from benchctl.measure import rates, trust
from benchctl.measure.paired import ratio_stats
from benchctl.measure.stats import is_noisy, join_messages, noisy_message, notes, set_aside_message, summarize
from benchctl.measure.timing import Policy, too_disturbed
from benchctl.results.schema import PAIRED_COLUMNS, SLOW_PHASE, beside_work, clean_samples, own_aside, set_aside
from benchctl.vocab import Stop

Round = Mapping[str, Any]  # one round's result (a PassResult), read by column
Rounds = Sequence[Round]
MODES_APART = 0.10  # round medians this far apart (slowest / fastest - 1) are two modes, not noise
# per call: pooled
MEDIAN_OF_ROUNDS = ("page_faults", "sys_s", "cpu_cores", "host_s", "mem_gbps", "canary_s", "canary_ratio",
                    "other_cores")


def pooled(rounds: Rounds) -> dict[str, Any]:
    """The columns the samples of every round kept (not set aside) give, to set on the first round's."""
    medians = [_round_median(r) for r in rounds]
    aside = _slow_phase(rounds, medians)
    numbered = [(i, r) for i, r in enumerate(rounds, start=1) if i not in aside]
    kept = [r for _, r in numbered]
    samples = [s for r in kept for s in r["samples_s"]]
    flags = [f for r in kept for f in _flags(r)]
    probe = [f for r in kept for f in _flags(r, "probe")]
    stats = summarize(clean_samples(samples, set_aside(len(samples), flags, probe)))
    blind = {i for i, median in enumerate(medians, start=1) if math.isnan(median)}
    modes = _modes([(i, r) for i, r in numbered if i not in blind], medians)
    if modes:
        majority = modes.pop("majority")
        modes["mode_aside"] = [i not in majority for i, r in numbered for _ in r["samples_s"]]
    noisy = is_noisy({**stats, **modes})
    disturbance = _disturbance(kept, flags, flags.count(False), noisy)
    said = join_messages(*dict.fromkeys(note for r in kept for note in notes(r.get("message"))),
                         set_aside_message(flags, "set aside over the rounds")
                         if disturbance.get("stop") == Stop.DISTURBED else "",
                         noisy_message({**stats, **modes}) if noisy else "", modes.pop("message", ""),
                         _aside_message(aside), _blind_message(blind))
    columns = {**stats, "samples_s": samples, "rounds": len(rounds), "noisy": noisy, **disturbance,
               **({"probe": probe} if any(probe) else {}),
               "round_spread": _spread(medians), "round_medians_s": medians, **processes(kept),
               "peak_mem_bytes": _max_of(r.get("peak_mem_bytes") for r in kept),
               **{c: _median_of(r.get(c) for r in kept) for c in MEDIAN_OF_ROUNDS}, **_clocks(kept),
               "wall_s": sum(r.get("wall_s") or 0.0 for r in rounds),
               **_pair_statistics(kept), **modes}
    columns["message"] = join_messages(said, trust.beside(columns))
    return {**columns, **_rates(rounds[0], columns["median_s"])}


def processes(rounds: Rounds) -> dict[str, Any]:
    """Rounds measured in several worker processes (run --processes): each process's median of its clean
    samples, and the spread between them (slowest / fastest - 1), which verdicts hold a change against."""
    by_process: dict[int, list[float]] = {}
    for r in rounds:
        if r.get("process") is not None:
            by_process.setdefault(int(r["process"]), []).extend(_clean(r))
    by_process = {p: samples for p, samples in by_process.items() if samples}
    if len(by_process) < 2:
        return {}
    medians = [statistics.median(by_process[p]) for p in sorted(by_process)]
    spread = max(medians) / min(medians) - 1 if min(medians) > 0 else None
    return {"processes": len(medians), "process_medians_s": medians, "process_spread": spread}


def _slow_phase(rounds: Rounds, medians: Sequence[float]) -> set[int]:
    """The rounds (numbered from 1) more than MODES_APART slower than the fastest round of their process
    (`medians`: each round's, `_round_median`) whose canary read more than SLOW_PHASE slower than its."""
    fastest: dict[int, tuple[float, Round]] = {}
    timed = [(i, r, median) for i, (r, median) in enumerate(zip(rounds, medians), start=1)
             if r.get("process") is not None and median > 0]  # NaN > 0 is False
    for _, r, median in timed:
        if median < fastest.get(r["process"], (math.inf, r))[0]:
            fastest[r["process"]] = (median, r)

    def aside(r: Round, median: float) -> bool:
        fast_median, fast_round = fastest[r["process"]]
        return median > fast_median * (1 + MODES_APART) and _slower_machine(r, fast_round)
    return {i for i, r, median in timed if aside(r, median)}


def _slower_machine(r: Round, fast: Round) -> bool:
    """The canary read around round `r` more than SLOW_PHASE slower than around round `fast`, or other work kept
    cores busy beside `r` (`beside_work`) and not beside `fast`."""
    slow_s, fast_s = r.get("canary_s"), fast.get("canary_s")
    slower = bool(slow_s and fast_s) and slow_s > fast_s * (1 + SLOW_PHASE)
    return slower or (beside_work(r) and not beside_work(fast))


def _aside_message(aside: set[int]) -> str:
    if not aside:
        return ""
    return (f"round(s) {', '.join(map(str, sorted(aside)))} set aside: over {MODES_APART:.0%} slower than "
            f"another round of the same process, on a slower machine: its canary over {SLOW_PHASE:.0%} slower (a slow "
            "phase), or other work beside it and not beside that round")


def _blind_message(blind: set[int]) -> str:
    if not blind:
        return ""
    return (f"round(s) {', '.join(map(str, sorted(blind)))}: every sample set aside (disturbed), so they give no "
            "median of the call")


def _spread(medians: list[float]) -> float | None:
    known = [m for m in medians if not math.isnan(m)]
    return max(known) / min(known) - 1 if len(known) > 1 and min(known) > 0 else None


def _flags(r: Round, flags: str = "disturbed", samples: str = "samples_s") -> list[bool]:
    """A round's per-sample flags of the samples set aside (none set where its samples were not watched);
    the partner's with `partner_disturbed`, `partner_samples_s`."""
    return list(r.get(flags) or [False] * len(r[samples]))


def _clean(r: Round) -> list[float]:
    """A round's samples its statistics are from (neither disturbed nor the audit's, `own_aside`): none where
    every one is set aside (unlike a row's `clean_samples`, which then falls back to all of them)."""
    flags = own_aside(r)
    if not flags:
        return list(r["samples_s"])
    return [s for s, d in zip(r["samples_s"], flags) if not d]


def _round_median(r: Round) -> float:
    """A round's median (of its clean samples); NaN where its worker set every one aside."""
    flags = _flags(r)
    return math.nan if r.get("median_s") is None or (flags and all(flags)) else float(r["median_s"])


def _disturbance(rounds: Rounds, flags: list[bool], clean: int, noisy: bool) -> dict[str, Any]:
    """The pooled flags, their share, the rounds' median wait, and the stop judged on the pooled samples:
    `disturbed` where their clean ones are too few or the median did not settle with many set aside; else
    a round that stopped disturbed does not speak for the pool, and the first round that did not does."""
    if not any(r.get("disturbed") for r in rounds):
        return {}
    share = sum(flags) / len(flags)
    stop = Stop.MAX_TIME if noisy else Stop.CONVERGED
    if too_disturbed(clean, share, stop, Policy()):
        stop = Stop.DISTURBED
    else:
        stop = next((r["stop"] for r in rounds if r.get("stop") not in (None, Stop.DISTURBED)), stop)
    return {"disturbed": flags, "disturbed_share": share, "wait_s": _median_of(r.get("wait_s") for r in rounds),
            "stop": stop}


def _clocks(rounds: Rounds) -> dict[str, Any]:
    """GPU: the rounds' median SM clock and highest temperature, and throttled where any round was, with
    each reason any round gave (a throttled round is not hidden by the others)."""
    if all(r.get("sm_clock_mhz") is None for r in rounds):
        return {}
    reasons = dict.fromkeys(x for r in rounds for x in (r.get("throttle_reasons") or "").split(", ") if x)
    return {"sm_clock_mhz": _median_of(r.get("sm_clock_mhz") for r in rounds),
            "gpu_temp_c": _max_of(r.get("gpu_temp_c") for r in rounds),
            "throttled": any(r.get("throttled") for r in rounds), "throttle_reasons": ", ".join(reasons)}


def _pair_statistics(rounds: Rounds) -> dict[str, Any]:
    """Timed in alternation with a partner every round: its samples and their flags pooled as the own are,
    and the paired speedup taken over every round's pairs (each round's own, `pair_ratios`: a round may
    have taken another number of calls a turn). Timed alone in some round (too far from the partner in its
    warm-up): the pooled samples are not pairs, and the row says nothing of pairs (a round's note says why)."""
    if not any(r.get("partner_samples_s") for r in rounds):
        return {}
    if not all(r.get("partner_samples_s") for r in rounds):
        return dict.fromkeys(PAIRED_COLUMNS)
    partner = [s for r in rounds for s in r["partner_samples_s"]]
    partner_flags = [f for r in rounds for f in _flags(r, "partner_disturbed", "partner_samples_s")]
    aside = {"partner_disturbed": partner_flags} if any(r.get("partner_disturbed") for r in rounds) else {}
    pairs = [pair_ratios(r["samples_s"], r["partner_samples_s"], own_aside(r) or _flags(r),
                         _flags(r, "partner_disturbed", "partner_samples_s")) for r in rounds]
    ratios, clean = (np.concatenate(parts) for parts in zip(*pairs))
    return {"partner_samples_s": partner, **aside, **ratio_stats(ratios, clean), **_process_speedups(rounds, pairs)}


def _process_speedups(rounds: Rounds, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """Each worker process's paired speedup (the median of its rounds' clean pairs' ratios), where the rounds
    came from several: `compare` holds a change against the pairs against their spread, as it holds the
    own times against `process_spread`."""
    by_process: dict[int, list[float]] = {}
    for r, (ratios, clean) in zip(rounds, pairs):
        if r.get("process") is not None and clean.any():
            by_process.setdefault(int(r["process"]), []).extend(ratios[clean])
    speedups = [float(np.median(by_process[p])) for p in sorted(by_process)]
    return {"process_paired_speedups": speedups} if len(speedups) >= 2 else {}


def _modes(numbered: Sequence[tuple[int, Round]], round_medians: Sequence[float]) -> dict[str, Any]:
    """Two modes when the rounds (with their numbers; `round_medians` by number - 1) disagree: both medians,
    the majority mode's statistics, and its rounds' numbers (`majority`, for pooled's `mode_aside`)."""
    ordered = sorted(numbered, key=lambda pair: round_medians[pair[0] - 1])
    medians = [round_medians[i - 1] for i, _ in ordered]
    if len(ordered) < 2 or medians[0] <= 0 or medians[-1] / medians[0] - 1 <= MODES_APART:
        return {}
    cut = max(range(1, len(ordered)), key=lambda i: medians[i] / medians[i - 1])
    fast, slow = ordered[:cut], ordered[cut:]
    fast_stats, slow_stats = (summarize([s for _, r in part for s in _clean(r)]) for part in (fast, slow))
    # the mode of more rounds, then of more clean samples, else the slow one: a round that stops early (converged)
    # has fewer samples than one that sampled on because it was noisy, so samples alone favour the noisy round
    by = "rounds" if len(fast) != len(slow) else "samples"
    majority = fast_stats if (len(fast), fast_stats["n"]) > (len(slow), slow_stats["n"]) else slow_stats
    # n, min and max stay the pooled ones, as do the samples
    kept = {k: v for k, v in majority.items() if k not in ("n", "min_s", "max_s")}
    which = lambda part: ", ".join(str(i) for i, _ in sorted(part, key=lambda pair: pair[0]))  # noqa: E731
    return {**kept, "mode_fast_s": fast_stats["median_s"], "mode_slow_s": slow_stats["median_s"],
            "majority": {i for i, _ in (fast if majority is fast_stats else slow)},
            "message": f"rounds disagree: {fast_stats['median_s'] * 1e3:.3g} ms in round(s) {which(fast)}, "
                       f"{slow_stats['median_s'] * 1e3:.3g} ms in round(s) {which(slow)}{_faults(fast, slow)}; "
                       f"the median is the {'fast' if majority is fast_stats else 'slow'} mode's, which holds "
                       f"most {by}"}


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


def _rates(first: Round, median: float) -> dict[str, Any]:
    """GFLOP/s, GB/s and % of peak at the pooled median (the roofline bound is the same each round)."""
    if median <= 0:
        return {}
    out = rates.per_second(first.get("flops"), first.get("bytes"), median)
    if first.get("pct_of_peak") is not None:
        out["pct_of_peak"] = first["pct_of_peak"] * first["median_s"] / median
    return out


def _max_of(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _median_of(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(statistics.median(present)) if present else None

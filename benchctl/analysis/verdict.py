"""The verdict on one cell's change between two runs: faster, slower, same or unsure.

Two pieces of evidence, both from the raw samples:
- the 95% confidence interval of the ratio of medians (new / base), by bootstrap: resample each side's
  samples with replacement, take the ratio of the medians, keep the middle 95% (a fixed seed, so the same
  runs always get the same verdict);
- the two-sided Mann-Whitney U test: timing samples are skewed (a long tail of slow repetitions), which a
  t-test assumes away.

A sweep compares hundreds of cells at once, so the p-values are adjusted for their number
(Benjamini-Hochberg, which bounds the share of false discoveries among the cells flagged): without it,
about alpha of the cells of an A/A comparison whose samples are noisy would be flagged.

`slower` (or `faster`) needs the whole interval beyond the minimum effect (default 5%) AND an adjusted
p < alpha:
noise moves medians by a few percent all the time, and a tiny but consistent shift is rarely worth a
failed CI job. `same` needs the whole interval within the minimum effect. Everything else is `unsure`:
the samples cannot tell, and more of them (--rounds, --min-time) would. The interval is of all the clean
samples pooled; the ratio a user reads is of the rows' medians, which can differ (rounds or processes in
two modes: the row keeps the majority mode's median, pooling.py), so the verdict must also hold for that
ratio: in one A/A pair, lstm_cell's py backward had a pooled interval within 5% and rows 1.26 apart (a
slow mode in one run), which is `unsure`, not `same`.

Samples agree with each other far better than two runs do: a process can land in a slower mode for
its whole life, and a VM changes speed from minute to minute, so an A/A comparison of two runs whose
samples are all clean still gave `slower`, +67%, p = 6.5e-61. So `slower` and `faster` need more than
the samples (`doubt`): both sides settled (not `disturbed`, not noisy, rounds not split into two modes),
and a change beyond the spread between the worker processes of each side (`process_spread`, from a run with
--processes) by the minimum effect; a side measured in one process has no such spread, and its change must
exceed ONE_PROCESS_BOUND instead. And the machine
(`machine_doubt`): its compute canary and its GPU's SM clock as close in the two rows as MACHINE_MOVED says,
and the change, divided by how much slower (or faster) the machine ran in NEW by each probe (the
memory probe too), still past the minimum effect. Otherwise the verdict is `unsure`, with the reason.

A cell timed in alternation with the same partner in both runs (run --pair-with) has a third piece of
evidence, its time relative to the partner's (pairs.py), which the machine's speed moves far less: in
quiet A/A pairs whose own times moved 0.61-1.47x, by 0.91-1.12x. Its verdict (`relative_verdict`) needs
the whole interval past PAIRED_EFFECT for `slower` or `faster`, and within the minimum effect for `same`;
`with_pairs` says when it stands in for the own times' one.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from benchctl.analysis.timed_alike import TIMED_APART
from benchctl.results.schema import CANARY_SLOW, SLOW_PHASE, beside_work, slow_machine
from benchctl.vocab import Stop, Verdict

# Why a change the samples call real is still `unsure`.
DISTURBED, NOISY, ONE_PROCESS = "disturbed", "noisy", "one process"
BESIDE_WORK = "beside other work"  # a side timed while other processes kept cores busy (`other_cores`)
# A side whose rounds still split into two modes after the sweep measured it again (pooling.py): the row keeps
# one mode's median, and on a VM that drifts which mode is the majority is chance (one A/A pair read 48.8%
# faster from a slow mode of 0.414 ms against rounds of 0.20-0.27 ms).
ROUNDS_SPLIT = "its rounds split into two modes"
# One side timed in a slow phase of the machine (its canary over SLOW_PHASE slower than calibrated), the other
# at speed: canaries 14% apart can straddle that line, and the time of a small call does not follow the
# canary (an A/A pair read grid_sample's py backward at 256 2.0x apart, its canaries 1.16x and 1.01x).
PHASES = "one side in a slow phase, one at speed"
WITHIN_SPREAD = "within the spread between processes"
MACHINE_SLOWER, MACHINE_FASTER = "the machine was slower", "the machine was faster"
MACHINE_CHANGED = "the machine changed speed"
# The probes of the processor's own speed (not the memory's), and how far apart two rows' readings of it
# say the runs ran on machines of different speed. The SM clock is read, not timed: CANARY_SLOW. The
# canary is timed, and a 2-core VM is either at speed or in a slow phase: rows of the same phase read
# canaries up to 15% apart, rows of different phases 16-40% (docs/measuring.md, "Slow phases").
MACHINE_MOVED = {"canary": SLOW_PHASE, "sm clock": CANARY_SLOW}
# A side measured in one process: a change within this share is not judged (docs/measuring.md, "A/A runs").
ONE_PROCESS_BOUND = 1.0
# A cell's time relative to its partner must move by more than this between two runs to be called slower or
# faster: in nine quiet A/A pairs (81 paired passes, three processes a side) it moved by up to 11.5%, and
# by 8.9% with an interval of 0.89-0.92x (benchmarks/README.md, "A/A runs").
PAIRED_EFFECT = 0.15
# ... and the canary by less than this factor either way: pairs hold where the machine's speed moves, but not
# without bound (quiet A/A pairs whose canaries read up to 1.52x apart moved by 11.5% at most; a run whose
# canary read 2.2x its calibrated time put hoconv2d's cpp forward 9.9x faster than py against 7.4-7.7x).
PAIRS_HOLD = 1.5
# A change past this factor either way is called although the machine cast doubt on the run (OUTGROWN): by the
# nearer end of its interval and by the rows' ratio, each divided by how much slower (or faster) the machine ran
# by its probes. Quiet A/A runs of one code on these VMs moved a cell by 2.07x at most (a slow mode of 0.414 ms
# against 0.20 ms); measured as `gross` holds a change, three quick sweeps each run twice and six A/A pairs moved
# none of 513 unchanged cells past 1.83x (2.48x as timed: benchmarks/README.md, "Changes too large for the
# machine").
GROSS = 2.5
# The doubts a gross change outgrows: how the machine drifts. Not a neighbour (`disturbed`, `beside other work`:
# one made rounds 100-300x slower), nor calls timed apart. (A change past GROSS is past ONE_PROCESS_BOUND.)
OUTGROWN = (NOISY, ROUNDS_SPLIT, PHASES, WITHIN_SPREAD, MACHINE_CHANGED)
DISAGREE = "its own times and its pairs disagree"
DECISIVE = (Verdict.SLOWER, Verdict.FASTER)  # the verdicts that say the code's time changed
CODE_UNCHANGED = "code unchanged"  # beside a verdict: the cell's code digest is the same in both runs
CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 0


def mann_whitney_p(base: Sequence[float], new: Sequence[float]) -> float | None:
    """Two-sided p-value; None when there are too few samples to test (fewer than 2 on a side)."""
    from scipy.stats import mannwhitneyu

    a, b = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return None
    if np.ptp(np.concatenate([a, b])) == 0:
        return 1.0  # all samples identical: no evidence of any difference (scipy would return nan)
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue)


def adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values of the cells that have one (None stays None)."""
    from scipy.stats import false_discovery_control

    present = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = list(p_values)
    if present:
        for i, q in zip(present, false_discovery_control([p_values[i] for i in present])):
            out[i] = float(q)
    return out


def resampled_medians(samples: np.ndarray, rng: np.random.Generator, count: int) -> np.ndarray:
    """`count` medians of resamples (with replacement, of the samples' size) drawn without forming them.

    A resample is x[floor(n * U_i)] for n uniforms U_i over the sorted samples x, a monotone map, so its k-th
    smallest value is x at the uniforms' k-th smallest, Beta(k, n - k + 1); the next above it lies a Beta(1, n - k)
    share of the way from there to 1. So the median has exactly the distribution of resampling and `np.median`
    (the mean of the middle two where n is even), at a cost that does not grow with the samples (~14,000)."""
    x, n = np.sort(samples), len(samples)
    k = (n + 1) // 2
    low = rng.beta(k, n - k + 1, count)
    if n % 2:
        return _at(x, low)
    return (_at(x, low) + _at(x, low + (1 - low) * rng.beta(1, n - k, count))) / 2


def _at(sorted_samples: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """The resample's values drawn by these uniforms: x[floor(n * u)]."""
    n = len(sorted_samples)
    return sorted_samples[np.minimum((n * uniforms).astype(np.int64), n - 1)]


def ratio_interval(base: Sequence[float], new: Sequence[float]) -> tuple[float, float] | None:
    """The bootstrap 95% interval of median(new) / median(base); None with fewer than 2 samples a side."""
    a, b = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    if len(a) < 2 or len(b) < 2 or np.median(a) <= 0:
        return None
    rng = np.random.default_rng(SEED)
    medians_a, medians_b = (resampled_medians(x, rng, RESAMPLES) for x in (a, b))
    ratios = medians_b / np.where(medians_a > 0, medians_a, np.nan)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.nanpercentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def verdict(interval: tuple[float, float] | None, p_value: float | None, min_effect: float,
            alpha: float, ratio: float) -> str:
    """The samples' word on a change: their interval and adjusted p-value, and the rows' `ratio` on the same side."""
    if interval is None or not all(map(math.isfinite, interval)) or not math.isfinite(ratio):
        return Verdict.UNSURE
    low, high = interval
    significant = p_value is not None and p_value < alpha
    if significant and low > 1 + min_effect and ratio > 1 + min_effect:
        return Verdict.SLOWER
    if significant and high < 1 - min_effect and ratio < 1 - min_effect:
        return Verdict.FASTER
    if 1 - min_effect <= min(low, ratio) and max(high, ratio) <= 1 + min_effect:
        return Verdict.SAME
    return Verdict.UNSURE


def doubt(ratio: float, sides: Sequence[dict], min_effect: float) -> str | None:
    """Why a change of `ratio` (new / base) cannot be trusted as slower or faster, given each side's row
    (its stop, noisy flag, the cores other work kept busy, the machine's phase, processes and the spread between
    them); None when nothing stands in the way."""
    if any(r.get("stop") == Stop.DISTURBED for r in sides):
        return DISTURBED
    if any(r.get("noisy") for r in sides):
        return NOISY
    if any(map(beside_work, sides)):
        return BESIDE_WORK
    if any(_present(r.get("mode_slow_s")) for r in sides):
        return ROUNDS_SPLIT
    if len({slow_machine(r) for r in sides}) > 1:
        return PHASES
    change = abs(math.log(ratio)) if ratio > 0 else math.inf
    if any((r.get("processes") or 1) < 2 for r in sides):
        return ONE_PROCESS if change <= math.log1p(ONE_PROCESS_BOUND) else None
    spread = max(_present(r.get("process_spread")) for r in sides)
    # past it by the minimum effect: three processes' range understates the next three's (one A/A pair
    # read 1.37x against a spread of 37%)
    return WITHIN_SPREAD if change <= math.log1p(spread) + math.log1p(min_effect) else None


def _present(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def machine_doubt(said: str, ratio: float, machine: Mapping[str, float], min_effect: float) -> str | None:
    """Why `slower` or `faster` does not hold given the machine's own change between the runs (`machine`:
    NEW over BASE by each probe, above 1 slower), or None. A compute canary or SM clock that moved by more
    than MACHINE_MOVED means the runs ran on machines of different speed: no normalisation makes up for that
    (a 2-core VM's slow phase slowed a 44 us two-thread call 1.78x while its canary read 1.52x). What is
    left is held against every probe: divided by the machine's change, the change must still count."""
    if said not in (Verdict.SLOWER, Verdict.FASTER) or not machine:
        return None
    moved = {k: v for k, v in machine.items()
             if k in MACHINE_MOVED and abs(math.log(v)) > math.log1p(MACHINE_MOVED[k])}
    if moved:
        probe, change = max(moved.items(), key=lambda kv: abs(kv[1] - 1))
        return f"{MACHINE_CHANGED} ({probe} {change - 1:+.0%})"
    if said == Verdict.SLOWER and ratio / max(machine.values()) <= 1 + min_effect:
        return f"{MACHINE_SLOWER} ({max(machine.values()) - 1:+.0%})"
    if said == Verdict.FASTER and ratio / min(machine.values()) >= 1 - min_effect:
        return f"{MACHINE_FASTER} ({min(machine.values()) - 1:+.0%})"
    return None


def gross_at(sides: Sequence[dict], min_effect: float) -> float:
    """The factor a change must pass, either way, to outgrow the machine's drift: GROSS, and each side's own
    disagreement (the spread between its processes, the ratio of its rounds' two modes) by the minimum effect."""
    own = [1 + _present(r.get("process_spread")) for r in sides]
    own += [_present(r.get("mode_slow_s")) / r["mode_fast_s"] for r in sides if _present(r.get("mode_fast_s"))]
    return max(GROSS, max(own) * (1 + min_effect))


def gross_change(said: str, interval: tuple[float, float], ratio: float, machine: Mapping[str, float]) -> float:
    """How far a change moved the way `said` (`slower` or `faster`) names, as a factor (above 1: that way): the
    nearer end of its interval and the rows' `ratio`, each divided by the machine's own change between the runs
    (`machine`, as machine_doubt reads it) where that goes the same way."""
    if said == Verdict.SLOWER:
        return min(interval[0], ratio) / max([1.0, *machine.values()])
    return min([1.0, *machine.values()]) / max(interval[1], ratio)


def gross(said: str, interval: tuple[float, float], ratio: float, machine: Mapping[str, float], at: float) -> bool:
    """Whether the samples' `slower` or `faster` is past `at` (gross_at) by gross_change."""
    return said in DECISIVE and gross_change(said, interval, ratio, machine) > at


def relative_verdict(interval: tuple[float, float], p_value: float | None, ratio: float, spread: float | None,
                     min_effect: float, alpha: float) -> str:
    """The word of a cell's pairs with its partner: verdict.py's rules on its relative time, `slower` and
    `faster` past PAIRED_EFFECT at least and past the spread between the processes' paired speedups
    (`spread`) by the minimum effect, as `doubt` holds the own times. None of it where a side was measured
    in one process (`spread` None): `unsure`."""
    if spread is None:
        return Verdict.UNSURE
    said = verdict(interval, p_value, max(min_effect, PAIRED_EFFECT), alpha, ratio)
    if said in (Verdict.SLOWER, Verdict.FASTER) and abs(math.log(ratio)) <= math.log1p(spread) + math.log1p(min_effect):
        return Verdict.UNSURE
    if said == Verdict.SAME and verdict(interval, p_value, min_effect, alpha, ratio) != Verdict.SAME:
        return Verdict.UNSURE
    return said


def with_pairs(said: str, reason: str | None, by_pairs: str | None, partner_said: str | None,
               canary: float | None, apart: bool = False) -> tuple[str, str | None, bool]:
    """The verdict, its reason and whether the pairs gave it, from the own times' word (`said`, `reason`) and
    the pairs' (`by_pairs`; None: not paired in both runs). The pairs speak where both runs timed their
    calls alike, the partner's own times were not judged changed (the relative time assumes the partner
    stayed as it was), the canary moved by less than PAIRS_HOLD, the sides are not `apart` (a slow phase on
    one side that the pairs may not bridge), and the own times do not say otherwise: the opposite, or
    `same` (the own time held within the minimum effect, so the partner's moved); their `same` stands in for
    `unsure` only."""
    held = not apart and (canary is None or abs(math.log(canary)) <= math.log(PAIRS_HOLD))
    if by_pairs is None or not held or partner_said in DECISIVE or (reason or "").startswith(TIMED_APART):
        return said, reason, False
    if by_pairs in DECISIVE and (said in DECISIVE or said == Verdict.SAME) and said != by_pairs:
        return Verdict.UNSURE, DISAGREE, False
    if by_pairs in DECISIVE or (by_pairs == Verdict.SAME and said == Verdict.UNSURE):
        return by_pairs, None, True
    return said, reason, False

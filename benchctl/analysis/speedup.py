"""A speedup between two rows and how far it moves: the medians' ratio, the rounds' own ratios, or the
paired one with its interval (run --pair-with); and the text the tables give each."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import math

import numpy as np

from benchctl.analysis.pairs import partner_median
from benchctl.results.schema import beside_work
from benchctl.vocab import Stop

# A paired speedup is marked where its partner read this much slower or faster in the pairs than in its own row
# (`partner_apart`): the two medians a table shows side by side were then taken at different speeds of the
# machine, and their ratio is not the speedup. In one quick sweep on the 2-core VM, 17 of 93 paired passes
# (lstm_cell's py forward at 16: 0.085 ms in its own row, 0.130-0.160 ms beside compile, cpp and jit).
PARTNER_APART = 0.25
# A paired interval is written as its two ends (`lopsided`) where it reaches over LOPSIDED_FROM of the speedup on
# one side and over LOPSIDED times as far as on the other; a narrower one keeps its half width. Two quick sweeps
# on the 2-core VM had 7 such of 92 paired passes each, the widest 1.48x at 1.45-15.9 ("±969%").
LOPSIDED_FROM, LOPSIDED = 0.10, 2.0


def speedup_text(ratio: float) -> str:
    """4.0x, 0.96x, 0.033x: two significant digits below 1, so a large slowdown never reads "0.0x"."""
    return f"{ratio:.1f}x" if ratio >= 1 else f"{ratio:.2g}x"


def speedup(base: Mapping[str, Any], row: Mapping[str, Any]) -> float:
    """How many times faster `row` is than `base`, the same cell's reference. Where `row` was timed in
    alternation with `base`'s implementation (run --pair-with), the median of the sample pairs' ratios.
    Else, where both were measured in the same interleaved rounds, the median of the rounds' own ratios:
    a machine that changes speed mid-run then slows both sides of a round's ratio alike, where the two
    pooled medians could pair one implementation's fast rounds with the other's slow ones. Otherwise the
    ratio of the medians."""
    if _timed_together(base, row):
        return float(row["paired_speedup"])
    ratios = _round_ratios(base, row)
    if ratios:
        return float(np.median(ratios))
    return float(base["median_s"] / row["median_s"])


def speedup_range(base: Mapping[str, Any], row: Mapping[str, Any]) -> tuple[float, float] | None:
    """How far `speedup` moves: the interval of a paired one; else, where both were measured in the same
    rounds (run --processes, --rounds), the lowest and the highest of the rounds' own ratios, one per process
    turn or round (three processes' range understates the next three's, docs/measuring.md, "Processes");
    None where one round gives nothing to say how far it moves."""
    if _timed_together(base, row):
        return _paired_interval(row)
    ratios = _round_ratios(base, row)
    return (min(ratios), max(ratios)) if ratios else None


def _paired_interval(row: Mapping[str, Any]) -> tuple[float, float] | None:
    """A paired speedup's interval (measure/paired.py, block_interval); None where too few pairs gave one."""
    lo, hi = row.get("paired_ci_lo"), row.get("paired_ci_hi")
    return (float(lo), float(hi)) if present_value(lo) and present_value(hi) else None


def unsettled(base: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    """The speedup does not hold: its range goes from under 1 to over 1 (its rounds, or its paired interval,
    disagree on which implementation is faster), or either side's median is `disturbed` (too few clean
    samples, so a stall may be in it: beside a neighbour one side can read 100x slow with no range to show it),
    or, unpaired, one side alone was timed beside other work, or the pairing moved the partner (`pairing_moved`)."""
    found = speedup_range(base, row)
    return (a_side_disturbed(base, row) or pairing_moved(base, row)
            or (found is not None and found[0] < 1.0 < found[1]))


def partner_drift(base: Mapping[str, Any], row: Mapping[str, Any]) -> float | None:
    """The partner's median in `row`'s pairs over `base`'s own median; None where `row` was not timed in pairs
    with `base`'s implementation, or a median is missing."""
    theirs, own = partner_median(row) if _timed_together(base, row) else None, base.get("median_s")
    if theirs is None or not present_value(own) or theirs <= 0 or own <= 0:
        return None
    return theirs / own


def partner_apart(base: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    """The partner's median in `row`'s pairs is over PARTNER_APART away from `base`'s own, either way
    (`partner_drift`): the machine's speed moved between the two cells, so the ratio of their medians is not
    the speedup (the pairs' is)."""
    drift = partner_drift(base, row)
    return drift is not None and abs(math.log(drift)) > math.log1p(PARTNER_APART)


def machine_moved(base: Mapping[str, Any], row: Mapping[str, Any]) -> bool | None:
    """Whether the canary's move between the two cells accounts for the partner's: `base`'s implementation's time
    in `row`'s pairs over its own row's (`partner_drift`), divided by the canary's ratio at `row`'s cell to
    `base`'s, is within PARTNER_APART; None where a canary or the drift was not read."""
    before, during, drift = base.get("canary_ratio"), row.get("canary_ratio"), partner_drift(base, row)
    if drift is None or not (present_value(before) and present_value(during)) or before <= 0 or during <= 0:
        return None
    return abs(math.log(drift * before / during)) <= math.log1p(PARTNER_APART)


def pairing_moved(base: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    """The partner read over PARTNER_APART off its own row in the pairs (`partner_apart`) and the canary's move does
    not account for it (`machine_moved`): timed by turns, the two met another regime than alone (grid_sample at
    image size 1024 on the 2-core VM: py 0.066 ms alone, 0.10-0.26 ms by turns with cpp or py-imagegrad, the
    canary steady), so the pairs' speedup and the medians' ratio are two answers (cpp over py: 1.48-2.06x in the
    pairs, 1.1x by the medians)."""
    return partner_apart(base, row) and machine_moved(base, row) is False


def disturbed(row: Mapping[str, Any]) -> bool:
    """The row stopped `disturbed`: too few samples ran undisturbed for its median to be theirs."""
    return row.get("stop") == Stop.DISTURBED


def a_side_disturbed(base: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    """A side stopped `disturbed`; or, where the two were not timed in pairs, one was timed beside other work and
    the other not (`beside_work`): a neighbour both halves of each pair share leaves their ratio as it was (within
    4.5% beside a compile loop, docs/measuring.md), one that only one side met does not."""
    alone = not _timed_together(base, row) and beside_work(base) != beside_work(row)
    return disturbed(base) or disturbed(row) or alone


def speedup_label(base: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """The speedup as text; where it is a paired one (measure/paired.py), to two decimals (three significant
    digits beyond 0.1-100: 0.0039x, not 0.00x) and with the half width of its interval: 2.05x ±0.3% (without
    one where too few pairs gave it), or the interval itself where it is `lopsided`: 1.48x ±(1.45-15.9), not
    ±969%, which reads as if the speedup could be negative. A `?` after one whose range holds 1 (`unsettled`),
    a `≠` after one whose partner read far from its own row in the pairs (`partner_apart`), a `↻` after one that
    the earlier runs of the same code in the same machine state read outside its interval (`moved_since`;
    `earlier_speedups`, analysis/repeat.py)."""
    ratio = speedup(base, row)
    mark = ("?" if unsettled(base, row) else "") + ("≠" if partner_apart(base, row) else "")
    mark += "↻" if moved_since(_paired_interval(row), row.get("earlier_speedups") or ()) > 1 else ""
    if not (_timed_together(base, row) and ratio > 0):
        return speedup_text(ratio) + mark
    found = _paired_interval(row)
    if found is None:
        return f"{ratio_text(ratio)}x{mark}"
    if lopsided(ratio, found):
        return f"{ratio_text(ratio)}x ±({ratio_text(found[0])}-{ratio_text(found[1])}){mark}"
    return f"{ratio_text(ratio)}x ±{max(ratio - found[0], found[1] - ratio) / ratio:.1%}{mark}"


def moved_since(interval: tuple[float, float] | None, earlier: Sequence[float]) -> float:
    """How far (a factor; 1: not at all) the median of the earlier runs' speedups (`earlier`) lies outside this
    run's `interval` of the same speedup; 1 without either. The median, not any one run: of ten runs, one
    would fall outside even a 95% interval that holds, 40% of the time."""
    if not interval or not len(earlier):
        return 1.0
    typical = float(np.median(earlier))
    return max(1.0, interval[0] / typical, typical / interval[1])


def lopsided(ratio: float, interval: tuple[float, float]) -> bool:
    """An interval wider than LOPSIDED_FROM of the ratio on one side, and over LOPSIDED times as wide there as on
    the other: a half width would misstate both sides (a paired speedup of 1.48x whose pairs put it at
    1.45-15.9: the reference had a slow mode in some of its pairs)."""
    below, above = ratio - interval[0], interval[1] - ratio
    wide, narrow = max(below, above), min(below, above)
    return wide > LOPSIDED_FROM * ratio and wide > LOPSIDED * max(narrow, 0.0)


def range_label(base: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """The speedup with how far it moves, for the report's tables: 2.05x ±0.3% (paired), 1.06x (0.97-1.12)
    (the rounds' ratios), or the speedup alone (one round; the baseline itself); a `?` after one with a
    `disturbed` side (a range that holds 1 says so itself)."""
    ratio, found = speedup(base, row), speedup_range(base, row)
    if _timed_together(base, row):
        return speedup_label(base, row)
    mark = "?" if a_side_disturbed(base, row) else ""
    if found is None or found[0] == found[1]:
        return f"{ratio_text(ratio)}x{mark}"
    return f"{ratio_text(ratio)}x ({ratio_text(found[0])}-{ratio_text(found[1])}){mark}"


def ratio_text(ratio: float) -> str:
    """Two decimals from 0.1 to 100 (1.06, 0.97, 26.40), three significant digits beyond (0.0133, 210)."""
    return f"{ratio:.2f}" if 0.1 <= ratio < 100 else f"{ratio:.3g}"


def _timed_together(base: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    """`row` was timed in alternation with `base`'s implementation (run --pair-with)."""
    return row.get("paired_with") == base.get("impl") and present_value(row.get("paired_speedup"))


def present_value(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and np.isnan(value))


def _round_medians(row: Mapping[str, Any]) -> Sequence[float]:
    medians = row.get("round_medians_s")
    return list(medians) if present_value(medians) else ()


def _round_ratios(base: Mapping[str, Any], row: Mapping[str, Any]) -> list[float]:
    """`base`'s time over `row`'s, round by round, where both were measured in the same rounds: over the rounds
    in which both gave a median (NaN: every sample of that round set aside, measure/pooling.py), two at least."""
    ours, theirs = _round_medians(row), _round_medians(base)
    if len(ours) != len(theirs):
        return []
    ratios = [b / m for b, m in zip(theirs, ours) if b > 0 and m > 0]  # NaN > 0 is False
    return ratios if len(ratios) >= 2 else []

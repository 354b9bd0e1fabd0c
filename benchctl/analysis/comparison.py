"""What a comparison of two runs is: each cell's change (CellChange) and the whole (Comparison), with the
warnings it gives and the JSON `compare --json` prints. compare.py fills it in."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, NamedTuple, Sequence

from benchctl.analysis.machine_lines import UNCALIBRATED, busy_through
from benchctl.analysis.timed_alike import TIMED_APART
from benchctl.analysis.verdict import CODE_UNCHANGED, DECISIVE
from benchctl.vocab import Status, Verdict

# Runs whose median memory bandwidth probes (membw.py) differ by more than this share get a warning.
BANDWIDTH_CHANGE = 0.2
# Table order: what needs attention first.
VERDICTS = tuple(Verdict)
# A cell that timed fine in BASE and ends in one of BROKEN in NEW broke (worse than any slowdown), or the
# other way round: its statuses tell how.
CHANGED_STATUS = (Verdict.BROKEN, Verdict.FIXED)
REGRESSIONS = (Verdict.SLOWER, Verdict.BROKEN)  # what --fail-on-regression fails on: slower, or stopped working
CANNOT_TELL = "the samples cannot tell"  # an unsure cell without a reason: its interval or p-value decides nothing
ONE_SIDED = (Verdict.ONLY_IN_BASE, Verdict.ONLY_IN_NEW)  # cells with nothing to compare them with


# A time that changed by a factor past this (either way) is said as one (`268x slower`, `27.0x faster`), not in
# percent: `+26611.0%` is hard to read, and `-96.3%` hides whether it is 27x or 30x.
AS_FACTOR = 2.0


def time_change(ratio: float, low: float | None = None, high: float | None = None) -> str:
    """A time's change, new over old, as tables show it: `+35.2% [+30,+41]` (with its 95% interval where given),
    or past AS_FACTOR, `267x slower [260-275]` and `27.0x faster [25.0-29.0]`."""
    interval = low is not None and high is not None
    if ratio >= AS_FACTOR:
        return f"{_factor(ratio)}x slower" + (f" [{_factor(low)}-{_factor(high)}]" if interval else "")
    if ratio <= 1 / AS_FACTOR:
        return f"{_factor(1 / ratio)}x faster" + (f" [{_factor(1 / high)}-{_factor(1 / low)}]" if interval else "")
    return f"{(ratio - 1) * 100:+.1f}%" + (f" [{(low - 1) * 100:+.0f},{(high - 1) * 100:+.0f}]" if interval else "")


def _factor(x: float) -> str:
    """Three figures, as a factor reads best: 2.00, 26.7, 267."""
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


@dataclass(frozen=True)
class CellChange:
    op: str
    target: str
    impl: str
    device: str
    dtype: str
    params: str
    pass_name: str
    verdict: str
    base_status: str | None = None
    new_status: str | None = None
    base_median_s: float | None = None
    new_median_s: float | None = None
    ratio: float | None = None  # new / base median: above 1 is slower
    ratio_low: float | None = None  # its 95% confidence interval (bootstrap)
    ratio_high: float | None = None
    p_value: float | None = None  # Mann-Whitney, two-sided
    p_adjusted: float | None = None  # for the number of cells compared (what the verdict uses)
    base_n: int = 0
    new_n: int = 0
    reason: str | None = None  # why a change the samples call real is unsure (verdict.doubt)
    # how much slower the machine ran in NEW by each probe both sides took (canary, memory, sm clock)
    machine: dict[str, float] = field(default_factory=dict)
    # Timed in alternation with `partner` in both runs (pairs.py): its time relative to the partner's in NEW
    # over BASE (above 1: slower against it), that ratio's 95% interval and p-value (adjusted once judged)
    partner: str | None = None
    relative: float | None = None
    relative_low: float | None = None
    relative_high: float | None = None
    relative_p: float | None = None
    relative_spread: float | None = None  # the spread between processes it must get past (None: one process)
    by_pairs: bool = False  # the verdict is the pairs' (verdict.with_pairs)
    # its code's digest (impl_code) differs between the runs; None where a side does not record it
    code_changed: bool | None = None
    partner_changed: bool = False  # the partner's digest differs: the pairs say nothing (it moved too)
    phases_apart: bool = False  # one side timed in a slow phase of the machine, the other at speed (PHASES)
    gross_at: float = math.inf  # the factor a change must pass to outgrow the machine's drift (verdict.gross_at)
    despite: str | None = None  # the doubt a change past it outgrew (verdict.gross): it is called all the same

    @property
    def unexplained(self) -> bool:
        """Called slower or faster though its code's digest is the same in both runs."""
        return self.verdict in DECISIVE and self.code_changed is False

    def timed(self) -> bool:
        """Whether a run timed the cell: one timed in neither (a device this machine lacks), or only in a run that
        did not time it, says nothing of a change."""
        return Status.OK in (self.base_status, self.new_status)

    def words(self) -> str:
        """The verdict with what qualifies it: `broken (ok -> error)`, `unsure (REASON)`, `slower (by its pairs
        with py)`, `(code unchanged)`, as tables show it."""
        out = self.verdict + (f" ({self.base_status} -> {self.new_status})" if self.verdict in CHANGED_STATUS else "")
        out += f" ({self.reason})" if self.reason else f" (by its pairs with {self.partner})" if self.by_pairs else ""
        out += f" (past {self.gross_at:.3g}x, though {self.despite})" if self.despite else ""
        return out + (f" ({CODE_UNCHANGED})" if self.unexplained else "")


class EnvDifference(NamedTuple):
    """A fact of the environment (torch, driver, CPU...) that differs between BASE and NEW."""
    field: str
    base: str
    new: str


@dataclass(frozen=True)
class Comparison:
    """BASE against NEW: every cell's change and verdict, what differs in their machines, and the rules used."""
    cells: tuple[CellChange, ...]
    env_differences: tuple[EnvDifference, ...] = ()
    threshold: float = 0.05
    alpha: float = 0.05
    counts: dict[str, int] = field(default_factory=dict)
    bandwidth: tuple[float | None, float | None] = (None, None)  # median mem_gbps of BASE and NEW
    busy: tuple[Mapping[str, float] | None, ...] = (None, None)  # each run's metadata's busy_stretch (sweep/session.py)
    uncalibrated: tuple[tuple[str, ...], ...] = ((), ())  # the devices each run's machine had no calibration for

    @property
    def regressions(self) -> list[CellChange]:
        return [c for c in self.cells if c.verdict in REGRESSIONS]

    @property
    def compared(self) -> list[CellChange]:
        """The cells in both runs."""
        return [c for c in self.cells if c.verdict not in ONE_SIDED]

    @property
    def timed_in_both(self) -> int:
        """How many of the cells in both runs a run timed (what the verdicts are counted against)."""
        return sum(c.timed() for c in self.compared)

    @property
    def unsure_reasons(self) -> dict[str, int]:
        """How many cells are unsure for each reason, the most common first (`noisy`: 38); a reason's figure in
        brackets (`the machine ran slower (+12%)`) is left out, so that one reason is one count."""
        found = Counter((c.reason or CANNOT_TELL).split(" (")[0] for c in self.cells if c.verdict == Verdict.UNSURE)
        return dict(found.most_common())

    def ordered(self) -> list[CellChange]:
        """Regressions first (worst first), then improvements (best first), then the rest."""
        def key(c: CellChange) -> tuple[int, float]:
            ratio = c.ratio if c.ratio is not None else 1.0
            return VERDICTS.index(c.verdict), -ratio if c.verdict == Verdict.SLOWER else ratio

        return sorted(self.cells, key=key)

    def warnings(self) -> list[str]:
        out = []
        if self.env_differences:
            diffs = "; ".join(f"{d.field}: {d.base} -> {d.new}" for d in self.env_differences)
            out.append(f"the runs come from different machines or software ({diffs}); timings may not be comparable")
        base, new = self.bandwidth
        if base and new and abs(new / base - 1) > BANDWIDTH_CHANGE:
            out.append(f"the machine's memory bandwidth differed: {base:.1f} GB/s in base, {new:.1f} GB/s in new "
                       "(median of the probes); memory-bound cells move with it, whatever the code did")
        for side, stretch in zip(("base", "new"), self.busy):
            if stretch:
                out.append(f"{busy_through(stretch)} the {side} run: its CPU cells may read slower than their code, "
                           "marked or not; compare runs measured with nothing else running")
        for side, devices in zip(("base", "new"), self.uncalibrated):
            for device in dict.fromkeys(devices):
                name, without = UNCALIBRATED[device]
                out.append(f"the {side} run's machine had no calibration of its {name}: its {name} passes had "
                           f"{without}")
        out += _code_warnings(self.cells)
        apart = sorted({c.reason for c in self.cells if c.reason and c.reason.startswith(TIMED_APART)})
        if apart:
            count = sum(1 for c in self.cells if c.reason in apart)
            kinds = {"thread": ["--threads"], "allocator": ["--allocator"], "": ["--cuda-graph", "--flush-caches"]}
            said = [next(k for k in kinds if k in a) for a in apart]  # "" is in every reason: the last resort
            options = ", ".join(option for k in kinds if k in said for option in kinds[k])
            out.append(f"{count} of {len(self.cells)} cells were {'; '.join(apart)}: they get no verdict; time both "
                       f"runs the same way ({options}) to compare them")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold, "alpha": self.alpha, "counts": self.counts, "unsure_reasons": self.unsure_reasons,
            "warnings": self.warnings(),
            "bandwidth_gbps": {"base": self.bandwidth[0], "new": self.bandwidth[1]},
            "busy_stretch": {"base": self.busy[0], "new": self.busy[1]},
            "env_differences": [d._asdict() for d in self.env_differences],
            # "pass" as in the results files (the field cannot be named so in Python)
            "cells": [{("pass" if k == "pass_name" else k): _json_safe(v) for k, v in asdict(c).items()}
                      for c in self.ordered()],
        }


def _code_warnings(cells: Sequence[CellChange]) -> list[str]:
    """What the digests say of the verdicts: decisive ones on code that did not change, and pairs left
    unheard because the partner changed."""
    out = []
    still = sum(c.unexplained for c in cells)
    if still:
        out.append(f"{still} cell(s) came out slower or faster though their code did not change (the same "
                   f"digest in both runs, {CODE_UNCHANGED}): the machine, the software around it or what the "
                   "code reads at run time (environment, files) moved them")
    moved = [c for c in cells if c.partner_changed]
    if moved:
        partners = ", ".join(sorted({str(c.partner) for c in moved}))
        out.append(f"{len(moved)} paired cell(s) are judged by their own times only: their partner's code "
                   f"({partners}) changed between the runs, so their time against it says nothing of their own")
    return out


def _json_safe(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value

"""The line under a run's tables for passes timed in pairs whose partner read far from the partner's own row
(speedup.partner_apart, the tables' `≠`): how many, the widest, and what moved them.

Where a side was timed beside other work, or stopped `disturbed`, that work did (its stalls come in whole scheduler
ticks, which no canary reading scales to). Otherwise the machine's canary (each row's `canary_ratio`: its time
around the pass over the calibrated time) says which of two things did. Where the canary's move between the two
cells accounts for the partner's (the partner's time in the pairs over its own row's, divided by the canary's ratio
at the one cell to the other, within PARTNER_APART), the machine changed speed between the cells. Where it does not,
the partner's time moved beside the cell, timed by turns with it (the two share the caches and the memory). In two
main-job runs, 15 of 20 and 7 of 16 such passes were of the first kind (lstm_cell's cpp beside py at batch size 16:
py 1.30-1.33x its own row, the canary 1.14x at py's cell and 1.46-1.49x at cpp's); among the others, grid_sample's
py read 1.83-1.91x its own row beside cpp at image size 1024 with the canary at 1.00-1.11x at both, and 3.98x beside
py-imagegrad with the canary at 1.41x and 1.63x. With each call started on flushed caches (run --flush-caches), py
read 0.369 ms alone and 0.369-0.372 ms beside cpp and py-imagegrad.
"""

from __future__ import annotations

import math
from collections import Counter

import pandas as pd

from benchctl.analysis.speedup import (PARTNER_APART, disturbed, machine_moved, partner_apart, partner_drift,
                                      present_value)
from benchctl.analysis.summary import axis_value_text, ms_text
from benchctl.analysis.timed_alike import flushed
from benchctl.results import storage
from benchctl.results.schema import CELL_COLUMNS, beside_work
from benchctl.vocab import Status

# What the line says of a partner the pairing moved, where its calls ran on warm caches.
COLD = "`--flush-caches` starts every call on cold caches, alone and by turns alike"
WORK, MACHINE, PAIRS, UNREAD = "work", "machine", "pairs", "unread"  # what moved a partner (`_cause`)


def partner_apart_line(rows: pd.DataFrame) -> str | None:
    """How many passes timed in pairs read their partner far from its own row, the widest, and how many of them
    the canary says the machine moved (`machine_moved`), so nobody divides two medians of the table that the
    machine's speed, or the pairing itself, set apart."""
    found = [(b, r) for b, r in paired_with_base(rows) if partner_drift(b, r) is not None]
    apart = [(b, r) for b, r in found if partner_apart(b, r)]
    if not apart:
        return None
    base, row = max(apart, key=lambda f: abs(math.log(partner_drift(*f))))
    where = f"{row['op']}/{row['target']} {row['pass']} at {row['axis']}={axis_value_text(row['axis_value'])}"
    beside = base["median_s"] * partner_drift(base, row)
    canaries = (f", the canary {base['canary_ratio']:.2f}x and {row['canary_ratio']:.2f}x calibrated"
                if machine_moved(base, row) is not None else "")
    return (f"{len(apart)} of {len(found)} passes timed in pairs read their partner over {PARTNER_APART:.0%} off "
            f"the partner's own row (the widest, {where}: {base['impl']} {ms_text(base['median_s'])} ms in its "
            f"row, {ms_text(beside)} ms beside {row['impl']}{canaries}): {_causes(apart)}; each speedup is its "
            "pairs', timed side by side")


def _cause(base: dict, row: dict) -> str:
    """What moved the partner: other work beside a side (`WORK`: it stopped `disturbed`, or was timed beside
    work), else the machine's speed (`MACHINE`: the canary's move accounts for it), else the pairing (`PAIRS`);
    `UNREAD` where the canary was not read. A neighbour's stalls move a call by whole scheduler ticks, which the
    canary, read around the pass, does not scale to: py 31.7 ms in its row and 0.079 ms beside cpp, the canary
    96x and 1.02x calibrated, read as the pairing's doing."""
    if any(disturbed(r) or beside_work(r) for r in (base, row)):
        return WORK
    moved = machine_moved(base, row)
    return UNREAD if moved is None else MACHINE if moved else PAIRS


def _causes(apart: list[tuple[dict, dict]]) -> str:
    """`in 7 the canary's move between the two cells accounts for it (...), in 12 it does not (...)`; where every one
    is of one kind, `the canary's move between the two cells accounts for none of them (...)`."""
    causes = [(_cause(b, r), r) for b, r in apart]
    kinds = Counter(cause for cause, _ in causes)
    warm = not any(flushed(r) for cause, r in causes if cause == PAIRS)
    moved, beside = "the canary's move between the two cells accounts for", (
        "(the partner's time moved beside the cell, timed by turns with it: the two share the caches and the memory"
        + (f"; {COLD}" if warm else "") + ")")
    if kinds[PAIRS] == len(apart):
        return f"{moved} none of them {beside}"
    if kinds[MACHINE] == len(apart):
        return f"{moved} every one (the machine changed speed)"
    parts = [f"in {kinds[WORK]} a side was timed beside other work or stopped disturbed (its row is that work's as "
             "much as the code's)" if kinds[WORK] else "",
             f"in {kinds[MACHINE]} {moved} it (the machine changed speed)" if kinds[MACHINE] else "",
             f"in {kinds[PAIRS]} it does not {beside}" if kinds[PAIRS] else "",
             f"in {kinds[UNREAD]} the canary was not read (no calibration)" if kinds[UNREAD] else ""]
    return ", ".join(p for p in parts if p)


def paired_with_base(rows: pd.DataFrame) -> list[tuple[dict, dict]]:
    """Each ok row timed in pairs, with the ok row of its partner in the same cell and pass."""
    key = [c for c in CELL_COLUMNS if c != "impl"] + ["pass"]
    ok = storage.latest(rows[rows["status"] == Status.OK], [*CELL_COLUMNS, "pass"])
    own = {(r["impl"], *(r[k] for k in key)): r for r in ok.to_dict("records")}
    paired = (r for r in ok.to_dict("records") if present_value(r.get("paired_with")))
    return [(own[k], r) for r in paired if (k := (r["paired_with"], *(r[c] for c in key))) in own]

"""A cell's partner in alternation (`run --pair-with`, measure/paired.py): prepared for the cell, or why the cell is
timed alone, and the columns a paired row keeps of it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from benchctl.errors import error_message
from benchctl.measure.paired import PAIRS_UP_TO, paired_stats
from benchctl.measure.prepared import Prepared, prepare
from benchctl.measure.timing import Measurement
from benchctl.ops.cells import Resolved


def of(resolved: Resolved) -> tuple[Prepared | None, str]:
    """The cell's partner in alternation (prepared, not gated: its own cell is), or why it is timed alone."""
    cell = resolved.cell
    if not cell.paired_with or cell.paired_with == cell.impl:
        return None, ""
    try:
        partner = replace(cell, impl=cell.paired_with, paired_with=None).resolve()
        reason = partner.unavailable_reason()
        if reason:
            return None, f"timed alone: {cell.paired_with} cannot run here ({reason})"
        return prepare(partner), ""
    except Exception as exc:
        return None, f"timed alone: {cell.paired_with} failed ({error_message(exc)})"


def columns(m: Measurement, other: Measurement | None, partner: str) -> dict[str, Any]:
    """The row keeps the partner's samples beside its own, and the speedup of the pairs neither side set aside."""
    if other is None:
        return {"message": f"timed alone: over {PAIRS_UP_TO:g}x from {partner} in the warm-up, too far to pair"}
    aside = {"partner_disturbed": list(other.disturbed)} if other.disturbed else {}
    return {"paired_with": partner, "partner_samples_s": list(other.samples), **aside,
            **paired_stats(m.samples, other.samples, m.aside, other.disturbed)}

"""Times too good to keep unexamined: a pass below its floor (measure/trust.py), or faster than its
operator's reference implementation at the same point by more than SPEEDUP_LIMIT, is measured once more at
the end of the sweep, strictly: through the gate again, on fresh inputs, with STRICT_KEPT of its timed
calls' outputs checked (measure/audit.py) and, on a GPU, every stream waited for (measure/clocks.py).

What the re-check finds decides the row: a failure replaces it (`incorrect`, `error`, ...); a time still
below the floor stays `below_floor`, now re-checked; a large speedup that holds is kept `ok` and says it
was re-checked (a real 125x kernel is not flagged). Every such row records `rechecked`. The local executor
re-checks speedups (it has every implementation's rows); the fan-out executors re-check the floor only.
"""

from __future__ import annotations

from typing import Any

from benchctl.measure.stats import join_messages
from benchctl.results.schema import FIRST_CALL_COLUMNS
from benchctl.analysis.summary import speedup
from benchctl.vocab import Status

Row = dict[str, Any]


def speedup_over(row: Row, reference: Row | None) -> float | None:
    """summary.speedup where both passes ran and have medians, else None."""
    if reference is None or reference.get("status") != Status.OK or row.get("status") != Status.OK:
        return None
    return speedup(reference, row) if row.get("median_s") and reference.get("median_s") else None


def suspect_passes(rows: list[Row], references: dict[str, Row], limit: float) -> tuple[str, ...]:
    """The passes to re-check: below the floor, or over `limit` times faster than the reference's pass."""
    return tuple(r["pass"] for r in rows if r.get("status") == Status.BELOW_FLOOR
                 or (speedup_over(r, references.get(r["pass"])) or 0.0) > limit)


def judged(kept: list[Row], again: list[Row], references: dict[str, Row]) -> list[Row]:
    """Each pass's row after its re-check (`again`); passes not re-checked stay as they were."""
    by_pass = {r["pass"]: r for r in again}
    return [_first_call_kept(row, _judge(row, by_pass[row["pass"]], references.get(row["pass"])))
            if row["pass"] in by_pass else row for row in kept]


def _first_call_kept(row: Row, judged: Row) -> Row:
    """A re-check finds the cell's code compiled already: the row keeps what its first call compiled."""
    return {**judged, **{k: row[k] for k in FIRST_CALL_COLUMNS if k in row}}


def _judge(row: Row, new: Row, reference: Row | None) -> Row:
    status = new.get("status")
    if status not in (Status.OK, Status.BELOW_FLOOR):
        said = f"re-checked on fresh inputs: {new.get('message') or status}"
        return {**new, "rechecked": True, "message": said}
    if row.get("status") == Status.BELOW_FLOOR and status == Status.BELOW_FLOOR:
        return {**row, "rechecked": True,
                "message": join_messages(row.get("message"), "re-checked on fresh inputs: still below the floor")}
    if row.get("status") == Status.BELOW_FLOOR:  # the re-check is not below: the first was not the call's time
        return {**new, "rechecked": True, "message": join_messages(new.get("message"), "re-checked on fresh "
                                                                   "inputs after a time below the floor")}
    if status == Status.BELOW_FLOOR:
        return {**new, "rechecked": True}
    ratio = speedup_over(new, reference)
    said = f"re-checked on fresh inputs: {ratio:.0f}x the reference holds" if ratio else "re-checked on fresh inputs"
    return {**row, "rechecked": True, "message": join_messages(row.get("message"), said)}

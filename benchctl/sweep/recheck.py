"""Times too good to keep unexamined: a pass below its floor (measure/trust.py), or faster than its
operator's reference implementation at the same point by more than SPEEDUP_LIMIT, is measured once more at
the end of the sweep, strictly: through the gate again, on fresh inputs, with STRICT_KEPT of its timed
calls' outputs checked (measure/audit.py) and, on a GPU, every stream waited for (measure/clocks.py). So is a
pass found `incorrect` on its times alone (its calls on unseen data slow: measure/unseen.py), a verdict a
neighbour's moment of load can imitate: where the re-check is `ok`, its row stands (a cache honest only when
re-checked is timed doing its work), else the first verdict, saying what the re-check found.

What the re-check finds decides the row: a failure replaces it (`incorrect`, `error`, ...); a time still
below the floor stays `below_floor`, now re-checked; a large speedup that holds, over the limit again, is kept
`ok` and says it was re-checked (a real 125x kernel is not flagged). One that reads under the limit in the
re-check takes the re-check's row, which says so; and where the re-check or the reference is `disturbed` (too
few samples the machine left alone), the row keeps its first measurement and says the re-check could not tell:
beside a compile, honest 6.6-25x kernels read 52-1430x over a reference stalled by whole scheduler ticks, and
their re-checks, stalled again, read 17-2655x. Every such row records `rechecked`. The local executor
re-checks speedups (it has every implementation's rows); the fan-out executors re-check the floor only.
"""

from __future__ import annotations

from typing import Mapping

from benchctl.measure import unseen
from benchctl.measure.result import PassResult, Results
from benchctl.measure.stats import join_messages
from benchctl.results.schema import FIRST_CALL_COLUMNS, left_alone
from benchctl.analysis.speedup import speedup
from benchctl.vocab import Status

ByPass = Mapping[str, PassResult]  # a cell's results by pass
AGAIN = "re-checked on fresh inputs"
NOT_AGAIN = f"{AGAIN}: its {unseen.CACHED} were slow in its first measurement, not in this one"


def speedup_over(result: PassResult, reference: PassResult | None) -> float | None:
    """speedup.speedup where both passes ran and have medians, else None."""
    if reference is None or not reference.ok or not result.ok:
        return None
    return speedup(reference, result) if result.median_s and reference.median_s else None


def rechecked(status: str, message: str | None) -> bool:
    """Whether a pass of this status and message is re-checked whatever its reference read: below the floor, or
    found incorrect on its times alone."""
    return status == Status.BELOW_FLOOR or (status == Status.INCORRECT and unseen.on_time(message))


def suspect_passes(results: Results, references: ByPass, limit: float) -> tuple[str, ...]:
    """The passes to re-check: `rechecked` ones, and those over `limit` times faster than the reference's pass."""
    return tuple(r.pass_ for r in results if rechecked(r.status, r.message)
                 or (speedup_over(r, references.get(r.pass_)) or 0.0) > limit)


def judged(kept: Results, again: Results, references: ByPass, limit: float) -> Results:
    """Each pass's result after its re-check (`again`), keeping what its first call compiled (the re-check
    finds the cell's code compiled already); passes not re-checked stay as they were. `limit`: the speedup over
    the reference that sent a pass to be re-checked."""
    by_pass = {r.pass_: r for r in again}
    return [_judge(result, by_pass[result.pass_], references.get(result.pass_), limit)
            .keeping(result, FIRST_CALL_COLUMNS) if result.pass_ in by_pass else result for result in kept]


def _judge(first: PassResult, new: PassResult, reference: PassResult | None, limit: float) -> PassResult:
    """The re-check's verdict on `first`."""
    failed = f"{AGAIN}: {new.message or new.status}"
    if first.status == Status.INCORRECT:  # on its times alone: it stands where the re-check fails too
        ok = new.status in (Status.OK, Status.BELOW_FLOOR)
        return new.with_(rechecked=True, message=join_messages(new.message, NOT_AGAIN)) if ok else \
            first.with_(rechecked=True, message=join_messages(first.message, failed))
    if new.status not in (Status.OK, Status.BELOW_FLOOR):
        return new.with_(rechecked=True, message=failed)
    if first.status == Status.BELOW_FLOOR and new.status == Status.BELOW_FLOOR:
        return first.with_(rechecked=True, message=join_messages(first.message, f"{AGAIN}: still below the floor"))
    if first.status == Status.BELOW_FLOOR:  # the re-check is not below: the first was not the call's time
        return new.with_(rechecked=True, message=join_messages(new.message, f"{AGAIN} after a time below the floor"))
    if new.status == Status.BELOW_FLOOR:
        return new.with_(rechecked=True)
    return _judge_speedup(first, new, reference, limit)


def _judge_speedup(first: PassResult, new: PassResult, reference: PassResult | None, limit: float) -> PassResult:
    """A speedup over the reference beyond `limit`, re-checked `ok`: it holds where the re-check reads over
    `limit` too (the row is the first measurement's, or the re-check's where the machine did not leave the first
    alone); under it, the re-check's row is kept; a side the machine did not leave alone (the re-check's samples,
    or the reference's, nearly all waiting for a CPU, or timed beside other work) cannot tell, and the first row
    stands, saying so."""
    ratio, before = speedup_over(new, reference), speedup_over(first, reference)
    if ratio is None or before is None:
        return first.with_(rechecked=True, message=join_messages(first.message, AGAIN))
    if not (left_alone(new) and left_alone(reference)):
        said = (f"{AGAIN}: too few samples the machine left alone, in the re-check or the reference's, to tell "
                f"whether {before:.0f}x the reference holds")
        return first.with_(rechecked=True, message=join_messages(first.message, said))
    if ratio > limit:
        kept, said = first if left_alone(first) else new, f"{AGAIN}: {ratio:.0f}x the reference holds"
        return kept.with_(rechecked=True, message=join_messages(kept.message, said))
    said = (f"{AGAIN}: {ratio:.1f}x the reference, under the {limit:.0f}x that has a pass re-checked (its first "
            f"measurement read {before:.0f}x); the row keeps the re-check's times")
    return new.with_(rechecked=True, message=join_messages(new.message, said))

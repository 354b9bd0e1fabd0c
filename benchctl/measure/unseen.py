"""Calls on data the implementation has never been given, timed beside the rest: a result kept from an earlier
call shows as calls that are fast only on data seen before.

The timed calls rotate over a few data sets (fresh.py), so an implementation can keep its results by a few of
its inputs' values and hand them back: every output is then right for its data, and the audit's checks of the
outputs pass (audit.py). On the 2-core VM such a cache read 0.010 ms a call against 1.5 ms computed, 230x its
reference, `ok`. Its tell is time: a call on data it has not seen must do the work. So from a pass's first
sample on (its warm-up is not judged: a cheap call warms up for hundreds of calls), one draw at a random place
in each of UNSEEN_MAX windows of `every` draws (UNSEEN_EVERY; in a strict re-check STRICT_EVERY) holds data
made from a seed nobody drew before (made a draw ahead, so the call finds the caches as the others do). Each
such sample is set against the median of up to NEIGHBOURS samples on either side of it on seen data (so a
machine changing speed reaches both alike); where at least UNSEEN_JUDGED of them were judged and every one
took over CACHED_RATIO times its neighbours, the pass's time is not the work's and the pass is `incorrect`.
The same holds against the controls (`overall`), over OVERALL_RATIO: a cache that knows its misses can slow
the calls right after each one, so that a miss's neighbours are as slow as it (it took 71x its reference, `ok`,
that way). A control is one more draw at a random place in each window, on seen data (the key from the
rotation), whose other inputs get their own data copied in as an unseen draw's get its data: the copies leave
the caches as cold for it as for the unseen call, and a cache answers it from memory. Against the median of
the pass's seen samples instead (the rule where fewer than UNSEEN_JUDGED controls are left clean), honest calls
that read little of a large input were called a cache: grid_sample's py forward at image size 1024 (50 MB of
image copied in before the call, 16,384 points read at random) took 3.6-13.3x its median on unseen data in each
of six runs; in two more, 0.19-0.38 ms on unseen data and 0.14-0.39 ms on its controls, against a median of
0.08-0.11 ms for the calls whose caches held what they read.
Samples set aside as disturbed take no part, with one exception (`believed`): the calls that would give a
cache away are the ones it could crowd the machine during (processes of its own on every core make its
threads wait, and the watch sets each such call aside), so each unseen call is watched in a window of its
own, and where the unseen calls were set aside so much more often than the others that chance would do so
in under SELECTIVE of passes, their flags are not believed and they are judged as they are. Where they were
set aside about as often as the others (a busy machine), their CPU time judges them (`by_cpu`, CPU_RATIO): a
call's CPU seconds do not count its waits for a core, and a miss does the work on the implementation's own
threads. Over two quick CPU sweeps, honest passes' ratios against their neighbours reached 2.62 at most, and
the largest of the passes' smallest ratios was 1.39 (benchmarks/unseen_bench.py, which gives the controls'
figures too).
"""

from __future__ import annotations

import bisect
import math
import random
from typing import Sequence

import numpy as np

UNSEEN_EVERY = 8  # one draw in this many, at random within each window, holds unseen data (and one is a control)
# In a strict re-check (sweep/recheck.py): a speedup too large to keep unexamined. Four at least: a window holds
# its unseen draw, the draw after it (which puts the data back), a control, and the previous window's last may be
# an unseen draw.
STRICT_EVERY = 4
UNSEEN_MAX = 6  # unseen draws a pass, at most (each costs a making of the cell's inputs, outside the clock)
NEIGHBOURS = 2  # seen samples each side an unseen one is set against
UNSEEN_JUDGED = 2  # unseen samples needed for a verdict
# An unseen call this many times as long as its neighbours: a result cache answers in a lookup, tens to
# hundreds of times faster than the work; an honest call on new data of the same distribution takes as long.
CACHED_RATIO = 2.0
# The same against the pass's median (`overall`): higher, as the refresh of every input before an unseen call
# (and back after it) moves memory a seen call's draw does not; honest passes' smallest such ratio reached 2.22.
OVERALL_RATIO = 3.0
# The chance, at the seen calls' share set aside, of as many unseen calls set aside, under which their flags are
# the implementation's doing and not the machine's.
SELECTIVE = 1e-3
# The same by CPU time, against the neighbours, where the watch set the unseen calls aside (`by_cpu`): far higher,
# as a busy machine moves a call's CPU time too (torch's threads spin while one of them waits for a core). With a
# process spinning on one core of the 2-core VM, over two quick sweeps, honest calls read up to 129x the CPU
# time of their neighbours (the largest of the passes' smallest ratios 1.77); with two sweeps of tiny calls at
# once (hoconv2d's py at 16 x 16, 141 passes), up to 18.2x (largest smallest 1.8), and two passes had both their
# judged calls 5-18x the pass's median CPU time: no bar is set against that median. The exploit suite's caches
# read 220-2375x their neighbours.
CPU_RATIO = 10.0
# An unseen call must also take this much longer than what it is set against: the copies around it cost a call
# on tiny inputs a fixed few tens of microseconds (the README's silu at 2 x 16, 10 us a call, read 4.6-6.6x its
# pass's median), while the work a cache skips is what makes it worth keeping (the exploit suite's: 1.5 ms).
EXCESS_S = 200e-6
# What `cached` says of a pass: a verdict on the calls' times alone, which a re-check confirms (sweep/recheck.py).
CACHED = "timed calls on data never given to it before"
GIVEN = "on data it had been given"


def every(strict: bool) -> int:
    return STRICT_EVERY if strict else UNSEEN_EVERY


def positions(start: int, window: int, rng: random.Random) -> tuple[list[int], list[int]]:
    """The draws (by index) to hold unseen data, one at random in each of UNSEEN_MAX windows of `window` draws from
    `start`, and the controls, one more at random in each window: neither an unseen draw nor a draw after one
    (which puts the others' own data back, and makes the next unseen data set)."""
    unseen: list[int] = []
    controls: list[int] = []
    for k in range(UNSEEN_MAX):
        first = start + k * window
        unseen.append(first + rng.randrange(window))
        controls.append(rng.choice([i for i in range(first, first + window) if i not in unseen
                                    and i - 1 not in unseen]))
    return unseen, controls


def _clean(samples: Sequence[float], aside: Sequence[bool]) -> list[bool]:
    """Which samples the watch left in (all, where `aside` is not of these samples)."""
    return [not a for a in aside] if len(aside) == len(samples) else [True] * len(samples)


def ratios(samples: Sequence[float], unseen: Sequence[bool], aside: Sequence[bool] = ()) -> list[float]:
    """Each clean unseen sample over the median of its clean seen neighbours (NEIGHBOURS each side, two at least;
    `_ratio`)."""
    clean = _clean(samples, aside)
    seen = [i for i, u in enumerate(unseen) if not u and clean[i]]
    out = []
    for i, u in enumerate(unseen):
        if not (u and clean[i]):
            continue
        at = bisect.bisect_left(seen, i)
        near = [samples[j] for j in seen[max(0, at - NEIGHBOURS):at + NEIGHBOURS]]
        if len(near) >= 2 and float(np.median(near)) > 0:
            out.append(_ratio(samples[i], float(np.median(near))))
    return out


def _ratio(sample: float, against: float) -> float:
    """`sample` over `against`; 1 where it is within EXCESS_S of it."""
    return sample / against if sample - against > EXCESS_S else 1.0


def overall(samples: Sequence[float], unseen: Sequence[bool], aside: Sequence[bool] = (),
            controls: Sequence[bool] = ()) -> list[float]:
    """Each clean unseen sample over the median of the clean controls (`_against`; `_ratio`)."""
    clean = _clean(samples, aside)
    middle = _against(samples, unseen, aside, controls)
    if middle <= 0:
        return []
    return [_ratio(s, middle) for s, u, c in zip(samples, unseen, clean) if c and u]


def _against(samples: Sequence[float], unseen: Sequence[bool], aside: Sequence[bool],
             controls: Sequence[bool]) -> float:
    """The median of the clean controls (seen data copied in as an unseen draw's is) where the pass is
    `controlled`; else of every clean seen sample of the pass; 0 where fewer than two."""
    clean = _clean(samples, aside)
    picked = controls if controlled(samples, controls, aside) else [not u for u in unseen]
    seen = [s for s, k, c in zip(samples, picked, clean) if c and k]
    return float(np.median(seen)) if len(seen) >= 2 else 0.0


def controlled(samples: Sequence[float], controls: Sequence[bool], aside: Sequence[bool] = ()) -> bool:
    """Whether `overall` sets the unseen samples against the controls (UNSEEN_JUDGED of them left clean)."""
    clean = _clean(samples, aside)
    return len(controls) == len(samples) and sum(k and c for k, c in zip(controls, clean)) >= UNSEEN_JUDGED


def _unjudgeable(mine: Sequence[bool]) -> bool:
    """Whether a pass had UNSEEN_JUDGED unseen calls or more and those set aside (`mine`: their flags) left
    fewer than UNSEEN_JUDGED to judge."""
    return len(mine) >= UNSEEN_JUDGED and len(mine) - sum(mine) < UNSEEN_JUDGED


def believed(unseen: Sequence[bool], aside: Sequence[bool]) -> list[bool]:
    """`aside` as the rules take it: where too few unseen calls were left to judge, and the watch set them aside
    so much more often than the seen calls that chance would less than SELECTIVE of the time (the binomial tail
    at the seen calls' share, by the rule of succession), without the unseen calls' flags."""
    flags = list(aside)
    if len(flags) != len(unseen):
        return flags
    mine = [a for a, u in zip(flags, unseen) if u]
    seen = [a for a, u in zip(flags, unseen) if not u]
    if not _unjudgeable(mine) or not seen:
        return flags
    share = (sum(seen) + 1) / (len(seen) + 2)  # none of a few seen calls set aside is not a share of 0
    if _at_least(sum(mine), len(mine), share) >= SELECTIVE:
        return flags
    return [a and not u for a, u in zip(flags, unseen)]


def _at_least(k: int, n: int, p: float) -> float:
    """The binomial tail P(X >= k), X ~ B(n, p), from `math` (sealed: seal.LIBRARIES), not a library object the
    measured code could change unseen."""
    return sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(k, n + 1))


def _set_aside(unseen: Sequence[bool], aside: Sequence[bool]) -> list[bool]:
    """The unseen calls' flags, as the rules take them (`believed`)."""
    flags = believed(unseen, aside)
    return [a for a, u in zip(flags, unseen) if u] if len(flags) == len(unseen) else []


def by_cpu(unseen: Sequence[bool], aside: Sequence[bool], cpu: Sequence[float]) -> bool:
    """Whether the unseen calls are judged by their CPU seconds (`cpu`, each call's: clocks.OsReader): the watch
    left too few to judge by their wall time, and every call's CPU time was read. A call's CPU time is not its
    wait for a core, so a neighbour that sets it aside moves it little."""
    return _unjudgeable(_set_aside(unseen, aside)) and len(cpu) == len(unseen)


def on_time(message: str | None) -> bool:
    """Whether a row's message holds `cached`'s verdict."""
    return CACHED in (message or "")


def unjudged(unseen: Sequence[bool], aside: Sequence[bool], cpu: Sequence[float] = ()) -> str:
    """What an ok row says where its unseen calls were too few to judge once those set aside left, and their CPU
    time was not read, or ''."""
    mine = _set_aside(unseen, aside)
    if not _unjudgeable(mine) or by_cpu(unseen, aside, cpu):
        return ""
    return (f"{sum(mine)} of its {len(mine)} calls on data never given to it before were set aside as disturbed: "
            "not judged for a result kept from an earlier call")


def cached(samples: Sequence[float], unseen: Sequence[bool], aside: Sequence[bool] = (),
           cpu: Sequence[float] = (), controls: Sequence[bool] = ()) -> str:
    """Why the pass's samples (or, where the watch set its unseen calls aside, their CPU seconds `cpu`) are
    those of a result cache, or ''. `controls`: the calls on seen data copied in as unseen data is."""
    if len(unseen) != len(samples):
        return ""
    flags = believed(unseen, aside)
    median = ("as long as its calls on data it had been given that was copied in as theirs was" if
              controlled(samples, controls, flags) else f"as long as the median of its calls {GIVEN}")
    judged = [(ratios(samples, unseen, flags), CACHED_RATIO, "took", f"as long as the calls around them {GIVEN}"),
              (overall(samples, unseen, flags, controls), OVERALL_RATIO, "took", median)]
    if by_cpu(unseen, aside, cpu):
        judged.append((ratios(cpu, unseen), CPU_RATIO, "used", f"the CPU time of the calls around them {GIVEN}"))
    for found, bar, verb, against in judged:
        if len(found) >= UNSEEN_JUDGED and min(found) > bar:
            return (f"its {len(found)} {CACHED} {verb} {min(found):.1f}-"
                    f"{max(found):.1f}x {against} (a result kept from an earlier call: work skipped when timed)")
    return ""

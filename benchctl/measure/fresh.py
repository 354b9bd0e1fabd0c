"""Inputs the implementation has not seen: every timed call gets new tensor objects, and new data.

An implementation timed on the same input objects call after call can cache its result by the input
(its identity, or its storage address) and be timed doing nothing. So before each call, outside the
clock, the call gets fresh tensor objects over the cell's storage (new leaves where the inputs require
grad), and one input (`key`: the smallest floating input that requires grad, passed through the
implementation's `prepare` unchanged) has the next of SOURCES data sets copied into it (made from their
own seeds before timing). Consecutive calls never see the same data at the same addresses, so a cache
keyed by the inputs' objects or addresses hands back a result for other data, which the audit catches
(audit.py). One small input is enough for that, and its copy costs about a microsecond; copying every
input cost 9 us a call for lstm_cell and 43 us for grid_sample (a 3 MB image), as much as the calls.

A copy costs wall time, never a sample. A cell that has no such input gets fresh objects only; so did one
whose inputs take over POOL_BYTES, and there every call had the same data at the same addresses: a result kept
by the input's address, or the last call's output handed back, was right for every call (`ok`, 2.5 us and 23
us a call against 217 ms for the work on 273 MB). Such a cell rotates its key too (the key within POOL_BYTES),
but gets no unseen draws (below); where there is no memory left to make its data sets, it gets fresh objects
only and its rows say so (NOT_ROTATED). What a call had is `Draw.source` (-1: the cell's own data): the
audit's references run on the cell's inputs as the target made them (`InputPool.raw`) with the pool's own copy
of each data set (`InputPool.data`), and `inputs_of` rebuilds a draw made without a pool. The data sets and
the references on them are the point's, shared by its implementations (point_data.py).

A cache keyed by a few of the inputs' values would still find every call's data among the SOURCES, so a few
draws of each audited pass hold data never drawn before (`Draw.unseen`), made from a seed of the OS's, in
every input the pool can refresh (the key and the other floating inputs `prepare` passed through) and in the
gradient a backward starts from (prepared.py); the next draw puts the others' own data back. A cache kept by
an input the rotation leaves alone (4.5x on a backward), or a backward worked out in the forward from the
one gradient it is always given (16-109x), missed nowhere before. Given as new tensors of their own instead
of copied in, the others were cold where the cell's own were warm: grid_sample's cpp forward read 2.4-4.5x
on unseen data, a false `incorrect`. Where `prepare` made every input anew (no key), the unseen draws hold
its making of the new data set: such a cell had no unseen draws, and a result kept by value took 52x, `ok`.
A few more draws (`Draw.control`) copy the others' own data back into them (seen data, copied in as an unseen
draw's is), so the unseen calls' times have calls of the same cache state to be set against.
unseen.py says where they fall and what their times must show. A cell whose inputs take over POOL_BYTES has
none: each would be a making of its whole inputs, and tried on 288 MB in a re-check (where one draw in two is
unseen), an honest pass was called a cache in 3 of 7 tries: its calls took 210-250 ms or 780-1120 ms, as the
makings and the re-check's 16 kept outputs left memory to be backed anew or not.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any, Callable

import torch

from benchctl.machine.oom import is_oom
from benchctl.measure import point_data, unseen
from benchctl.measure.clocks import Thunk
from benchctl.ops.cells import Resolved
from benchctl.ops.registry import Case, Inputs

SOURCES = 3  # data sets the calls rotate over
SOURCE_SEED = 1000  # data set j is made at the cell's seed + SOURCE_SEED + j (the gate uses seed and seed + 1)
# The inputs a pool refreshes take this at most, in all (smallest first). A cell whose inputs take more rotates
# its key all the same (making its data sets took 1.0 s each for grid_sample at image size 4096, 805 MB an
# image), but gets no unseen draws: see unseen.py.
POOL_BYTES = 256 * 1024 * 1024
NOT_ROTATED = ("no memory to make another data set of its inputs: every call had the same data at the same "
               "addresses, so a result kept by their address would not be seen")


@dataclass(frozen=True)
class Draw:
    """One call's inputs: fresh objects over the cell's storage, `key` holding data set `source`."""

    inputs: Inputs
    source: int
    key: str | None = None
    others: tuple[str, ...] = ()  # the other inputs holding data set `source` too (an unseen draw's)
    control: bool = False  # seen data, copied into the others as an unseen draw's data is (unseen.py)
    stirred: bool = False  # its setup made the next unseen data set or copied the others' data: caches left cold

    @property
    def probe(self) -> bool:
        """The audit's call rather than the implementation's steady state: on unseen data, a control, or one whose
        setup stirred the memory (its time is the harness's doing as much as the call's)."""
        return self.unseen or self.control or self.stirred

    @property
    def unseen(self) -> bool:
        """Its data set was made for this call alone (`InputPool.begin`)."""
        return self.source >= SOURCES


def seed_of(cell_seed: int, source: int) -> int:
    """The seed of data set `source` (-1: the cell's own data, which its first call had)."""
    return cell_seed if source < 0 else cell_seed + SOURCE_SEED + source


def raw_inputs(resolved: Resolved, source: int, dtype: torch.dtype | None = None,
               device: str | None = None) -> Inputs:
    """Data set `source` as the target makes it (before the implementation's `prepare`)."""
    cell = resolved.cell
    case = Case(cell.params.to_dict(), dtype or cell.torch_dtype, device or cell.device, seed_of(cell.seed, source))
    return resolved.target.make_inputs(case)


def inputs_of(resolved: Resolved, draw: Draw, dtype: torch.dtype | None = None, device: str | None = None) -> Inputs:
    """What a call had, as the target makes it: the cell's own data with `key` (and `others`) from data set
    `source`."""
    inputs = raw_inputs(resolved, -1, dtype, device)
    if draw.source >= 0:
        made = raw_inputs(resolved, draw.source, dtype, device)
        inputs.update({k: made[k] for k in (draw.key, *draw.others) if k in made})
    return inputs


def tensor_bytes(inputs: Inputs) -> int:
    return sum(t.numel() * t.element_size() for t in inputs.values() if isinstance(t, torch.Tensor))


def fresh_view(t: Any) -> Any:
    """A new tensor object over `t`'s storage (a new leaf where `t` is a leaf that requires grad)."""
    if not isinstance(t, torch.Tensor) or not t.is_leaf:
        return t
    return t.detach().requires_grad_(t.requires_grad)


def _refreshable(store: Inputs, raw: Inputs) -> list[str]:
    """Floating inputs the implementation's `prepare` passed through unchanged (`store` against `raw`),
    smallest first, those that require grad before the others."""
    keys = [k for k, t in store.items() if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel()
            and isinstance(raw.get(k), torch.Tensor) and raw[k].shape == t.shape and raw[k].dtype == t.dtype
            and torch.equal(raw[k], t)]
    return sorted(keys, key=lambda k: (not store[k].requires_grad, store[k].numel()))


def _within(keys: list[str], store: Inputs) -> list[str]:
    """The first of `keys` that take POOL_BYTES in all, or fewer."""
    total, out = 0, []
    for k in keys:
        total += store[k].numel() * store[k].element_size()
        if total > POOL_BYTES:
            break
        out.append(k)
    return out


def _fits(made: Any, into: torch.Tensor) -> bool:
    """`made` can be copied into `into` (an input's shape may follow the seed: NaFlex's sequence lengths)."""
    return isinstance(made, torch.Tensor) and made.shape == into.shape and made.dtype == into.dtype


class InputPool:
    """The cell's storage (`store`: the inputs its first call had), the same inputs as the target made them
    (`raw`: before the implementation's `prepare`), the data sets copied into its `key`, and the reference's
    runs on them (`references`, by data set: audit.py fills it)."""

    def __init__(self, resolved: Resolved, store: Inputs, raw: Inputs):
        self.resolved, self.store, self.raw = resolved, store, raw
        self.key: str | None = None
        self.data: list[torch.Tensor] = []
        self.others: Inputs = {}  # the other inputs it refreshes: their own data, put back after an unseen draw
        self.calls = 0
        cell = resolved.cell
        shared = point_data.of((*cell.point, cell.seed))
        small = tensor_bytes(store) <= POOL_BYTES
        data = {k: t for k, t in store.items() if k not in resolved.target.writes}  # a buffer written holds no data
        keys = _within(_refreshable(data, raw), store)
        self.note = ""  # what a row must say of the draws: NOT_ROTATED, where memory ran short for the data sets
        self.large = not small  # no unseen draws (unseen.py)
        if keys and self._made(shared, keys[0]):
            self.key, self.others = keys[0], dict.fromkeys(keys[1:])
            self.data = shared.data[self.key]
        elif small and resolved.impl.prepare is not None:  # `prepare` made every input: unseen draws remake them
            self.others = dict.fromkeys(k for k, t in data.items() if isinstance(t, torch.Tensor) and t.numel())
        self.references = shared.references_for(self.key)
        self.random = random.Random(os.urandom(16))  # where the unseen draws fall: the calls cannot know it
        self.every, self.sampled, self.held = 0, False, False  # unseen draws: see `begin`
        self.unseen_at: list[int] = []  # the draws, by their index in `calls`, that are to hold unseen data
        self.control_at: list[int] = []  # those that are to copy the others' own data in (unseen.positions)
        self.ahead: tuple[int, Inputs] | None = None  # the next unseen data set, made a draw before its own
        self.spare: Inputs = {}  # where each unseen data set is kept from its making to its draw (`_kept`)
        self.restore = False  # the last draw was unseen: the others hold its data
        self.last: Draw | None = None  # the last draw made

    def _made(self, shared: point_data.PointData, key: str) -> bool:
        """The point's data sets for `key` (made here if they are not yet); False where there was no memory to
        make them."""
        if key not in shared.data:
            try:
                shared.data[key] = [raw_inputs(self.resolved, j)[key].detach().clone() for j in range(SOURCES)]
            except Exception as exc:
                if not is_oom(exc):
                    raise
                self.note = NOT_ROTATED
                return False
        return True

    def begin(self, every: int) -> None:
        """A new pass: once its sampling begins (`sampling`), a few draws hold data never drawn before (one
        at random in each window of `every`: unseen.positions; 0: none)."""
        self.every, self.sampled, self.unseen_at, self.control_at, self.ahead = every, False, [], [], None

    def sampling(self) -> None:
        """The pass's first sample is taken: its windows begin with the draw after the next (which makes the
        first unseen data set). Warm-up calls are not judged, and a cheap call warms up for hundreds."""
        if self.every and (self.key is not None or self.others) and not (self.sampled or self.large):
            self.sampled = True
            self.unseen_at, self.control_at = unseen.positions(self.calls + 1, self.every, self.random)

    def seen(self, setup: Callable[[], Thunk]) -> Thunk:
        """`setup()` with its draw from the rotation: an untimed call's (a paired turn's first, paired.py), which
        must not spend the data set kept for a timed one."""
        self.held = True
        try:
            return setup()
        finally:
            self.held = False

    def _unseen_data(self) -> tuple[int, Inputs]:
        """A data set of its own seed for every input refreshed (made whole by the target, so it is of the cell's
        kind; where `prepare` made every input, made whole by it): a cache kept by an input that the rotation
        leaves alone misses too. An input whose shape follows the seed (NaFlex's lengths) keeps its own."""
        self._own()
        source = SOURCES + int.from_bytes(os.urandom(3), "little")
        made = raw_inputs(self.resolved, source)
        if self.key is None:  # no input passed through prepare: prepare's making of the new data
            made = self.resolved.impl.prepare(dict(made))
        return source, self._kept({k: made[k].detach() for k in (self.key, *self.others)
                                   if k is not None and _fits(made.get(k), self.store[k])})

    def _kept(self, made: Inputs) -> Inputs:
        """`made` copied into tensors the pool keeps for unseen data (made once), and let go of at its making: an
        unseen draw then frees and makes nothing before its call, as a seen one. Freed right before the call, the
        data set left silu's honest forward at 64 x 4096 a median 1.56x as long as its seen calls over 20 quick runs,
        and up to 9.3x: `incorrect` (benchmarks/README.md, "Nothing made or freed before an unseen call")."""
        with torch.no_grad():
            for k, t in made.items():
                if k not in self.spare:
                    self.spare[k] = torch.empty_like(self.store[k].detach())
                self.spare[k].copy_(t)
        return {k: self.spare[k] for k in made}

    def upcoming(self) -> int | None:
        """The data set of the next unseen draw, where it is made (None: none is)."""
        return self.ahead[0] if self.ahead is not None else None

    def _own(self) -> Inputs:
        """The others' own data (copied when first asked for, while they hold it)."""
        for k, own in self.others.items():
            if own is None:
                self.others[k] = self.store[k].detach().clone()
        return self.others

    def refreshed(self) -> tuple[str, ...]:
        """The inputs whose data the draws replace now: the key, and the others while they hold an unseen draw's."""
        return tuple(k for k in (self.key, *(self.others if self.restore else ())) if k is not None)

    def sources(self) -> list[int]:
        """The data sets the draws rotate over (-1 alone: the cell's own data, fresh objects only)."""
        return list(range(len(self.data))) if self.key is not None else [-1]

    def draw(self) -> Draw:
        source, data, control, made = -1, {}, False, self.ahead
        if self.key is not None or self.others:
            control = self._control()
            source, data = self._next(control)
            with torch.no_grad():
                for k, t in data.items():
                    self.store[k].detach().copy_(t)
        self.calls += 1
        others = tuple(k for k in data if k != self.key) if source >= SOURCES else ()
        stirred = set(data) - {self.key} or (self.ahead is not None and self.ahead is not made)
        self.last = Draw({k: fresh_view(v) for k, v in self.store.items()}, source, self.key, others, control,
                         bool(stirred))
        return self.last

    def _control(self) -> bool:
        """Whether this draw is the pass's next control: a timed call's, neither an unseen draw nor the one after
        it (where an untimed call moved a control's place there, the control waits for the next)."""
        if self.control_at and self.calls >= self.control_at[0] and not (self.held or self.restore
                                                                          or self._unseen_due()):
            del self.control_at[0]
            return True
        return False

    def _unseen_due(self) -> bool:
        """Whether this draw is the pass's next unseen one (its data made ahead; a timed call's)."""
        return self.ahead is not None and not self.held and self.calls >= self.unseen_at[0]

    def _next(self, control: bool = False) -> tuple[int, Inputs]:
        """The next draw's data: the unseen set made ahead where this draw is the pass's next unseen one, else
        the next of the rotation for the key, and the others' own data back after an unseen draw or copied in
        again for a control (the unseen set for later made first, outside any call's clock)."""
        if self._unseen_due():
            found, self.ahead, self.restore = self.ahead, None, True
            del self.unseen_at[0]
            return found
        if self.unseen_at and self.ahead is None:
            self.ahead = self._unseen_data()
        back, self.restore = (self._own() if self.restore or control else {}), False
        if self.key is None:
            return -1, back
        source = self.calls % len(self.data)
        return source, {self.key: self.data[source], **back}

"""The timed calls' own outputs, checked: the numbers recorded are those of calls that did the work.

The gate (correctness.py) checks an implementation on inputs of its own; nothing there stops a call that
is right when checked and skips its work when timed. So the outputs of the timed calls are looked at too,
outside the clock, each right after its call (the clock keeps the result for this: clocks.py):

- every output must be a plain, materialised tensor (not a subclass that computes when read, nor a meta
  or fake tensor), and no thread may be left running that the pass did not start with;
- spot checks: each of the first SPOT_FIRST calls, then one call in SPOT_EVERY at random, has SPOT_POINTS
  elements of each output, at random positions, compared with the reference's on the same data (a stale
  or skipped call is caught at once, cheaply: the reference runs once per data set and cell);
- KEPT calls are picked at random among all the pass's calls (reservoir sampling, from the OS's random
  source, decided after each call returned), their outputs copied as they were on return (into host
  memory) and kept;
- calls on data never drawn before (fresh.py, unseen.py) are neither spot-checked nor kept (no reference ran
  on their data): their times are set against their neighbours' after sampling, which a result cache fails;
- after sampling, each kept output must still equal its copy (an output filled in later, e.g. by a
  thread, has changed), hold no NaN or infinity, and match the operator's reference implementation run on
  the same data (fresh.py says which data set each call had), at the cell's size, within
  `timed_tolerance`: all its elements up to CHECKED_ELEMENTS, else that many at random positions, against
  the reference's largest magnitude over all of them. The reference runs once per data set and point (its
  implementations share it: point_data.py), on the cell's device in float32 (float64 for a float64 cell),
  and is kept on the CPU in that dtype: at the timed size a float64 run, or a float64 copy, of a large
  cell cost seconds and gigabytes, and the bar is for work skipped, not precision.

A failure makes the pass `incorrect`, with what was found. The reference implementation's own cells are
not checked against themselves. A reference that cannot run at the timed size (out of memory, most often: a
plain composition of torch ops can need several times the memory of the kernel it checks, and it runs
while the call's outputs are held) is no fault of the implementation: the outputs are then not compared
with it, the pass keeps its other checks, and its row says so (`unchecked`).
"""

from __future__ import annotations

import os
import random
import threading
from typing import Any, Callable, Sequence

import torch

from benchctl.measure import correctness, fresh, unseen
from benchctl.measure.references import cannot_compare, on_cpu, reference_run, reference_runs
from benchctl.measure.clocks import NOTHING
from benchctl.measure.kept import Kept
from benchctl.ops.cells import Resolved
from benchctl.vocab import Pass

KEPT = 2  # timed calls per pass whose outputs are checked against the reference
STRICT_KEPT = 16  # in a re-check of a time too good to keep unexamined (sweep/recheck.py)
SPOT_FIRST, SPOT_EVERY, SPOT_POINTS = 32, 64, 4
CHECKED_ELEMENTS = 1 << 16  # of a kept call's output, else all (grid_sample's 201M-element gradient took 1 s)
# The bar at the timed size, relative to the reference's largest magnitude: this check is for work skipped
# (an output for other data, stale, unfilled or zero is off by the order of the values themselves), not
# for precision, which the gate judges at the check size. Rounding grows with the size: honest float32
# cells at timed sizes read up to 2.3e-4 against float64 (grid_sample at 4096), above the gate's 2e-4.
TIMED_FACTOR, TIMED_MIN = 10.0, 1e-2
# A pass that ran out of memory while the kept outputs were held (two calls' outputs beside the call) is timed
# again holding none (execute.py): its copies are still compared with the reference, and its row says this.
NOT_HELD = ("timed again without holding its kept outputs (out of memory with them held): an output changed "
            "after its call returned would not be seen")
PLAIN = (torch.Tensor, torch.nn.Parameter)


def flat(result: Any) -> list[torch.Tensor | None]:
    """The tensors of a call's result in order (tuples opened; None kept where a gradient is None)."""
    if isinstance(result, (tuple, list)):
        return [t for part in result for t in flat(part)]
    return [result] if result is None or isinstance(result, torch.Tensor) else [None]


def not_plain(tensors: list[torch.Tensor | None]) -> str:
    for t in tensors:
        if t is not None and (type(t) not in PLAIN or t.is_meta or t.layout != torch.strided):
            return f"a timed call returned a {type(t).__name__} ({t.layout}), not a plain materialised tensor"
    return ""


class Audit:
    """Watches one pass's calls (`drawn` before each, `finish` after the last) and judges them (`verdict`)."""

    def __init__(self, resolved: Resolved, pass_name: str, take: Callable[[], Any], accumulate: bool = False,
                 hold: bool = True, alone: Callable[[], None] | None = None):
        self.resolved, self.pass_name, self.take = resolved, pass_name, take
        self.alone = alone  # the watch's: the next call is judged in a window of its own (interference.py)
        self.hold = hold  # the kept calls' outputs themselves, to see them change later; else their copies only
        self.references: dict[int, correctness.Run] = {}  # by data set: the pool's, shared by the point (prime)
        self.accumulate = accumulate  # gradients go to `.grad` (passes.py): only the outputs come back
        self.random = random.Random(os.urandom(16))  # seeded by the OS: the calls cannot know its choices
        self.positions = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little"))  # elements checked
        self.threads = threading.active_count()
        self.calls = 0
        self.kept: list[Kept] = []
        self.unseen: list[bool] = []  # by call: its data was never drawn before
        self.controls: list[bool] = []  # by call: seen data copied in as unseen data is (fresh.Draw.control)
        self.problem = ""
        self.pending: fresh.Draw | None = None
        self.key: str | None = None  # the input the draws refresh (fresh.py)
        self.size = STRICT_KEPT if resolved.cell.strict else KEPT
        self.expected: dict[int, tuple[list[torch.Tensor | None], list[str]]] = {}
        self.scales: dict[int, float] = {}  # a reference tensor's largest magnitude, by id
        self.unchecked = ""  # why the outputs are not compared with the reference's, where it could not run
        self.unjudged = ""  # why the times on unseen data were not judged (unseen.unjudged)
        self.pool: fresh.InputPool | None = None  # its draws' (`prime`): what they could not do, for lack of memory

    def prime(self, pool: fresh.InputPool) -> None:
        """Every data set's reference, before the pass's clock starts. A reference run at the timed size
        costs wall time (seconds for a large cell on a CPU), which the pass's max_time would otherwise
        lose: run from the first spot check, it left hoconv2d's forward passes at B=16 one or two samples."""
        if self._exempt():
            return
        self.key, self.references, self.pool = pool.key, pool.references, pool
        sources = pool.sources()
        missing = [s for s in sources if s not in self.references]
        try:
            self.references.update(zip(missing, map(on_cpu, reference_runs(self.resolved, pool, missing))))
        except Exception as exc:
            self.unchecked = cannot_compare(exc)
            return
        names = [k for k, t in pool.store.items() if isinstance(t, torch.Tensor) and t.requires_grad]
        for source in sources:
            self._expected(source, names)

    def drawn(self, draw: fresh.Draw) -> None:
        """Before each call: the previous call's result is looked at, then this call's draw noted."""
        self._observe()
        self.pending, self.key = draw, draw.key
        if (draw.unseen or draw.control) and self.alone is not None:  # its call's flag is then its own (unseen.py)
            self.alone()

    def finish(self) -> None:
        self._observe()

    def _observe(self) -> None:
        if self.pending is None:
            return
        draw, self.pending = self.pending, None
        result = self.take()
        if result is NOTHING:  # the draw's call was not timed (a paired warm-up runs some untimed)
            return
        tensors = flat(result)
        self.calls += 1
        self.unseen.append(draw.unseen)
        self.controls.append(draw.control)
        self._let_go_of_reused(tensors)
        self.problem = self.problem or not_plain(tensors) or self._threads() or self._spot(draw, tensors)
        slot = len(self.kept) if len(self.kept) < self.size else self.random.randrange(self.calls)
        if slot < self.size and not self.problem and not draw.unseen:
            self.kept[slot:slot + 1] = [Kept.of(self.calls, draw.source, tensors, _grad_names(draw), self.hold)]

    def _let_go_of_reused(self, tensors: list[torch.Tensor | None]) -> None:
        """A held output whose storage a later call returned again is a static buffer the implementation
        overwrites each call (a CUDA graph's): held, it cannot be free, so the reuse is deliberate. It is
        let go of and not judged for changing after its call (each call's own output was spot-checked)."""
        ptrs = {t.data_ptr() for t in tensors if t is not None}
        for kept in self.kept:
            if kept.ptrs & ptrs:
                kept.let_go()

    def _spot(self, draw: fresh.Draw, tensors: list[torch.Tensor | None]) -> str:
        """A few elements of this call's outputs against the reference's, on the first calls and then at random."""
        if self._exempt() or draw.unseen or (self.calls > SPOT_FIRST and self.random.randrange(SPOT_EVERY)):
            return ""
        expected, names = self._expected(draw.source, _grad_names(draw))
        if self.unchecked:
            return ""
        if len(expected) != len(tensors[:len(expected)]):
            return f"timed call {self.calls}: returned {len(tensors)} tensors, the reference {len(expected)}"
        tol = timed_tolerance(self.resolved.cell.torch_dtype, self.resolved.cell.device)
        for name, got, ref in zip(names, tensors, expected):
            if ref is not None and (got is None or got.shape != ref.shape or self._off(got, ref, tol)):
                return (f"timed call {self.calls}: {name}, at {SPOT_POINTS} random points, is not the reference's "
                        "on the same inputs (work skipped when timed)")
        return ""

    def _off(self, got: torch.Tensor, ref: torch.Tensor, tol: float) -> bool:
        if not ref.numel():
            return False
        mine, theirs = (t.to("cpu", torch.float64) for t in self._at_random(got, ref, SPOT_POINTS))
        return not bool(((mine - theirs).abs() <= tol * (self._scale(ref) or 1.0)).all())

    def _scale(self, ref: torch.Tensor) -> float:
        """The reference tensor's largest magnitude (what errors are measured against), once per tensor."""
        if id(ref) not in self.scales:
            self.scales[id(ref)] = float(ref.abs().max()) if ref.numel() else 0.0
        return self.scales[id(ref)]

    def _sampled(self, mine: torch.Tensor | None, ref: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor]:
        """`mine` and `ref` whole, or at CHECKED_ELEMENTS random positions when they hold more."""
        if mine is None or ref.numel() <= CHECKED_ELEMENTS or mine.shape != ref.shape:
            return mine, ref
        return self._at_random(mine, ref, CHECKED_ELEMENTS)

    def _at_random(self, mine: torch.Tensor, ref: torch.Tensor, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Both tensors' elements at the same `count` random positions, drawn from the OS-seeded generator."""
        idx = torch.randint(ref.numel(), (count,), generator=self.positions)
        return mine.detach().reshape(-1)[idx.to(mine.device)], ref.reshape(-1)[idx]

    def _exempt(self) -> bool:
        """The reference implementation's own cells are not checked against themselves."""
        return self.resolved.impl.name == self.resolved.op.reference

    def _threads(self) -> str:
        now = threading.active_count()
        return (f"a timed call left a thread running after it returned ({self.threads} threads before the pass, "
                f"{now} after the call): its work would not be timed") if now > self.threads else ""

    def holding(self) -> bool:
        """Whether any call's outputs are held (what a pass out of memory lets go of: execute.py)."""
        return any(t is not None for kept in self.kept for t in kept.held)

    def notes(self) -> str:
        """What the row of a pass judged ok says of what could not be checked, or ''."""
        drawn = self.pool.note if self.pool else ""
        return "; ".join(n for n in (self.unchecked, "" if self.hold else NOT_HELD, drawn, self.unjudged) if n)

    def verdict(self, samples: Sequence[float] = (), aside: Sequence[bool] = (), warm: int = 0,
                cpu: Sequence[float] = ()) -> str:
        """Why the pass's timed outputs, or its times (`samples`, after `warm` warm-up calls; `aside`: those
        set aside as disturbed; `cpu`: their CPU seconds), cannot be trusted, or ''."""
        self.finish()
        found = self.problem or ("" if self._exempt() else self._kept_wrong())
        self.unjudged = unseen.unjudged(self.unseen[warm:], aside, cpu)
        return found or unseen.cached(samples, self.unseen[warm:], aside, cpu, self.controls[warm:])

    def _kept_wrong(self) -> str:
        for kept in self.kept:
            found = kept.changed() or self._wrong(kept)
            if found:
                return f"timed call {kept.call} of {self.calls}: {found}"
        return ""

    def _wrong(self, kept: Kept) -> str:
        expected, names = self._expected(kept.source, kept.names)
        if self.unchecked:
            return kept.non_finite()
        got = kept.copy[:len(expected)] if self.accumulate else kept.copy
        if len(expected) != len(got):
            return f"returned {len(got)} tensors, the reference {len(expected)}"
        cell = self.resolved.cell
        tol = timed_tolerance(cell.torch_dtype, cell.device)
        for name, mine, ref in zip(names, got, expected):
            if ref is None:
                continue
            if mine is not None and mine.is_floating_point() and not bool(torch.isfinite(mine).all()):
                return f"{name}: non-finite values (at the timed size)"
            c = correctness.agree(name, *self._sampled(mine, ref), tol, name.startswith("output"), self._scale(ref),
                                  cell.torch_dtype)
            if not c.passed:
                return f"{name}: {c.reason} against the reference on the same inputs (at the timed size)"
        return ""

    def _expected(self, source: int, grad_names: list[str]) -> tuple[list[torch.Tensor | None], list[str]]:
        """What the pass returns, by the reference on data set `source` (float64, on the CPU), and its names;
        with `accumulate` the outputs only (the gradients went to `.grad`: passes.py). Kept per data set."""
        if source not in self.expected:
            self.expected[source] = self._expected_anew(source, grad_names)
        return self.expected[source]

    def _expected_anew(self, source: int, grad_names: list[str]) -> tuple[list[torch.Tensor | None], list[str]]:
        if self.unchecked:
            return [], []
        if source not in self.references:
            try:
                self.references[source] = on_cpu(reference_run(self.resolved, fresh.Draw({}, source, self.key)))
            except Exception as exc:
                self.unchecked = cannot_compare(exc)
                return [], []
        run = self.references[source]
        outs, grads = list(run.outs), [run.grads.get(n) for n in grad_names]
        out_names, grad_labels = [f"output {i}" for i in range(len(outs))], [f"grad {n}" for n in grad_names]
        by_pass = {Pass.FORWARD: (outs, out_names), Pass.BACKWARD: (grads, grad_labels),
                   Pass.FORWARD_BACKWARD: (outs + grads, out_names + grad_labels)}
        expected, names = by_pass[self.pass_name]
        if self.accumulate:
            keep = [i for i, n in enumerate(names) if n.startswith("output")]
            expected, names = [expected[i] for i in keep], [names[i] for i in keep]
        return expected, names


def timed_tolerance(dtype: torch.dtype, device: str) -> float:
    return max(TIMED_FACTOR * correctness.tolerance(dtype, device), TIMED_MIN)


def _grad_names(draw: fresh.Draw) -> list[str]:
    """The inputs whose gradients a backward returns, in its order (passes.grad_inputs)."""
    return [k for k, t in draw.inputs.items() if isinstance(t, torch.Tensor) and t.requires_grad]

"""Running one cell: availability, the correctness gate, warm-up, then each pass timed -> result rows.

`run_cell` is a pure function of the cell and the settings; it never prints, and the caller owns
progress and storage. Every failure becomes a row with a status and a message. Each pass's row is a
PassResult (result.py) until it leaves here.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from benchctl.errors import error_message
from benchctl.measure import audit, cores, correctness, held, interference, memory, orphans, rates, seal, trust
from benchctl.measure.gate import checked
from benchctl.machine import allocator, gpu_clocks
from benchctl.machine.oom import is_oom
from benchctl.ops.cells import Cell, Resolved
from benchctl.ops.compiling import CompiledFn
from benchctl.measure.prepared import Prepared, prepare
from benchctl.measure.result import PassResult
from benchctl.measure.clocks import Clock, CpuClock, CudaEventClock, Thunk
from benchctl.measure.paired import measure_paired
from benchctl.measure import partner as partners
from benchctl.measure.stats import join_messages
from benchctl.measure.timing import Measurement, Policy, Probe, measure
from benchctl.measure.cuda_graph import CudaGraphClock, repeatable_thunk
from benchctl.measure.passes import NO_BACKWARD
from benchctl.measure.flush import flusher
from benchctl.vocab import Device, Status, TimingMode

@dataclass(frozen=True)
class Settings:
    policy: Policy = Policy()
    check: bool = True
    flush_l2: bool = False
    cuda_graph: bool = False  # GPU: time replays of the call captured in a CUDA graph (cuda_graph.py)
    measure_memory: bool = True
    # Check the timed calls' outputs (audit.py). Off only where nothing timed is a record: maxbatch's probes,
    # whose question is whether one call fits, and whose answer the audit's references and kept copies
    # would make the harness's rather than the implementation's.
    audit: bool = True
    # The machine before and after each pass (trust.probe): its memory bandwidth, compute canary (CPU) and the
    # cores other processes kept busy (load.py)
    probe_bandwidth: bool = True
    tf32: bool | None = None  # GPU float32 in TF32: on, off, or torch's default (None)
    # Measured peaks of this machine ({"cpu": {"gbps": .., "gflops": .., "levels": {..}}, "cuda": {...}}).
    peaks: dict[str, dict[str, Any]] = field(default_factory=dict)


def status_of(exc: BaseException) -> str:
    return Status.OOM if is_oom(exc) else Status.ERROR


def base_result(resolved: Resolved) -> PassResult:
    """What every row of the cell says of it, before a pass is named."""
    cell = resolved.cell
    return PassResult().with_(
        op=cell.op, target=cell.target, impl=cell.impl, device=cell.device, dtype=cell.dtype,
        params=cell.params_json, axis=cell.axis, axis_value=cell.axis_value,
        batch_size=cell.params.get("batch_size"), allocator=allocator.current())


def each_pass(result: PassResult, passes: tuple[str, ...], **columns: Any) -> list[PassResult]:
    """`result` once per pass, with `columns`: a cell's rows that did not get as far as timing."""
    return [result.with_(pass_=p, **columns) for p in passes]


def run_cell(cell: Cell, settings: Settings = Settings(), clock: Clock | None = None,
             start: dict[str, Any] | None = None) -> list[PassResult]:
    """The cell's result of each of its passes, on torch's settings as the worker gave them (held.py; `start`:
    as it began, so that what an operator file's import changed is set back)."""
    correctness.set_tf32(settings.tf32)  # the run's own setting, before the cell's are read
    given = held.Given(start)
    resolved = cell.resolve()
    if not isinstance(resolved.impl.fn, CompiledFn) or resolved.unavailable_reason():
        return given.judged(_run_resolved(resolved, settings, clock))
    finish = resolved.impl.fn.watch()  # what torch.compile compiled for the cell (ops/compile_watch.py)
    results = _run_resolved(resolved, settings, clock)
    extra = finish()
    return given.judged([r.with_(**extra) for r in results])


def _run_resolved(resolved: Resolved, settings: Settings, clock: Clock | None) -> list[PassResult]:
    cell = resolved.cell
    timing = _timing(clock, cell.device, settings)
    # a row says how the run times it, timed or not: a graph run's (or a flushed one's) tables and charts hold
    # its failures beside its times
    base = base_result(resolved).with_(**timing)
    reason = resolved.unavailable_reason()
    if reason:
        return each_pass(base, cell.passes, status=Status.UNAVAILABLE, message=reason)
    gc.collect()  # the whole heap, once per cell; each pass collects only what is new (timing.measure)
    try:
        prepared = prepare(resolved)  # first: its first call is the compile time a user pays once
        gate = checked(resolved) if settings.check and not cell.checked else {}
        if gate.get("correct") is False:
            return each_pass(base.with_(**gate), cell.passes, status=Status.INCORRECT)
        changed = seal.broken()
        if changed:
            return each_pass(base, cell.passes, status=Status.ERROR, message=changed)
    except Exception as exc:
        return each_pass(base, cell.passes, status=status_of(exc), message=error_message(exc))
    partner, unpaired = partners.of(resolved)
    kids = orphans.children()  # after every first call: a compiler's worker pool started there is no orphan
    watch = clock is None  # a clock given (a test's fake) is not watched
    clock = clock or make_clock(cell.device, settings.flush_l2, settings.cuda_graph)
    head = base.with_(**gate, **timing)
    results = [_timed(head, prepared, p, settings, clock, partner, watch) for p in cell.passes]
    left = orphans.left_running(kids)
    if left:
        results = [r.with_(status=Status.ERROR, message=left) for r in results]
    return [r.with_(message=join_messages(r.message, unpaired)) for r in results] if unpaired else results


def _timed(head: PassResult, prepared: Prepared, pass_name: str, settings: Settings, clock: Clock,
           partner: Prepared | None, watch: bool) -> PassResult:
    """The pass's row: unavailable where the cell has no such pass (passes.NO_BACKWARD), timed alone where its
    partner has none."""
    if not prepared.has(pass_name):
        return head.with_(pass_=pass_name, status=Status.UNAVAILABLE, message=NO_BACKWARD)
    if partner is None or partner.has(pass_name):
        return _time_pass(head, prepared, pass_name, settings, clock, partner, watch)
    row = _time_pass(head, prepared, pass_name, settings, clock, None, watch)
    return row.with_(message=join_messages(row.message, f"timed alone: {partner.resolved.cell.impl} has no backward"))


def _timing(clock: Clock | None, device: str, settings: Settings) -> dict[str, Any]:
    """How the cell's calls are timed (by the clock given, else by the one make_clock will make), as its rows
    say it: a pass is compared, tabled and charted only with passes timed alike."""
    graph = isinstance(clock, CudaGraphClock) if clock is not None else settings.cuda_graph and device == Device.CUDA
    mode = TimingMode.CUDA_GRAPH if graph else TimingMode.EAGER
    return {"timing_mode": mode, "flush_l2": settings.flush_l2}


def _time_pass(head: PassResult, prepared: Prepared, pass_name: str, settings: Settings, clock: Clock,
               partner: Prepared | None = None, watch: bool = False) -> PassResult:
    """One pass timed, its result `head` (the cell's) and what the pass found; with `watch`, on a clock
    watched for disturbance (interference.py): run-queue delay on a CPU, the SM clock on a GPU."""
    clocks = gpu_clocks.guard(prepared.resolved.cell.device)
    watched = _watched(clock, clocks) if watch else None
    marks = seal.clock_marks(watched or clock)
    try:
        result = _time_watched(head, prepared, pass_name, settings, watched or clock, partner, watch, clocks)
    finally:
        if watched is not None:
            watched.close()
    changed = seal.broken() or seal.broken(marks, seal.clock_marks(watched or clock))
    return result.with_(status=Status.ERROR, message=changed) if changed else result


def _watched(clock: Clock, clocks: gpu_clocks.ClockGuard | None) -> interference.WatchedClock | None:
    """`clock` watched by the run queue on a CPU, by the SM clock the GPU's guard reads on a GPU."""
    if clocks is None:
        return interference.watched(clock)
    return interference.watched_gpu(clock, clocks.sm_mhz, clocks.max_mhz)


def _time_watched(head: PassResult, prepared: Prepared, pass_name: str, settings: Settings, clock: Clock,
                  partner: Prepared | None, watch: bool, clocks: gpu_clocks.ClockGuard | None) -> PassResult:
    """The pass timed. Where it ran out of memory while its audit held kept outputs, it is timed again holding
    none: a batch that fits the implementation is not lost to the harness's checks (maxbatch probes without)."""
    timed = _attempt(head, prepared, pass_name, settings, clock, partner, watch, clocks, hold=True)
    if timed is not None:
        return timed
    gc.collect()  # the first attempt's held outputs, referenced no more
    if prepared.resolved.cell.device == Device.CUDA:
        torch.cuda.empty_cache()
    again = _attempt(head, prepared, pass_name, settings, clock, partner, watch, clocks, hold=False)
    assert again is not None  # nothing held: out of memory is its row
    return again


def _attempt(head: PassResult, prepared: Prepared, pass_name: str, settings: Settings, clock: Clock,
             partner: Prepared | None, watch: bool, clocks: gpu_clocks.ClockGuard | None,
             hold: bool) -> PassResult | None:
    """The pass's row; None where it ran out of memory while the audit held kept outputs (`hold`)."""
    row = head.with_(pass_=pass_name, compile_s=prepared.compile_s, best_config=prepared.best_config)
    recorded = _recorded(clock)
    probe = functools.partial(trust.probe, prepared.resolved.cell.device) if settings.probe_bandwidth else None
    audited = None
    try:
        audited = _audit(prepared, pass_name, clock, hold) if settings.audit else None
        setup = _setup(prepared, pass_name, clock, audited)
        if audited and prepared.pool:
            audited.prime(prepared.pool)
        bandwidth_before = probe() if probe else None
        tick = prepared.sampling if clocks is None else lambda: (clocks.tick(), prepared.sampling())
        with clocks or contextlib.nullcontext():
            m, other = _sampled(setup, clock, partner, pass_name, settings, tick, watch, clocks, prepared,
                                prepared.probing if audited else None)
        paired = partners.columns(m, other, partner.resolved.cell.impl) if partner else {}
        probes, calls = (bandwidth_before, probe()) if probe else None, _calls(clock, m, recorded)
        cpu = [cores.call_cpu(u) for u in calls.get("usage", ())]
        wrong = (prepared.written() or audited.verdict(m.samples, m.disturbed, len(m.warmup_s), cpu)) if audited else ""
        mem = memory.footprint(prepared.untimed(setup), prepared.resolved.cell.device) if settings.measure_memory \
            else memory.Footprint(None)
    except Exception as exc:
        if status_of(exc) == Status.OOM and audited is not None and audited.holding():
            return None
        return row.with_(status=status_of(exc), message=error_message(exc))
    if wrong:
        return row.with_(status=Status.INCORRECT, message=wrong)
    notes = join_messages(audited.notes() if audited else "", memory.kept(mem.kept_bytes))
    if notes:
        paired = {**paired, "message": join_messages(paired.get("message", row.message), notes)}
    row = row.with_(status=Status.OK, samples_s=list(m.samples), noisy=m.noisy, stop=m.stop,
                    peak_mem_bytes=mem.peak_bytes, wall_s=m.wall_s, threads=torch.get_num_threads(), **m.stats,
                    **paired)
    return _judged(row.with_(**clocks.readings) if clocks else row, prepared, pass_name, settings, m,
                   trust.Around(probes=probes, cpu_peaks=settings.peaks.get(Device.CPU, {}), **calls))


def _judged(row: PassResult, prepared: Prepared, pass_name: str, settings: Settings, m: Measurement,
            around: trust.Around) -> PassResult:
    """An ok row with its rates and floors, and what the trust checks make of its time (trust.py)."""
    found, floor = rates.rates(prepared.resolved, prepared.setup(pass_name), pass_name, m.median,
                               settings.peaks.get(prepared.resolved.cell.device, {}), settings.flush_l2)
    row = row.with_(**found)
    return row.with_(**trust.judged(row, m, around, floor))


def _recorded(clock: Clock) -> tuple[int, int]:
    """How many calls' OS work and host times the clock has recorded so far."""
    return len(getattr(clock, "usage_per_call", None) or ()), len(getattr(clock, "host_per_call", None) or ())


def _calls(clock: Clock, m: Measurement, recorded: tuple[int, int]) -> dict[str, Any]:
    """What the clock recorded of the pass's sampled calls (after `recorded`, and its warm-up's): their OS
    work on a CPU, their host time and work left on other streams on a GPU."""
    usage, host = getattr(clock, "usage_per_call", None), getattr(clock, "host_per_call", None)
    out: dict[str, Any] = {}
    if usage is not None:
        out["usage"] = usage[recorded[0] + len(m.warmup_s):]
    if host:
        start = recorded[1] + len(m.warmup_s)
        out.update(host=host[start:], stray=clock.stray_per_call[start:])
    return out


def _sampled(setup: Callable[[], Thunk], clock: Clock, partner: Prepared | None, pass_name: str, settings: Settings,
             tick: Callable[[], None], watch: bool, clocks: gpu_clocks.ClockGuard | None,
             prepared: Prepared, probe: Probe | None) -> tuple[Measurement, Measurement | None]:
    """The pass timed alone, or sample by sample in alternation with the partner's (on a clock of its own, so
    the OS work each clock records stays its own call's), the audit's calls (`probe`: only an audited pass's
    draws are fresh each call; a CUDA graph's replays draw none) out of its statistics; the partner's
    measurement None where timed alone."""
    if partner is None:
        return measure(setup, clock, settings.policy, between=tick, probe=probe), None
    partner_clock = make_clock(partner.resolved.cell.device, settings.flush_l2, settings.cuda_graph)
    watched = _watched(partner_clock, clocks) if watch else None
    try:
        return measure_paired(setup, _setup(partner, pass_name, partner_clock), clock, watched or partner_clock,
                              settings.policy, between=tick, primer=prepared.untimed(setup), probe=probe)
    finally:
        if watched is not None:
            watched.close()


def make_clock(device: str, flush_l2: bool = False, cuda_graph: bool = False) -> Clock:
    """The clock of `device`'s calls; with `flush_l2`, one that leaves the caches cold before each (flush.py)."""
    before = flusher(device) if flush_l2 else None
    if device != Device.CUDA:
        return CpuClock(before=before)
    events = CudaEventClock(before=before)
    return CudaGraphClock(events) if cuda_graph else events


def _audit(prepared: Prepared, pass_name: str, clock: Clock, hold: bool) -> audit.Audit | None:
    """The check of the pass's timed outputs (audit.py), where the clock hands the calls' results back."""
    take = getattr(interference.unwrapped(clock), "take", None)
    alone = getattr(clock, "alone", None)  # a watched clock's (interference.py)
    return audit.Audit(prepared.resolved, pass_name, take, prepared.accumulate, hold, alone) if take else None


def _setup(prepared: Prepared, pass_name: str, clock: Clock, audited: audit.Audit | None = None) -> Callable[[], Thunk]:
    """Each repetition's thunk, on fresh inputs told to the audit; under a CUDA-graph clock (watched or not)
    one thunk for all, so one graph is replayed."""
    if not isinstance(interference.unwrapped(clock), CudaGraphClock):
        return prepared.setup(pass_name, audited.drawn if audited else None)
    thunk = repeatable_thunk(prepared.call, prepared.inputs, prepared.grads, pass_name, prepared.accumulate)
    return lambda: thunk



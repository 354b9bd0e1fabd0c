"""`benchctl run IMPLS DEVICES`: time forward, backward and forward+backward across the sweep -> parquet."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from benchctl.cli.options import (MOST_THREADS, Finite, Seconds, check_writable, load_operators, op_option,
                                   ops_dir_option, parse_params, tf32_option)
from benchctl.vocab import (ALLOCATORS, EXECUTORS, PAIR_NONE, PAIR_REFERENCE, PAIR_REFERENCE_ON_CPU, Allocator,
                            Device, Executor)


def _ints(text: str | None) -> tuple[int, ...]:
    from benchctl.sweep.words import split

    if text is None:
        return ()
    try:
        return tuple(int(v) for v in split(text, "batch size"))
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {text!r}") from None


@click.command("run")
@click.argument("impls")
@click.argument("devices")
@op_option
@ops_dir_option
@click.option("--config", type=click.Path(dir_okay=False), help="Sweep from configs/X.toml.")
@click.option("--target", "targets", multiple=True,
              help="Only this target (repeatable), e.g. filter; operators without it are left out.")
@click.option("--batch-sizes", help="Comma list, e.g. 1,2,4 (operators with a batch_size param).")
@click.option("--param", "params", multiple=True,
              help="KEY=VALUE (or KEY=1,2,4 to sweep it) for every operator with that param.")
@click.option("--dtype", "dtypes", multiple=True, help="float32 (default), float64, float16, bfloat16.")
@click.option("--passes", help="Comma list of forward, backward, forward_backward.")
@click.option("--min-time", type=Seconds(min=0), help="Seconds of samples per pass, at least.")
@click.option("--max-time", type=Seconds(min=0), help="Seconds per pass, at most.")
@click.option("--warmup-time", type=Seconds(min=0), help="Untimed calls before sampling, in seconds, "
              "at most (default 0.5; a cheap call stops after 10 calls and 0.1 s): first calls can be far "
              "slower, e.g. while a VM backs new memory.")
@click.option("--ci-target", type=Finite(min=0, max=1), help="Sample until the median's 95% confidence "
              "interval is within +-this fraction of it (default 0.01), between --min-time and --max-time; "
              "0: stop at --min-time.")
@click.option("--remeasure", type=click.IntRange(min=0),
              help="Times a cell whose median did not settle is measured again at the end of the sweep "
                   "(default 1; 0 with --quick, which flags it instead: a fast look).")
@click.option("--settle", type=Seconds(min=0), default=60.0, show_default=True, envvar="BENCHCTL_SETTLE",
              help="Seconds in all the sweep may wait, before its first cell and before re-measuring a cell the "
                   "machine's canary says ran on a slow machine, for the machine to be quiet and at its calibrated "
                   "speed (0: no wait; also BENCHCTL_SETTLE).")
@click.option("--recheck-above", type=Finite(min=1),
              help="A pass this many times faster than the reference implementation is measured once more, "
                   "strictly (fresh inputs, more timed outputs checked), before it is kept (default 50).")
@click.option("--rounds", type=click.IntRange(min=1), default=1, show_default=True,
              help="Interleaved rounds: every cell measured N times across the sweep, 1/N of the time each, "
                   "samples pooled. Steadier ratios on a busy machine.")
@click.option("--processes", type=click.IntRange(min=1),
              help="Worker processes each cell is measured in, kept for the whole sweep and taking turns "
                   "(default 3; 1 with --quick). Verdicts hold a change against the spread between them.")
@click.option("--pair-with", metavar="IMPL", default=PAIR_REFERENCE_ON_CPU, show_default=True,
              help="Time each other implementation sample by sample in alternation with IMPL at the same point; "
              "its speedup over IMPL is the median of the pairs' ratios, which a machine changing speed moves far "
              f"less. IMPL must be among IMPLS (its own cells run alone); '{PAIR_REFERENCE}': each operator's "
              f"reference implementation, which its speedups are over; '{PAIR_REFERENCE_ON_CPU}': the same on CPU "
              f"cells, where the reference runs too; '{PAIR_NONE}': every cell timed alone.")
@click.option("--threads", type=click.IntRange(min=1, max=MOST_THREADS),
              help="torch intra-op threads (default: torch's).")
@click.option("--out", default="results", show_default=True, type=click.Path(file_okay=False))
@click.option("--quick", is_flag=True, help="Each operator's small quick sweep.")
@click.option("--timeout", type=Seconds(min=0, min_open=True), default=900.0, show_default=True,
              help="Seconds per cell before it is killed.")
@click.option("--flush-caches", "--flush-l2", "flush_l2", is_flag=True,
              help="Start each timed call on cold caches: a buffer twice the last cache level (GPU: L2) is written "
                   "(GPU) or read (CPU) before it, untimed; rows record it.")
@click.option("--cuda-graph", is_flag=True, help="GPU: time replays of each call captured in a CUDA graph, "
              "launch overhead left out; rows record the timing mode.")
@tf32_option
@click.option("--fresh-worker", is_flag=True,
              help="A new worker process for every cell: no timing depends on the cells before it.")
@click.option("--in-process", is_flag=True, help="No worker process (no crash isolation; for debugging).")
@click.option("--allocator", type=click.Choice(ALLOCATORS), default=Allocator.SYSTEM.value,
              show_default=True, help="The worker's memory allocator (LD_PRELOAD); recorded in every row.")
@click.option("--executor", type=click.Choice(EXECUTORS), default=Executor.LOCAL.value, show_default=True,
              help="local: one cell at a time here; pool: a worker per local GPU (CPU cells alone); "
                   "ray: series on the nodes of a Ray cluster.")
@click.option("--address", help="ray: an existing cluster (auto, or HOST:PORT); default: start one here.")
@click.option("--gpu-kind", "gpu_kinds", help="ray: comma list of accelerator types, e.g. H100,A100; GPU "
              "series run once on each.")
def command(impls, devices, ops, ops_dirs, config, targets, batch_sizes, params, dtypes, passes, min_time,
            max_time, warmup_time, ci_target, remeasure, settle, recheck_above, rounds, processes, pair_with, threads, out, quick, timeout,
            flush_l2, cuda_graph, tf32, fresh_worker, in_process, allocator, executor, address, gpu_kinds) -> None:
    """Time IMPLS (py, cpp, cuda, a variant, a comma list, all) on DEVICES (cpu, gpu, all)."""
    from benchctl.sweep import words

    words.check(devices=devices, passes=passes, dtypes=dtypes)  # usage errors before torch is imported
    sizes, swept = _ints(batch_sizes), parse_params(params)
    kinds = tuple(words.split(gpu_kinds, "GPU kind")) if gpu_kinds is not None else ()
    from benchctl.sweep.request import SweepRequest, expand
    from benchctl.sweep.config import SweepConfig, load_config
    from benchctl.sweep.plan import Plan

    cfg = load_config(config) if config else SweepConfig()
    start = _ready_here(threads, tf32) if in_process else None
    load_operators(ops_dirs, (*ops, *cfg.params, *cfg.targets) if ops else ())  # those the config names too
    request = SweepRequest(
        impls=impls, devices=devices, ops=tuple(ops), dtypes=tuple(dtypes),
        passes=tuple(words.split(passes, "pass")) if passes is not None else (), batch_sizes=sizes,
        params=swept, targets=tuple(targets), quick=quick, config=cfg, pair_with=pair_with,
    )
    cells = expand(request)
    check_writable(Path(out))
    plan = Plan(cells, cfg, min_time=min_time, max_time=max_time, warmup_time=warmup_time, ci_target=ci_target,
                remeasure=_remeasure(remeasure, quick), settle=settle, threads=threads, flush_l2=flush_l2, cuda_graph=cuda_graph,
                tf32=tf32, timeout=timeout, in_process=in_process, start=start, ops_dirs=ops_dirs,
                rounds=rounds, processes=_processes(processes, quick, in_process, executor, fresh_worker),
                fresh_worker=fresh_worker, allocator=allocator, executor=executor, address=address,
                **({"recheck_above": recheck_above} if recheck_above else {}), gpu_kinds=kinds)
    plan.check()
    _check_allocator(allocator, in_process, executor)
    _execute(plan, Path(out))


def _ready_here(threads: int | None, tf32: bool | None) -> dict:
    """In process: this process readied as a worker readies itself, before the operator files are imported."""
    from benchctl.measure import held

    return held.ready(threads, tf32)


def _processes(asked: int | None, quick: bool, in_process: bool, executor: str, fresh_worker: bool) -> int:
    """Three worker processes unless asked otherwise: two runs of the same code disagreed by up to 1.67x
    while each one's samples agreed to +-1% (docs/measuring.md, "Processes"). One for a quick look, and
    where the sweep cannot keep several workers (in process, a fan-out executor, a fresh worker a cell)."""
    from benchctl.sweep.plan import DEFAULT_PROCESSES

    if asked is not None:
        return asked
    return 1 if quick or in_process or executor != Executor.LOCAL or fresh_worker else DEFAULT_PROCESSES


def _remeasure(asked: int | None, quick: bool) -> int:
    """A quick sweep is a fast look: re-measuring its noisy cells would cost it half its time again
    (benchmarks/README.md, "Convergence")."""
    return asked if asked is not None else (0 if quick else 1)


def _check_allocator(name: str, in_process: bool, executor: str) -> None:
    """An allocator is preloaded into a worker: it cannot change this process, and it must be installed
    here (on a cluster, each node checks its own)."""
    from benchctl.errors import UsageError
    from benchctl.machine import allocator

    if name != Allocator.SYSTEM and in_process:
        raise UsageError(f"--allocator {name} needs a worker process; leave out --in-process")
    if executor != Executor.RAY:
        try:
            allocator.library(name)
        except allocator.AllocatorMissing as exc:
            raise UsageError(str(exc)) from None


def _execute(plan, out: Path) -> None:
    """The preflight, then the session, with progress and the summary around them."""
    from benchctl import console
    from benchctl.measure.matmul_peaks import stale_matmul_peaks
    from benchctl.sweep.preflight import Preflight, busy_cores_now, memory_bandwidth_now, uncalibrated_warnings
    from benchctl.sweep.series import group
    from benchctl.sweep.session import Interrupted, Session
    from benchctl.sweep.time_left import TimeLeft, taken_before
    from benchctl.cli.progress import progress_run

    preflight = Preflight(plan.cells)
    runnable = None  # on a cluster, each node judges availability and builds for itself
    if plan.executor != Executor.RAY:
        runnable = _check_and_build(preflight)
    busy, busy_warning = busy_cores_now(plan.cells, plan.threads)
    peaks = plan.settings().peaks
    cpu_peaks = peaks.get("cpu", {})
    memory, memory_warning = memory_bandwidth_now(plan.cells, cpu_peaks)
    stale = stale_matmul_peaks(cpu_peaks) if any(c.device == Device.CPU for c in plan.cells) else None
    bare = uncalibrated_warnings(plan.cells if runnable is None else list(runnable), peaks)
    for warning in filter(None, (busy_warning, memory_warning, stale, *bare)):
        console.warn(warning)
    fanout = plan.fanout()
    if fanout is not None:
        fanout.start(group(plan.cells, by_point=plan.rounds > 1))  # bad input about the cluster: one line, and no run folder
    # a fan-out delivers a series' cells at once, from many workers: no time left is said
    left = TimeLeft(list(plan.cells) * plan.total_rounds, runnable, taken_before(out)) if fanout is None else TimeLeft([])
    session = Session.open(plan, out, preflight.build_failures, fanout, busy_cores_at_start=busy,
                           mem_gbps_at_start=memory)
    try:
        progress_run(session, left)
    except Interrupted as exc:
        console.error(str(exc))
        sys.exit(130)
    _render_summary(session.writer)


def _check_and_build(preflight) -> set:
    """The cells that can run here, once their extensions are built; the others named, a line a reason."""
    from benchctl import console
    from benchctl.errors import BenchError
    from benchctl.sweep.preflight import unavailable_lines

    runnable, unavailable = preflight.availability()
    for line in unavailable_lines(runnable, unavailable):
        console.warn(line)
    if not runnable:
        raise BenchError(f"nothing can run here: {'; '.join(unavailable)}")
    preflight.build_extensions(lambda msg: console.err.print(msg))
    return set(preflight.availability()[0])


def _render_summary(writer) -> None:
    from benchctl import console
    from benchctl.ops import registry
    from benchctl.results import storage
    from benchctl.analysis.at_speed import with_earlier
    from benchctl.analysis.repeat import earlier_rows
    from benchctl.analysis.run_notes import notes
    from benchctl.analysis.absent import absent
    from benchctl.analysis.summary import legend, summary_tables
    from benchctl.report.fastest import WORDS, answers

    df, earlier = storage.load_run(writer.dir), earlier_rows(writer.dir)
    df = with_earlier(df, earlier)
    refs = {name: op.reference for name, op in registry.operators().items()}
    tables = summary_tables(df, refs)
    for t in tables:
        console.out.print(console.table(t.title, t.columns, t.rows))
    said = [console.headed(f"fastest, {op}/{target}", str(found))
            for (op, target), rows in df.groupby(["op", "target"], sort=False)
            for found in answers(rows, refs.get(str(op), "py"))]
    for line in said + [console.headed("fastest", WORDS)] * bool(said):
        console.out.print(line)
    for line in [*(a.line() for a in absent(df)), legend(tables)]:
        if line:
            console.out.print(line)
    for note in notes(df, [writer.meta], os.cpu_count() or 1, earlier):
        console.out.print(console.headed(note.heading, note.text))
    console.out.print(f"results: {writer.dir}")

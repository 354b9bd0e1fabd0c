"""`benchctl profile OP IMPL DEVICE`: one cell's timing loop under py-spy or torch.profiler."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import click

if TYPE_CHECKING:  # imported inside the functions, so `benchctl --help` does not load torch
    from benchctl.ops.cells import Cell
    from benchctl.profile.profilers import ProfileResult
    from benchctl.profile.stacks import TopFrames

from benchctl.cli.options import Seconds, check_writable, load_operators, parse_params
from benchctl.profile.profilers import RATE_HZ
from benchctl.vocab import DEVICE_ALIASES, DTYPE_NAMES, PASSES, Pass


def build_cell(op_name: str, impl: str, device: str, target: str | None, dtype: str,
               batch_size: int | None, pairs: tuple[str, ...], ops_dirs: tuple[str, ...]) -> Cell:
    """The Cell `benchctl run` would time with the same words (sweep/request.py); usage errors name the
    choices."""
    from benchctl.ops import lookup, modifiers, registry
    from benchctl.sweep import request
    from benchctl.errors import BenchError, UsageError

    load_operators(ops_dirs, [op_name], warn=False)  # an operator file that failed to import says why
    try:
        op = registry.get(op_name)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None  # str() of a KeyError is its message's repr
    impl = modifiers.canonical(impl)
    if not lookup.known(op, impl):
        raise UsageError(f"{op_name} has no implementation {impl!r}; choose from: {', '.join(op.implementations)}")
    targets = [t.name for t in op.targets]
    if target is not None and target not in targets:
        raise UsageError(f"{op_name} has no target {target!r}; choose from: {', '.join(targets)}")
    dev = DEVICE_ALIASES[device.lower()]
    reason = lookup.find(op, impl).unavailable_reason(dev, dtype)
    if reason:
        raise BenchError(f"{op_name} {impl} is unavailable on {dev}: {reason}")
    return request.one_cell(request.SweepRequest(
        impls=impl, devices=dev, ops=(op_name,), targets=(target or targets[0],), dtypes=(dtype,),
        batch_sizes=() if batch_size is None else (batch_size,),
        params=parse_params(pairs, known=op.params, sweep=False)))


def _reps(n: int) -> str:
    return f"{n} repetition" + ("" if n == 1 else "s")


def _share(pct: float, count: int, timed: int) -> str:
    """A row's share of the timed samples with its 95% interval, in percent: `31.2 [27, 36]`."""
    from benchctl.profile.stacks import share_interval

    low, high = share_interval(count, timed)
    return f"{pct:.1f} [{low:.0f}, {high:.0f}]"


def _half_known(n: int) -> str:
    """What a 50% share of `n` samples is known to: "41-59%"."""
    from benchctl.profile.stacks import share_interval

    return "{0:.0f}-{1:.0f}%".format(*share_interval(n // 2, n)) if n else "nothing"


def few_samples_warning(timed: int) -> str:
    """Where the tables and the flame graph hold under FEW_SAMPLES timed samples, what a 50% share, the least
    certain, is known to in them, and what to do; '' otherwise."""
    from benchctl.profile.stacks import FEW_SAMPLES

    if timed >= FEW_SAMPLES:
        return ""
    return (f"only {timed} timed samples: a 50% share is known to {_half_known(timed)} in the tables and the "
            "flame graph; profile for longer (--duration) for finer shares")


def render_frames(top: TopFrames, reps: int, rows: int) -> None:

    from benchctl import console
    from benchctl.profile.stacks import short_name

    s = top.samples
    timed = s["timed"]
    console.out.print(f"{timed} samples in the timed thunk ({_reps(reps)}); not counted: "
                      f"{s['setup']} in the untimed setup, {s['startup']} in start-up", highlight=False)
    few = few_samples_warning(timed)
    if few:
        console.warn(few)
    if top.path:  # the frames every sample passes through: context, not a place where time goes
        path = " > ".join(short_name(p.function, 40) for p in top.path)
        console.out.print(f"call path of the timed samples: {path}", highlight=False, soft_wrap=True)
    console.out.print(console.table(
        "ATen operators, % of timed samples [95% interval]", ["self %", "total %", "operator"],
        [(_share(r.self_pct, r.self_samples, timed), _share(r.total_pct, r.total_samples, timed), r.op)
         for r in top.by_op[:rows]]))
    for title, stats in (("self", top.by_self), ("total", top.by_total)):
        console.out.print(console.table(
            f"Top frames by {title} time, % of timed samples [95% interval]", ["%", "samples", "frame", "where"],
            [(_share(r.pct, r.samples, timed), r.samples, short_name(r.function), r.location)
             for r in stats[:rows]]))
    waiting = openmp_line(top)
    if waiting:
        console.warn(waiting)


def openmp_line(top: TopFrames) -> str | None:
    """Where OPENMP_WAIT or more of the timed samples sat in OpenMP's runtime: the sampled thread was waiting for
    torch's other threads, whose work py-spy does not see (grid_sample's py-imagegrad backward on 2 threads: 47% in
    libgomp, its kernel 39%; on one, the kernel 82%)."""
    from benchctl.profile.stacks import OPENMP_WAIT, in_openmp

    samples, where = in_openmp(top)
    timed = top.samples["timed"]
    if not timed or samples < OPENMP_WAIT * timed:
        return None
    return (f"{100.0 * samples / timed:.0f}% of the timed samples were in OpenMP's runtime ({where}): there the "
            "sampled thread waits at the end of each parallel region for torch's other intra-op threads, which "
            "py-spy does not sample (it reads only threads that run Python), so the shares above are of the "
            "sampled thread's part of the work; OMP_NUM_THREADS=1 puts all of it on that thread, and "
            "`--profiler torch` times each operator whole")


def render_ops(ops: Sequence[dict[str, Any]], reps: int, rows: int) -> None:
    """The torch profile's top operators; on a GPU, its kernels (and copies) by time first, then the operators by
    the time of the kernels they launched, each with its share of the kernels' time."""
    kernels = [r for r in ops if r.get("device")]
    if not kernels:
        _ops_table(f"Top operators by self time ({_reps(reps)})", ops, rows)
        return
    _ops_table(f"GPU kernels and copies by time ({_reps(reps)}), % of their time", kernels, rows)
    _ops_table("Operators by the GPU time of the kernels they launched, % of the kernels' time",
               [r for r in ops if not r.get("device")], rows)


def _ops_table(title: str, ops: Sequence[dict[str, Any]], rows: int) -> None:
    from benchctl import console
    from benchctl.profile.stacks import short_name

    columns = [("%", lambda r: f"{r['pct']:.1f}"), ("calls", lambda r: r["calls"]),
               ("self CPU ms", lambda r: f"{r['self_cpu_us'] / 1e3:.2f}"),
               ("self device ms", lambda r: f"{r['self_device_us'] / 1e3:.2f}"),
               ("self CPU MB", lambda r: f"{r['self_cpu_mem_bytes'] / 2**20:.1f}"),
               ("self device MB", lambda r: f"{r['self_device_mem_bytes'] / 2**20:.1f}")]
    # Columns that are zero everywhere (device time on a CPU run, CPU time of kernels, memory when not asked) are
    # left out.
    key = {"self CPU ms": "self_cpu_us", "self device ms": "self_device_us", "self CPU MB": "self_cpu_mem_bytes",
           "self device MB": "self_device_mem_bytes"}
    shown = [(h, f) for h, f in columns if h not in key or any(r[key[h]] for r in ops)]
    console.out.print(console.table(title, [h for h, _ in shown] + ["name"],
                                    [[f(r) for _, f in shown] + [short_name(r["name"])] for r in ops[:rows]]))


def render_slowdown(result: ProfileResult, rate_hz: int = RATE_HZ) -> None:
    """What the profiler cost the loop, split into its thread's own work and its time off the CPU, and a
    warning when that was enough to bend the shares."""
    from benchctl import console

    slowdown, alone = result.slowdown, result.unprofiled_s
    if slowdown is None or alone is None:
        return
    split = ("" if result.ran is None or result.off_cpu is None else
             f": its thread ran {result.ran:.2f}x as long, and was off the CPU {result.off_cpu:.0%} of the time"
             + ("" if result.waiting is None else f" ({min(result.waiting, result.off_cpu):.0%} waiting for a core)"))
    console.out.print(f"a repetition took {result.timed_s / result.reps * 1e3:.4g} ms under {result.profiler}, "
                      f"{slowdown:.1f}x the {alone * 1e3:.4g} ms it took alone{split}", highlight=False)
    if result.slowed:
        console.warn(_slowed_warning(result, rate_hz))


def render_shared(result: ProfileResult) -> None:
    """A warning when other work kept a core busy while the loop was profiled (as `run` warns)."""
    from benchctl import console

    if result.shared:
        console.warn(f"about {result.other_cores:.1f} of {os.cpu_count()} cores were busy with other work while the "
                     "loop was profiled: its threads waited for them, so these are the shares of a loop on a shared "
                     "machine; profile again when it is quiet")


def _slowed_warning(result: ProfileResult, rate_hz: int) -> str:
    """Why the shares of a slowed profile may be bent, from what was measured, and what to do."""
    from benchctl.profile.profilers import SLOWED
    from benchctl.profile.stacks import GENERATED

    why = []
    if result.off_cpu is not None and result.off_cpu >= 1 - 1 / SLOWED:
        held = "" if result.waiting is None else f", {max(0.0, result.off_cpu - result.waiting):.0%} held stopped"
        why.append(f"the loop was off the CPU {result.off_cpu:.0%} of the time{held} (py-spy stops it to read its "
                   "stacks); py-spy spaces its samples at random, but takes one that falls due while it is busy "
                   "as soon as it is free, so about that share of the samples came at py-spy's pace, not at random "
                   "moments of the loop")
    if result.ran is not None and result.ran >= SLOWED:
        beside = ", with other work on the machine," if result.shared else ""
        why.append(f"its thread ran {result.ran:.1f}x as long as alone: the profiler{beside} changed the work itself")
    if result.top is not None and result.top.samples["timed"]:
        generated = sum(r.samples for r in result.top.by_self if r.location == GENERATED)
        if generated:
            why.append(f"{100.0 * generated / result.top.samples['timed']:.0f}% of the timed samples are in generated "
                       "code, after each of which py-spy, finding no file for the address, reloads the process's "
                       "libraries with the loop stopped")
    todo = (f"Profile again with a lower --rate (e.g. --rate {max(1, rate_hz // 4)}) until it is under {SLOWED:g}x, "
            "or with --profiler torch" if result.profiler == "py-spy" else
            "Its cost is per operator, so a loop of many small ones pays most: py-spy at a low --rate costs less")
    overstated = "what it is slow to sample" if result.profiler == "py-spy" else "its shortest, most frequent operators"
    return (f"the profiler slowed the loop {result.slowdown:.1f}x, so the shares below may overstate {overstated}"
            f"{''.join('; ' + w for w in why)}. {todo}")


def render(result: ProfileResult, rows: int, rate_hz: int = RATE_HZ) -> None:
    from benchctl import console

    render_slowdown(result, rate_hz)
    render_shared(result)
    if result.top is not None:
        render_frames(result.top, result.reps, rows)
    if result.top_ops:
        render_ops(result.top_ops, result.reps, rows)
    if result.peak_mem_bytes is not None:
        console.out.print(f"peak memory of one repetition: {result.peak_mem_bytes / 2**20:.1f} MiB")
    written = ", ".join([*result.files.values(), "profile.json"])
    console.out.print(f"wrote {written} to {result.out_dir}", highlight=False, soft_wrap=True)


@click.command("profile")
@click.argument("op")
@click.argument("impl")
@click.argument("device")
@click.option("--target", default=None, help="Operator target (default: the operator's first).")
@click.option("--pass", "pass_name", type=click.Choice(PASSES), default=Pass.FORWARD_BACKWARD.value, show_default=True)
@click.option("--batch-size", type=int, default=None, help="Default: the operator's own.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Override an operator param.")
@click.option("--dtype", type=click.Choice(DTYPE_NAMES), default="float32", show_default=True)
@click.option("--duration", type=Seconds(min=0.1), default=5.0, show_default=True,
              help="Seconds of the timing loop to profile.")
@click.option("--rate", type=click.IntRange(min=1), default=RATE_HZ, show_default=True,
              help="py-spy samples/s (each one stops the loop while py-spy reads its stacks).")
@click.option("--native/--no-native", default=True, show_default=True, help="py-spy: C/C++ frames too.")
@click.option("--profiler", type=click.Choice(["py-spy", "torch"]), default="py-spy", show_default=True)
@click.option("--memory", is_flag=True, help="torch profiler: record memory per operator and the peak.")
@click.option("--flush-caches", "--flush-l2", "flush_caches", is_flag=True,
              help="Start each repetition on cold caches, as `run --flush-caches` times it (the flush untimed).")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True, help="Rows per table.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Default: results/profiles/<op>-<impl>-<device>-<pass>-<timestamp>.")
@click.option("--ops-dir", "ops_dirs", multiple=True, type=click.Path(file_okay=False),
              help="Extra folder of operators (repeatable).")
def command(op: str, impl: str, device: str, target: str | None, pass_name: str, batch_size: int | None,
            params: tuple[str, ...], dtype: str, duration: float, rate: int, native: bool, profiler: str,
            memory: bool, flush_caches: bool, top: int, out_dir: Path | None, ops_dirs: tuple[str, ...]) -> None:
    """Profile OP's IMPL on DEVICE: exactly the loop `benchctl run` times, in a child process.

    py-spy (default) writes a flame graph SVG, a speedscope JSON and the top frames by self and total
    time, C++ frames included; `--profiler torch` writes a Chrome trace, the top operators and a flame graph
    of operators by self time (on a GPU, the view that sees kernel time).
    """
    from benchctl.errors import UsageError

    if device.lower() not in DEVICE_ALIASES:  # usage errors first, before torch is imported
        raise UsageError(f"unknown device {device!r}; choose from: cpu, gpu (cuda)")
    if memory and profiler != "torch":
        raise UsageError("--memory needs --profiler torch (py-spy samples stacks, not allocations)")
    from benchctl.profile import profilers as profiling
    from benchctl.results import storage
    cell = build_cell(op, impl, device, target, dtype, batch_size, params, ops_dirs)
    req = profiling.ProfileRequest(cell, pass_name, duration, rate, native, memory, tuple(ops_dirs), flush_caches)
    stamp = f"{datetime.now():%Y%m%d-%H%M%S}"
    out = out_dir or Path("results", storage.PROFILES_DIR, f"{op}-{impl}-{cell.device}-{pass_name}-{stamp}")
    check_writable(out)
    run = profiling.profile_torch if profiler == "torch" else profiling.profile_py_spy
    result = run(req, out)
    _check_sampled(result)
    if flush_caches:
        from benchctl import console

        console.out.print("each repetition started on cold caches: flushed in the untimed setup, so the flush is in "
                          "neither the timed samples nor the times", highlight=False)
    render(result, top, rate)


def _check_sampled(result: ProfileResult) -> None:
    """A profile with no sample (py-spy) or no operator (torch) in the timed code has no shares to show: an
    error, not empty tables."""
    from benchctl.errors import BenchError

    if result.top is not None and not result.top.samples["timed"]:
        raise BenchError(f"no samples in the timed code ({_reps(result.reps)}, {result.timed_s:.3g} s): profile "
                         f"for longer with a larger --duration; what was recorded is in {result.out_dir}")
    if result.profiler == "torch" and not result.top_ops:
        raise BenchError(f"the torch profiler recorded no operator in the timed code ({_reps(result.reps)}, "
                         f"{result.timed_s:.3g} s): its work is not in torch's operators, which --profiler py-spy "
                         f"does not need; what was recorded is in {result.out_dir}")

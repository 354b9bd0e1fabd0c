"""`benchctl run IMPLS DEVICES`: time forward, backward and forward+backward across the sweep -> parquet."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import click

from benchctl.cli.options import load_operators, op_option, ops_dir_option, tf32_option

BUSY_WARN_CORES = 0.5  # cores kept busy by other processes at the start of a CPU run
SLOW_MEMORY_SHARE = 0.6  # memory bandwidth at the start of a CPU run, as a share of the calibrated read peak


def _ints(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    try:
        return tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {text!r}") from None


def _parse_value(text: str):
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_params(pairs: tuple[str, ...]) -> dict:
    """KEY=VALUE pairs; a comma list (KEY=1,2,4) sweeps that param."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"--param takes KEY=VALUE, got {pair!r}")
        if "," in value and not value.startswith("["):
            out[key] = [_parse_value(v) for v in value.split(",")]
        else:
            out[key] = _parse_value(value)
    return out


def check_writable(out: Path) -> None:
    from benchctl.errors import UsageError

    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"cannot write results to {out}: {exc.strerror or exc}") from None


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
@click.option("--min-time", type=float, help="Seconds of samples per pass, at least.")
@click.option("--max-time", type=float, help="Seconds per pass, at most.")
@click.option("--warmup-time", type=click.FloatRange(min=0), help="Untimed calls before sampling, in seconds "
              "(default 0.5): first calls can be far slower, e.g. while a VM backs new memory.")
@click.option("--rounds", type=click.IntRange(min=1), default=1, show_default=True,
              help="Interleaved rounds: every cell measured N times across the sweep, 1/N of the time each, "
                   "samples pooled. Steadier ratios on a busy machine.")
@click.option("--threads", type=click.IntRange(min=1), help="torch intra-op threads (default: torch's).")
@click.option("--out", default="results", show_default=True, type=click.Path(file_okay=False))
@click.option("--quick", is_flag=True, help="Each operator's small quick sweep.")
@click.option("--timeout", type=float, default=900.0, show_default=True, help="Seconds per cell before it is killed.")
@click.option("--flush-l2", is_flag=True, help="GPU: write a buffer larger than L2 before each repetition.")
@tf32_option
@click.option("--fresh-worker", is_flag=True,
              help="A new worker process for every cell: no timing depends on the cells before it.")
@click.option("--in-process", is_flag=True, help="No worker process (no crash isolation; for debugging).")
def command(impls, devices, ops, ops_dirs, config, targets, batch_sizes, params, dtypes, passes, min_time,
            max_time, warmup_time, rounds, threads, out, quick, timeout, flush_l2, tf32, fresh_worker,
            in_process) -> None:
    """Time IMPLS (py, cpp, cuda, a variant, a comma list, all) on DEVICES (cpu, gpu, all)."""
    from benchctl.sweep.request import SweepRequest, expand, split
    from benchctl.sweep.config import SweepConfig, load_config
    from benchctl.sweep.plan import Plan

    load_operators(ops_dirs)
    cfg = load_config(config) if config else SweepConfig()
    request = SweepRequest(
        impls=impls, devices=devices, ops=tuple(ops), dtypes=tuple(dtypes),
        passes=tuple(split(passes)) if passes else (), batch_sizes=_ints(batch_sizes),
        params=parse_params(params), targets=tuple(targets), quick=quick, config=cfg,
    )
    cells = expand(request)
    check_writable(Path(out))
    plan = Plan(cells, cfg, min_time=min_time, max_time=max_time, warmup_time=warmup_time, threads=threads,
                flush_l2=flush_l2, tf32=tf32, timeout=timeout, in_process=in_process, ops_dirs=ops_dirs,
                rounds=rounds, fresh_worker=fresh_worker)
    _execute(plan, Path(out))


def _execute(plan, out: Path) -> None:
    from benchctl import console
    from benchctl.errors import BenchError

    runnable, unavailable = plan.availability()
    for reason, cells in unavailable.items():
        which = ", ".join(dict.fromkeys(f"{c.op} {c.impl} on {c.device}" for c in cells))
        console.warn(f"{len(cells)} cell(s) unavailable here ({which}): {reason}")
    if not runnable:
        raise BenchError(f"nothing can run here: {'; '.join(unavailable)}")
    plan.build_extensions(lambda msg: console.err.print(msg, highlight=False))
    busy, memory = _warn_if_busy(plan), _warn_if_memory_is_busy(plan)
    writer = plan.writer(out, busy_cores_at_start=busy, mem_gbps_at_start=memory)
    _install_signal_handlers()
    try:
        _progress_run(plan, writer)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, lambda *_: os._exit(130))  # a second Ctrl-C exits at once
        writer.finish("interrupted")
        console.error(f"interrupted: {writer.parts} finished cell(s) kept in {writer.dir}")
        sys.exit(130)
    except BaseException as exc:  # no way out of the sweep leaves the run marked running
        writer.finish("failed", reason=f"{type(exc).__name__}: {exc}")
        raise
    writer.finish("complete")
    _render_summary(plan, writer)


def _warn_if_busy(plan) -> float | None:
    """Other work on the CPU makes timings noisy: torch's OpenMP threads wait out a busy core.
    Returns the busy cores measured (None for a GPU-only run or without /proc/stat)."""
    from benchctl import console
    from benchctl.machine.facts import busy_cores

    if not any(c.device == "cpu" for c in plan.cells):
        return None
    busy = busy_cores()
    if busy is not None and busy >= BUSY_WARN_CORES:
        console.warn(f"about {busy:.1f} of {os.cpu_count()} cores are busy with other work: CPU timings will be "
                     "noisy (compare ratios within this run only, or use --threads 1)")
    return busy


def _warn_if_memory_is_busy(plan) -> float | None:
    """Other tenants of the host can take half the memory bandwidth without using a core of this machine.
    Returns the probe's GB/s (None for a GPU-only run)."""
    from benchctl import console
    from benchctl.machine import membw

    if not any(c.device == "cpu" for c in plan.cells):
        return None
    now, peak = membw.probe(), plan.settings().peaks.get("cpu", {}).get("read_gbps")
    if peak and now < SLOW_MEMORY_SHARE * peak:
        console.warn(f"memory bandwidth is {now:.0f} GB/s now, {now / peak:.0%} of the {peak:.0f} GB/s calibrated: "
                     "other work on this host is using it; memory-bound timings will be slower and move "
                     "(see each row's mem_gbps)")
    return now


def _install_signal_handlers() -> None:
    """SIGINT and SIGTERM both stop the sweep cleanly. SIGINT is set explicitly because a process
    started in the background by a non-interactive shell inherits it ignored."""
    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


def _progress_run(plan, writer) -> None:
    from benchctl import console
    from benchctl.results.schema import Status

    with console.progress() as bar:
        task = bar.add_task("cells", total=len(plan.cells) * plan.rounds, current="")

        def done(cell, rows) -> None:
            bad = [r for r in rows if r["status"] not in (Status.OK, Status.UNAVAILABLE)]
            if bad:
                bar.console.print(console.styled(f"{cell.label()}: {bad[0]['status']} ", "yellow",
                                                 str(bad[0].get("message") or "")))
            bar.update(task, advance=1, current=cell.label())

        plan.run(writer, on_start=lambda c: bar.update(task, current=c.label()), on_done=done)


def _render_summary(plan, writer) -> None:
    from benchctl import console
    from benchctl.ops import registry
    from benchctl.results import storage
    from benchctl.results.summary import summarize

    df = storage.load_run(writer.dir)
    refs = {name: op.reference for name, op in registry.operators().items()}
    for t in summarize(df, refs):
        console.out.print(console.table(t.title, t.columns, t.rows))
    console.out.print(f"results: {writer.dir}")

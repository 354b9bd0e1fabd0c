"""`benchctl maxbatch OP IMPL DEVICE`: the largest batch that completes the pass, per implementation."""

from __future__ import annotations

from pathlib import Path

import click

from benchctl.cli.options import load_operators, ops_dir_option
from benchctl.cli.options import Seconds, check_writable, parse_params
from benchctl.ops.param_rules import INT64  # a batch size is a tensor's size
from benchctl.vocab import PASSES, Pass

MOST_MEMORY = 2**62  # bytes (4 EiB): past any machine's address space, with room below a C long for what a worker maps


@click.command("maxbatch")
@click.argument("op_name", metavar="OP")
@click.argument("impl_name", metavar="IMPL")
@click.argument("device")
@click.option("--pass", "pass_name", default=Pass.FORWARD_BACKWARD.value, show_default=True,
              type=click.Choice(PASSES))
@click.option("--target", help="Operator target (default: its first).")
@click.option("--param", "params", multiple=True, help="KEY=VALUE operator param.")
@click.option("--dtype", default="float32", show_default=True)
@click.option("--mem-limit", help="CPU: the address space the worker may map for the operator, above what it "
                                  "maps once its threads have started, e.g. 2G (default: half of free RAM).")
@click.option("--start", default=1, show_default=True, type=click.IntRange(min=1, max=INT64[1]))
@click.option("--limit", default=1 << 14, show_default=True, type=click.IntRange(min=1, max=INT64[1]))
@click.option("--timeout", type=Seconds(min=0, min_open=True), default=600.0, show_default=True,
              help="Seconds per probe.")
@click.option("--out", default="results", show_default=True, type=click.Path(file_okay=False))
@ops_dir_option
def command(op_name, impl_name, device, pass_name, target, params, dtype, mem_limit, start, limit, timeout,
            out, ops_dirs) -> None:
    """Find the largest batch size that completes PASS (doubling, then bisection)."""
    from benchctl import console
    from benchctl.errors import UsageError
    from benchctl.maxbatch.probe import Prober

    load_operators(ops_dirs, (op_name,))
    limit_bytes = _mem_limit(mem_limit)
    if start > limit:
        raise UsageError(f"--start {start} is above --limit {limit}: nothing to probe")
    given = parse_params(params)
    if "batch_size" in given:
        raise UsageError("maxbatch searches batch_size itself: give --start and --limit, not --param batch_size")
    prober = Prober.create(op_name, impl_name, device, pass_name, target, given, dtype, limit_bytes, timeout,
                           ops_dirs)
    check_writable(Path(out))
    with console.err.status(f"probing {op_name} {impl_name} on {device} ...") as status:
        result, run_dir = prober.run(Path(out), start, limit, _progress(status))
    probes = ", ".join(f"{b}{'' if ok else ' (fails)'}" for b, ok in result.probes)
    console.out.print(f"probes: {probes}")
    note = " (search limit reached)" if result.capped else ""
    console.out.print(f"{op_name} {impl_name} on {device} ({pass_name}, memory limit "
                      f"{prober.limit_text()}): largest batch = {result.largest_ok}{note}", style="bold")
    console.out.print(f"results: {run_dir}")


def _mem_limit(text: str | None) -> int | None:
    """--mem-limit in bytes; None where not given. An empty one is no size, not the default, and a size past
    MOST_MEMORY is no limit the worker can set (RLIMIT_AS takes a C long, and the worker adds what it maps)."""
    from benchctl.errors import UsageError
    from benchctl.maxbatch.search import parse_size

    if text is None:
        return None
    try:
        size = parse_size(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if size == 0:
        raise UsageError("--mem-limit 0 leaves no memory to probe with; give a size, e.g. 2G, or leave it out")
    if size > MOST_MEMORY:
        raise UsageError(f"--mem-limit {text} is more than a worker can be limited to (4 EiB); give a size, e.g. "
                         "2G, or leave it out")
    return size


def _progress(status):
    """Each probe's line as it ends (a log or CI shows no spinner, and a probe at the GPU's limit takes tens
    of seconds), the spinner naming the last."""
    from benchctl import console

    since = console.lap()

    def say(batch: int, fits: bool) -> None:
        line = f"batch {batch}: {'fits' if fits else 'fails'} ({since():.1f} s)"
        console.err.print(line)
        status.update(line)
    return say

"""`benchctl check IMPLS DEVICES`: correctness of every implementation against the float64 reference."""

from __future__ import annotations

import click

from benchctl.cli.options import load_operators, op_option, ops_dir_option, parse_params, tf32_option


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.2e}"


@click.command("check")
@click.argument("impls")
@click.argument("devices")
@op_option
@ops_dir_option
@tf32_option
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Compare with the reference at the params `run` would time with the same --param (KEY=1,2,4: "
                   "each), as its gate checks them, instead of the operator's own check cases. gradcheck and "
                   "opcheck stay at its first, small case.")
@click.option("--dtype", "dtypes", multiple=True,
              help="Compare with the reference in this dtype (repeatable; default float32 and float64), e.g. "
                   "bfloat16; gradcheck stays in float64.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per check on stdout instead of the table.")
def command(impls: str, devices: str, ops: tuple[str, ...], ops_dirs: tuple[str, ...], tf32: bool | None,
            params: tuple[str, ...], dtypes: tuple[str, ...], as_json: bool) -> None:
    """Check IMPLS on DEVICES: outputs and gradients vs float64, gradcheck, opcheck. Exit 1 on failure.
    An implementation with a compiled extension is checked in a child process (one per operator)."""
    from benchctl.sweep import words

    words.check(devices=devices, dtypes=dtypes)  # before torch is imported
    from benchctl.sweep import request
    from benchctl.measure.check_child import run_checks_isolated
    from benchctl.measure.correctness import set_tf32
    from benchctl.errors import BenchError

    load_operators(ops_dirs, ops)
    set_tf32(tf32)
    given = parse_params(params)
    cells = request.cells(request.SweepRequest(impls=impls, devices=devices, ops=ops, params=given))
    selection = request.selection(cells)
    if not selection:
        raise BenchError(f"nothing to check: no implementation among {impls!r} supports {devices!r}")
    _build_first(cells)
    rows = _collect(run_checks_isolated(selection, ops_dirs, tf32, request.gate_cases(cells, given), dtypes))
    if as_json:
        _render_json(rows)
    else:
        _render(rows)
        _say_interpreted(rows, selection)
    failed = [r for r in rows if r.passed is False]
    if failed:
        raise BenchError(f"{len(failed)} check(s) failed, first: {failed[0].name()}: {failed[0].detail}")
    if all(r.passed is None for r in rows):
        raise BenchError("nothing could be checked here: " + "; ".join(sorted({r.detail for r in rows})))


def _collect(results) -> list:
    """Every check's row; one line on stderr as each implementation is done, with the seconds it took
    (a check stopped from outside still says how far it got, and where the time went)."""
    import time

    from benchctl import console

    rows, started, current = [], time.monotonic(), None
    with console.err.status("checking ...") as status:
        for row in results:
            now = (row.op, row.impl, row.device)
            if now != current and current is not None:
                console.err.print(f"checked {' '.join(current)} in {time.monotonic() - started:.1f} s")
                started = time.monotonic()
            current = now
            status.update(f"checking {row.op} {row.impl} on {row.device} ({row.kind})")
            rows.append(row)
    if current is not None:
        console.err.print(f"checked {' '.join(current)} in {time.monotonic() - started:.1f} s")
    return rows


def _build_first(cells) -> None:
    """The same preflight as `run`, on the cells `run` would time with the same words: extensions are
    compiled now, with a line each, not silently inside the first check; a build that fails is then
    reported by the checks as the reason they cannot run."""
    from benchctl import console
    from benchctl.sweep.preflight import Preflight

    Preflight(cells).build_extensions(lambda msg: console.err.print(msg))


def _render_json(rows) -> None:
    import json
    from dataclasses import asdict

    click.echo(json.dumps([asdict(r) for r in rows], indent=2))


def _say_interpreted(rows, selection) -> None:
    from benchctl import console
    from benchctl.measure.checks import interpreted
    from benchctl.ops.triton_support import CHECKED_WITH_INTERPRETER

    names = interpreted(rows, selection)
    if names:
        console.out.print(f"{CHECKED_WITH_INTERPRETER}: {', '.join(names)}")


def _render(rows) -> None:
    """One line per (operator, target, impl, device, check, dtype) with the worst error over its cases;
    each failing case is then named on its own line."""
    from benchctl import console
    from benchctl.measure.checks import summarize_rows

    cols = ("operator", "target", "impl", "device", "check", "dtype", "cases", "max abs", "max rel", "tol", "result")
    table_rows = [(*s.key, s.cases, _fmt(s.max_abs_err), _fmt(s.max_rel_err), _fmt(s.tolerance), s.result)
                  for s in summarize_rows(rows)]
    console.out.print(console.table("correctness vs float64 reference", cols, table_rows))
    for r in rows:
        if r.passed is False:
            console.error(f"{r.name()}: {r.detail}")

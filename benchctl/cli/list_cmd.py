"""`benchctl list`: operators, implementations, devices, and why any is unavailable here."""

from __future__ import annotations

import json
from pathlib import Path

import click

from benchctl.cli.options import broken_file_line, load_operators, op_option, ops_dir_option


def availability_rows(ops: dict, broken: dict[str, str] | None = None) -> list[dict]:
    """A row per (operator, implementation, device), and one per operator file that failed to import."""
    rows = [{"operator": Path(path).stem, "implementation": "", "device": "", "available": False,
             "reason": broken_file_line(path, error), "description": ""} for path, error in (broken or {}).items()]
    for op in ops.values():
        for impl in [*op.implementations.values(), *_compiled_reference(op)]:
            for device in impl.devices:
                reason = impl.unavailable_reason(device)
                rows.append({"operator": op.name, "implementation": impl.name, "device": device,
                             "available": reason is None, "reason": reason or "",
                             "description": impl.description, "dtypes": list(impl.dtypes)})  # []: any
    return rows


def by_device(rows: list[dict]) -> tuple[list[str], list[list[str]], list[str]]:
    """What `list` prints of `availability_rows`: a row per operator and implementation, a column per device saying
    `yes` (`yes (float32, float64 only)` where it declares its dtypes) or why not (`(cuda only)` where the
    implementation is not for it); a device where nothing is available,
    for one reason, is a line instead of a column, as is an operator file that failed to import."""
    ran = [r for r in rows if r["device"]]
    devices = list(dict.fromkeys(r["device"] for r in ran))
    lines = [f"{r['operator']}: {r['reason']}" for r in rows if not r["device"]]
    for device in list(devices):
        reasons = {r["reason"] for r in ran if r["device"] == device}
        if not any(r["available"] for r in ran if r["device"] == device) and len(reasons) == 1:
            devices.remove(device)
            lines.append(f"{device}: {reasons.pop()} (every implementation)")
    table: dict[tuple[str, str], dict[str, str]] = {}
    for r in ran:
        only = f" ({', '.join(r['dtypes'])} only)" if r.get("dtypes") else ""
        why_not = f"yes{only}" if r["available"] else r["reason"]
        table.setdefault((r["operator"], r["implementation"]), {})[r["device"]] = why_not
    cells = [[op, impl, *(said.get(d, f"({', '.join(said)} only)") for d in devices)]
             for (op, impl), said in table.items()]
    return ["operator", "implementation", *devices], cells, lines


def _compiled_reference(op) -> list:
    """The @compile modifier, shown on the operator's reference implementation (it applies to any)."""
    from benchctl.ops import lookup, modifiers

    if op.reference not in op.implementations:
        return []
    return [lookup.find(op, f"{op.reference}{modifiers.MARK}{modifiers.COMPILE}")]


def param_rows(ops: dict) -> list[dict]:
    """A row per (operator, param): its default, its --quick value, what it takes, whether it is the charts' axis."""
    from benchctl.ops import param_rules

    return [{"operator": op.name, "param": key, "default": value, "quick": op.quick.get(key, ""),
             "takes": param_rules.describe(key, value, op.rules.get(key, ())), "axis": key == op.axis}
            for op in ops.values() for key, value in op.params.items()]


def _show_params(ops: dict, as_json: bool) -> None:
    from benchctl import console

    rows = param_rows(ops)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    cols = ("operator", "param", "default", "quick", "takes")
    cells = [[f"{r['param']} (axis)" if c == "param" and r["axis"] else _text(r[c]) for c in cols] for r in rows]
    console.out.print(console.table("benchctl params (set with --param KEY=VALUE, KEY=1,2,3 to sweep)", cols, cells))


def _selected(names: tuple[str, ...], ops_dirs: tuple[str, ...]) -> dict:
    """The operators asked for with --op (an unknown name is a usage error), every one without it."""
    from benchctl.sweep.request import select_ops

    found = load_operators(ops_dirs, names, warn=False)
    return {op.name: op for op in select_ops(names)} if names else found


def _text(value) -> str:
    if value is None:
        return "unset"  # the operator derives it (lstm_cell's I: the same as H)
    return json.dumps(value) if isinstance(value, list) else str(value)


@click.command("list")
@op_option
@ops_dir_option
@click.option("--params", "show_params", is_flag=True,
              help="Each operator's params instead: default, --quick value and what values it takes.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def command(ops: tuple[str, ...], ops_dirs: tuple[str, ...], show_params: bool, as_json: bool) -> None:
    """Operators, implementations, and why any is unavailable here (--params: their params)."""
    from benchctl import console

    from benchctl.ops import namespaces, registry

    found = _selected(ops, ops_dirs)
    if show_params:
        return _show_params(found, as_json)
    rows = availability_rows(found, {} if ops else registry.load_errors())
    for clash in namespaces.declared_clashes():  # read from the sources: nothing is loaded
        console.warn(clash.line())
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    cols, cells, lines = by_device(rows)
    console.out.print(console.table("benchctl operators: available here on each device, or why not", cols, cells))
    for line in lines:
        console.out.print(line)
    from benchctl.ops.modifiers import SYNTAX

    console.out.print(f"Any implementation runs under torch.compile as {SYNTAX}.")

"""`benchctl check` for implementations backed by a compiled extension, in a child process per operator.

Checking loads the operator's C++ library; loading runs its static registrations, and torch aborts the
process on some of them (two libraries that open one TORCH_LIBRARY namespace). So benchctl's own process
never loads one: a child checks one operator's implementations and streams a JSON line per CheckRow, and
a child that dies becomes a failed row per implementation it had not finished, with the reason it gave.
Implementations without an extension are checked in this process, as before.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import asdict
from typing import Any, Iterator, Mapping, Sequence

from benchctl import interpreter
from benchctl.measure.checks import DTYPES, CheckRow, run_checks
from benchctl.ops import extension
from benchctl.ops.cells import DTYPES as DTYPES_BY_NAME
from benchctl.ops.isolated import last_reason
from benchctl.ops.registry import Implementation, Operator
from benchctl.vocab import Status

MODULE = "benchctl.measure.check_child"
Selection = Sequence[tuple[Operator, Implementation, str]]
Given = Mapping[str, Sequence[Mapping[str, Any]]]  # params to compare at, by operator (`check --param`)


def run_checks_isolated(selection: Selection, ops_dirs: Sequence[str], tf32: bool | None,
                        given: Given | None = None, dtypes: Sequence[str] = ()) -> Iterator[CheckRow]:
    """The rows of `run_checks`, each operator with an extension behind it checked in a child process; `dtypes`:
    the names of those to compare with the reference in (none: checks.DTYPES)."""
    by_op: dict[str, list[tuple[Operator, Implementation, str]]] = {}
    for item in selection:
        by_op.setdefault(item[0].name, []).append(item)
    for items in by_op.values():
        if any(extension.behind(impl) is not None for _, impl, _ in items):
            yield from _in_child(items, ops_dirs, tf32, given or {}, dtypes)
        else:
            yield from run_checks(items, given, _dtypes(dtypes))


def _dtypes(names: Sequence[str]) -> tuple:
    return tuple(DTYPES_BY_NAME[n] for n in names) or DTYPES


def _in_child(items: Selection, ops_dirs: Sequence[str], tf32: bool | None, given: Given,
              dtypes: Sequence[str]) -> Iterator[CheckRow]:
    request = {"ops_dirs": [str(d) for d in ops_dirs], "tf32": tf32, "given": dict(given), "dtypes": list(dtypes),
               "items": [[op.name, impl.name, device] for op, impl, device in items]}
    done: set[tuple[str, str, str]] = set()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(interpreter.module_command(MODULE), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err, text=True, env=interpreter.child_env())
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.close()
        for line in proc.stdout:
            message = json.loads(line)
            if "done" in message:
                done.add(tuple(message["done"]))
            else:
                yield CheckRow(**message)
        code = proc.wait()
        err.seek(0)
        reason = last_reason(err.read().decode(errors="replace"))
    how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
    for op, impl, device in items:
        if (op.name, impl.name, device) not in done:
            yield CheckRow(op.name, "*", impl.name, device, Status.CRASHED, "", "", None, None, None, False,
                           f"the check process ended ({how}): {reason}")


def main() -> None:
    proto = interpreter.reply_channel(buffering=1)  # what the checked code prints: never on a row line
    from benchctl.measure.correctness import set_tf32
    from benchctl.ops import registry

    request = json.loads(sys.stdin.readline())
    set_tf32(request["tf32"])
    for op_name, impl_name, device in request["items"]:
        registry.discover(request["ops_dirs"], [op_name])
        op = registry.get(op_name)
        for row in run_checks([(op, op.implementations[impl_name], device)], request["given"],
                              _dtypes(request["dtypes"])):
            proto.write(json.dumps(asdict(row)) + "\n")
        proto.write(json.dumps({"done": [op_name, impl_name, device]}) + "\n")


if __name__ == "__main__":
    main()

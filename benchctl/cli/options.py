"""Options several commands share, and the one way they load operators."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import click

from benchctl.vocab import TF32_MODES, Tf32

ops_dir_option = click.option(
    "--ops-dir", "ops_dirs", multiple=True, type=click.Path(file_okay=False),
    help="Folder of operator files of your own (repeatable; also BENCHCTL_OPS_PATH).",
)


LONGEST_WAIT = 1e9  # seconds (31 years): a wait much longer overflows the clock's type
MOST_THREADS = 2**31 - 1  # torch.set_num_threads takes a C int: a larger count fails the worker as it starts


class Finite(click.FloatRange):
    """A float option's range that takes finite numbers only: nan passes every range check and inf every lower
    bound, and either one as a time would hang the sweep or crash the wait on it."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{number} is not a finite number.", param, ctx)
        return super().convert(number, param, ctx)


class Seconds(Finite):
    """A time option's range: a finite number of seconds, LONGEST_WAIT at most."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        number = super().convert(value, param, ctx)
        if number > LONGEST_WAIT:
            self.fail(f"{number:g} s is longer than any wait can be ({LONGEST_WAIT:g} s at most).", param, ctx)
        return number


def names_of(what: str) -> Callable[[click.Context, click.Parameter, Sequence[str]], tuple[str, ...]]:
    """The callback of a repeatable option that also takes comma lists, as IMPLS and DEVICES do: `--op a,b` is
    `--op a --op b`; an empty list or name (`--op ""`) is a usage error naming `what`."""
    def names(ctx: click.Context, param: click.Parameter, value: Sequence[str]) -> tuple[str, ...]:
        from benchctl.sweep.words import split

        return tuple(name for given in value for name in split(given, what))
    return names


names_list = names_of("operator")


op_option = click.option("--op", "ops", multiple=True, callback=names_list,
                         help="Operator to include (repeatable, or a comma list; default all).")


def _tf32_mode(ctx: click.Context, param: click.Parameter, value: str) -> bool | None:
    return TF32_MODES[value]


tf32_option = click.option(
    "--tf32", type=click.Choice(list(TF32_MODES)), default=Tf32.DEFAULT.value, show_default=True,
    callback=_tf32_mode,
    help="GPU float32: matmuls and cuDNN convolutions in TF32 (on), in full float32 (off), or torch's "
         "defaults (convolutions only). Results are judged at 2e-3 instead of 2e-4 while TF32 is on.",
)


def load_operators(ops_dirs: Sequence[str], only: Sequence[str] = (), warn: bool = True) -> dict:
    """Discover operators (with `only`, just those: see registry.discover). A missing folder is a usage
    error; so is asking for an operator whose file failed to import. Other broken files are a warning."""
    from benchctl import console
    from benchctl.ops import registry
    from benchctl.errors import UsageError

    try:
        found = registry.discover(ops_dirs, only)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    errors = registry.load_errors()
    for name in only:
        broken = [path for path in errors if Path(path).stem == name] if name not in found else []
        if broken:
            raise UsageError(broken_file_line(broken[-1], errors[broken[-1]]))
    for path, err in errors.items() if warn else ():
        console.warn(broken_file_line(path, err))
    return found


def broken_file_line(path: str, error: str) -> str:
    return f"operator file {path} failed to import: {error}"


def parse_params(pairs: tuple[str, ...], known: Mapping[str, Any] | None = None, sweep: bool = True) -> dict:
    """KEY=VALUE pairs, values read as JSON where they parse (numbers, booleans), else strings. With `sweep`,
    a comma list (KEY=1,2,4) sweeps that param; with `known`, KEY must be one of its keys."""
    from benchctl.errors import UsageError

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or (known is not None and key not in known):
            choices = f" with KEY one of {', '.join(known)}" if known is not None else ""
            raise UsageError(f"--param {pair!r}: expected KEY=VALUE{choices}")
        if sweep and "," in value and not value.startswith("["):
            out[key] = [_json_or_text(v) for v in value.split(",")]
        else:
            out[key] = _json_or_text(value)
    return out


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def check_writable(out: Path) -> None:
    """A results folder that cannot be written is a usage error before anything runs."""
    from benchctl.errors import UsageError

    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"cannot write results to {out}: {exc.strerror or exc}") from None

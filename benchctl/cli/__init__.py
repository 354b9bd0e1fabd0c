"""benchctl's command line: one module per command, imported only when that command runs."""

from __future__ import annotations

import importlib
import importlib.util
import click

from benchctl import __version__

# command name -> module under benchctl.cli that defines `command`
COMMANDS = {
    "list": "list_cmd",
    "env": "env",
    "build": "build",
    "check": "check",
    "run": "run",
    "profile": "profile",
    "report": "report",
    "compare": "compare",
    "history": "history",
    "bisect": "bisect",
    "baseline": "baseline",
    "maxbatch": "maxbatch",
    "selftest": "selftest",
}


class LazyGroup(click.Group):
    """Imports a command's module on use, so `benchctl --help` does not import torch."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if _exists(COMMANDS[name])]

    def make_context(self, *args, **kwargs) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def invoke(self, ctx: click.Context):
        from benchctl.errors import BenchError

        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _one_line(exc) from None
        except BenchError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            raise OneLineError(str(exc), exc.exit_code) from None

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS or not _exists(COMMANDS[name]):
            return None
        return importlib.import_module(f"benchctl.cli.{COMMANDS[name]}").command


class OneLineError(click.ClickException):
    """A BenchError shown as one red line with its own exit code (2 usage, 1 failure)."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code

    def show(self, file=None) -> None:
        from benchctl.console import error

        error(self.message)


def _one_line(exc: click.UsageError) -> OneLineError:
    """Click's usage error (usage, hint, then the error) as one line that names where the help is."""
    where = exc.ctx.command_path if exc.ctx else "benchctl"
    return OneLineError(f"{exc.format_message()} ('{where} --help' lists what it takes)", exc.exit_code)


def _exists(module: str) -> bool:
    return importlib.util.find_spec(f"benchctl.cli.{module}") is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="benchctl")
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Correctness, timing, profiles and charts for custom PyTorch operators."""
    ctx.obj = {"debug": debug}


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="benchctl")

"""Options several commands share, and the one way they load operators."""

from __future__ import annotations

from typing import Sequence

import click

ops_dir_option = click.option(
    "--ops-dir", "ops_dirs", multiple=True, type=click.Path(file_okay=False),
    help="Folder of operator files of your own (repeatable; also BENCHCTL_OPS_PATH).",
)
op_option = click.option("--op", "ops", multiple=True, help="Operator to include (repeatable; default all).")


def load_operators(ops_dirs: Sequence[str]) -> dict:
    """Discover operators; a missing folder is a usage error, a broken operator file a warning."""
    from benchctl import console, registry
    from benchctl.errors import UsageError

    try:
        found = registry.discover(ops_dirs)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    for path, err in registry.load_errors().items():
        console.warn(f"operator file {path} failed to import: {err}")
    return found

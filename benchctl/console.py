"""The one place that builds rich Consoles, tables and progress bars."""

from __future__ import annotations

import sys
from typing import Iterable, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

# Outside a terminal (CI logs, pipes) rich would wrap tables at 80 columns; results tables are wider.
_WIDTH = None if sys.stdout.isatty() else 160
out = Console(width=_WIDTH)
err = Console(stderr=True, width=_WIDTH)


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> Table:
    t = Table(title=title, show_lines=False)
    for col in columns:
        t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(*("" if v is None else str(v) for v in row))
    return t


def progress() -> Progress:
    """Cells done / total, the current cell, elapsed time; on stderr so stdout stays clean."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[current]}"),
        console=err,
        transient=False,
    )


def error(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {message}", highlight=False, soft_wrap=True)

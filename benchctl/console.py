"""The one place that builds rich Consoles, tables and progress bars.

Both consoles print text literally (markup and emoji codes off): exception messages, stderr tails, operator
names and params come from user code, and a message such as "expected [batch, dim]" is not rich markup. Styles
are applied with `rich.text.Text` spans instead, never by formatting text into markup.
"""

from __future__ import annotations

import sys
import time
import warnings
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Sequence

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

# Outside a terminal (CI logs, pipes) rich would wrap tables at 80 columns; results tables are wider.
_WIDTH = None if sys.stdout.isatty() else 160
# emoji off too: rich turns ":fire:" in a plain string into its emoji, and a message, a path or a param may hold one
out = Console(width=_WIDTH, markup=False, highlight=False, emoji=False)
err = Console(stderr=True, width=_WIDTH, markup=False, highlight=False, emoji=False)


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[object]],
          wrap: Sequence[str] | None = None) -> Table:
    """A results table in a box, any cell folding to fit; with `wrap`, an open one (a rule under the header, no
    lines between columns) where only the columns named in `wrap` fold: a wide table whose boxed cells all wrapped."""
    t = Table(title=None if title is None else Text(title), show_lines=False,
              **({} if wrap is None else {"box": box.SIMPLE_HEAD, "show_edge": False, "collapse_padding": True}))
    for col in columns:
        t.add_column(Text(col), overflow="fold", no_wrap=wrap is not None and col not in wrap)
    for row in rows:
        t.add_row(*(v if isinstance(v, Text) else Text("" if v is None else str(v)) for v in row))
    return t


def headed(heading: str, text: str) -> Text:
    """`heading: text`, the heading in bold."""
    return Text.assemble((f"{heading}: ", "bold"), text)


def progress() -> Progress:
    """Cells done / total, elapsed time, the time left (a task's field `left`), the current cell; on stderr so
    stdout stays clean."""
    return Progress(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[left]}", markup=False),
        TextColumn("{task.fields[current]}", markup=False),
        console=err,
        transient=False,
    )


@contextmanager
def doing(first: str) -> Iterator[Callable[[str], None]]:
    """A spinner on stderr saying what long work does now (a terminal only); yields the call that says the next step."""
    with err.status(f"{first} ...") as status:
        yield lambda step: status.update(f"{step} ...")


def lap() -> Callable[[], float]:
    """A stopwatch for the lines of long work: each call gives the seconds since the last (the first: since
    it was made)."""
    last = [time.monotonic()]

    def seconds() -> float:
        now = time.monotonic()
        since, last[0] = now - last[0], now
        return since
    return seconds


def every(seconds: float, clock: Callable[[], float] = time.monotonic) -> Callable[[], bool]:
    """A limit on a log's repeated lines: each call says whether `seconds` have passed since the last call that
    said so (the first call does)."""
    last = [None]

    def due() -> bool:
        now = clock()
        if last[0] is not None and now - last[0] < seconds:
            return False
        last[0] = now
        return True
    return due


def styled(prefix: str, style: str, message: str) -> Text:
    """`prefix` in `style`, then `message` exactly as given."""
    return Text.assemble((prefix, style), message)


def error(message: str) -> None:
    err.print(styled("error: ", "bold red", message), soft_wrap=True)


def warn(message: str) -> None:
    err.print(styled("warning: ", "yellow", message), soft_wrap=True)


@contextmanager
def warnings_shown() -> Iterator[None]:
    """Python warnings raised inside, printed as one-line warnings when it ends, an error included: a file
    skipped says why before the error it leads to, never as a raw warning with its source line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for warning in caught:
                warn(str(warning.message))

"""`benchctl report`: charts, tables and an HTML/Markdown page from one or more runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from benchctl.cli.options import check_writable, names_list
from benchctl.errors import UsageError

if TYPE_CHECKING:
    from benchctl.report.contents import Report


def parse_baselines(values: tuple[str, ...]) -> dict[str, str]:
    """`OP=IMPL` sets one operator's baseline; a bare `IMPL` sets it for every operator."""
    out: dict[str, str] = {}
    for value in values:
        op, sep, impl = value.partition("=")
        if not value or (sep and not (op and impl)):
            raise UsageError(f"--baseline {value!r}: expected OP=IMPL or IMPL")
        out[op if sep else "*"] = impl if sep else op
    return out


@click.command("report")
@click.argument("results", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the report [default: <run>/_report for one run, else <root>/report-<time>].")
@click.option("--op", "ops", multiple=True, metavar="NAME", callback=names_list,
              help="Only this operator (repeatable, or a comma list).")
@click.option("--root", default="results", show_default=True, type=click.Path(file_okay=False, path_type=Path),
              help="Results folder searched for the latest run when no RESULTS are given.")
@click.option("--baseline", "baselines", multiple=True, metavar="[OP=]IMPL",
              help="Implementation speedups are measured against [default: each operator's reference, else py].")
def command(results: tuple[Path, ...], out_dir: Path | None, ops: tuple[str, ...], root: Path,
            baselines: tuple[str, ...]) -> None:
    """Charts (time vs the sweep axis per implementation, CPU/GPU x forward/backward), speedups,
    a roofline view, tables and the environment, as index.html and summary.md.

    RESULTS are run folders, parquet files or folders of runs (merged); default: the latest run in --root.
    """
    from benchctl import console
    from benchctl.analysis.repeat import earlier_rows
    from benchctl.report import history_page, page
    from benchctl.report.drawing import Drawer, workers
    from benchctl.results import guard, run_state

    wanted = parse_baselines(baselines)
    with console.warnings_shown():
        try:
            loaded = page.load_results(results, root)
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from None
        one = loaded.folders[0] if len(loaded.folders) == 1 else None
        out = out_dir or page.default_out_dir(loaded.folders, root)
        check_writable(out)
        with console.doing("building the report") as doing, Drawer(workers()) as drawer:
            history = history_page.for_run(one, doing=doing, drawer=drawer) if one else None
            doing("reading the earlier runs")
            built = page.build(loaded.rows, out, loaded.metas, wanted, ops, history=history, profiles_root=root,
                               earlier=earlier_rows(one) if one else None, doing=doing, drawer=drawer)
    for line in run_state.unfinished(loaded.metas) + [guard.changed_line(m) for m in loaded.metas]:
        if line:
            console.warn(line)
    for line in written(built):
        console.out.print(line, highlight=False, soft_wrap=True)


def written(built: Report) -> list[str]:
    """The pages' paths, one a line (the history page's where there is one), and one line for the charts: 20 charts
    in PNG and SVG are 40 paths that would bury the two a reader opens."""
    pages = [str(p) for p in [*built.pages, built.history] if p]
    if not built.figures:
        return pages
    folders = ", ".join(sorted({str(p.parent) for p in built.figures}))
    kinds = "/".join(sorted({p.suffix.lstrip(".").upper() for p in built.figures}))
    charts = len({p.with_suffix("") for p in built.figures})
    return [*pages, f"{charts} chart{'s' * (charts != 1)} as {kinds} in {folders}"]

"""`benchctl baseline save NAME [RUN]` and `benchctl baseline list`: runs kept per machine kind for
`compare --baseline NAME`."""

from __future__ import annotations

from pathlib import Path

import click

from benchctl.errors import UsageError

ROOT = click.option("--root", default="results", show_default=True, type=click.Path(path_type=Path),
                    help="The results folder the baselines live in (under baselines/).")


@click.group("baseline")
def command() -> None:
    """Keep a run as a named baseline for its kind of machine, and list what is kept."""


@command.command("save")
@click.argument("name")
@click.argument("run", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@ROOT
def save(name: str, run: Path | None, root: Path) -> None:
    """Keep RUN (default: the latest run under --root) as baseline NAME for its machine kind."""
    from benchctl import console
    from benchctl.analysis import baselines
    from benchctl.results import storage

    run = run or storage.latest_run(root)
    if run is None:
        raise UsageError(f"no runs found in {root}")
    with console.warnings_shown():
        kept = baselines.save(name, run, root)
    console.out.print(f"baseline {name} for {kept['kind']}: {run.name} -> {kept['path']}")


@command.command("list")
@ROOT
def list_baselines(root: Path) -> None:
    """The saved baselines: name, machine kind, run, when saved."""
    from benchctl import console
    from benchctl.analysis import baselines

    with console.warnings_shown():  # a damaged record is one line, and the others are listed
        rows = [(b["name"], b["kind"], b["run"], b["saved"]) for b in baselines.saved(root)]
    if not rows:
        console.out.print(f"no baselines under {root / baselines.FOLDER}")
        return
    console.out.print(console.table("baselines", ("name", "machine kind", "run", "saved"), rows))

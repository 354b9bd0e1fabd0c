"""`benchctl bisect GOOD BAD`: the first commit at which a cell got slower, by `git bisect run`."""

from __future__ import annotations

import signal
import tempfile
import uuid
from pathlib import Path

import click

from benchctl.cli.options import Finite, ops_dir_option


@click.command("bisect")
@click.argument("good")
@click.argument("bad")
@click.option("--op", required=True, help="The operator whose cell got slower.")
@click.option("--impl", required=True, help="Its implementation.")
@click.option("--pass", "passes", multiple=True, help="Only this pass (repeatable; default every pass).")
@click.option("--device", default="cpu", show_default=True, help="cpu or gpu.")
@ops_dir_option
@click.option("--repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The repository to bisect [default: the first --ops-dir's].")
@click.option("--run-arg", "run_args", multiple=True, metavar="ARG",
              help="An argument for `benchctl run` at every commit (repeatable), e.g. --run-arg=--quick.")
@click.option("--threshold", "--min-effect", default=0.05, show_default=True, type=Finite(min=0),
              help="Minimum effect, as in `compare`.")
@click.option("--alpha", default=0.05, show_default=True, type=Finite(0, 1, min_open=True),
              help="Significance level, as in `compare`.")
@click.option("--work", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the measurements, new or empty [default: a new temporary folder].")
def command(good, bad, op, impl, passes, device, ops_dirs, repo, run_args, threshold, alpha, work) -> None:
    """Measure the cell (OP, IMPL, every size of the sweep) at GOOD, at BAD, then at the commits `git bisect`
    picks between them, each judged against GOOD by the rules of `compare`: slower or broken is bad, same
    or faster good; one GOOD leaves unsure is judged against BAD (faster is good, same or slower bad); one
    still unsure is measured again, then skipped. The repository is left as found.
    """
    from benchctl import console
    from benchctl.bisect import driver
    from benchctl.bisect.spec import Spec
    from benchctl.errors import UsageError
    from benchctl.vocab import DEVICE_ALIASES
    from benchctl.sweep import words

    words.check(devices=device, passes=",".join(passes) or None)
    if repo is None and not ops_dirs:
        raise UsageError("bisect needs the repository: give --ops-dir (its repository) or --repo")
    top = driver.repository(repo or ops_dirs[0])
    # the folder is made once the commits are known good: a refused bisect leaves none behind
    folder = work or Path(tempfile.gettempdir()) / f"benchctl-bisect-{uuid.uuid4().hex[:8]}"
    spec = Spec(op, impl, DEVICE_ALIASES.get(device, device), str(folder.resolve()), tuple(passes),
                tuple(str(Path(d).resolve()) for d in ops_dirs), tuple(run_args), threshold, alpha)
    signal.signal(signal.SIGTERM, _interrupt)  # stopped either way, the repository is left as found
    result = driver.bisect(spec, top, good, bad, on_start=lambda: console.err.print(
        f"bisecting {top} between {good} and {bad}; measurements in {folder}"))
    rows = [[f"{t['commit'][:12]} {t['subject']}", t["verdict"], str(t["tries"]), t["cells"]] for t in result.tested]
    console.out.print(console.table("commits measured (BAD first)", ["commit", "verdict", "tries", "cells"], rows))
    console.out.print("each commit after BAD judged on the cells BAD was slower in: " + "; ".join(result.cells),
                      highlight=False, soft_wrap=True)
    if result.first_bad is None:
        console.warn("unsure commits were skipped; the first bad commit is one of: "
                     + ", ".join(f"{c.sha[:12]} {c.subject}" for c in result.candidates))
        raise SystemExit(1)
    c = result.first_bad
    console.out.print(f"first bad commit: {c.sha} {c.subject}", highlight=False, soft_wrap=True)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt

"""`benchctl history`: every cell's time across commits, the steps found and judged, and a page of charts."""

from __future__ import annotations

import json
from pathlib import Path

import click

from benchctl.cli.compare import STYLES
from benchctl.cli.options import Finite, check_writable, names_list, names_of


@click.command("history")
@click.argument("runs", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--root", default="results", show_default=True, type=click.Path(file_okay=False, path_type=Path),
              help="The results folder whose runs make the history when no RUNS are given.")
@click.option("--op", "ops", multiple=True, callback=names_list,
              help="Only this operator (repeatable, or a comma list).")
@click.option("--impl", "impls", multiple=True, callback=names_of("implementation"),
              help="Only this implementation (repeatable, or a comma list).")
@click.option("--pass", "passes", multiple=True, callback=names_of("pass"),
              help="Only this pass: forward, backward, forward_backward (repeatable, or a comma list).")
@click.option("--device", "devices", multiple=True, help="Only this device: cpu, gpu, all (repeatable, or a comma "
              "list).")
@click.option("--threshold", "--min-effect", default=0.05, show_default=True, type=Finite(min=0),
              help="Minimum effect of a step's verdict, as in `compare`.")
@click.option("--alpha", default=0.05, show_default=True, type=Finite(0, 1, min_open=True),
              help="Significance level of a step's verdict, as in `compare`.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the page [default: history/ beside the runs].")
@click.option("--json", "as_json", is_flag=True, help="Print every series and step as JSON instead of tables.")
def command(runs, root, ops, impls, passes, devices, threshold, alpha, out_dir, as_json) -> None:
    """One series per cell and machine kind across RUNS (run folders or folders of runs; default every
    run in --root), ordered by the commit of the measured code; the steps in each, found by change-point
    detection and judged faster, slower, same or unsure against the runs on each side; a page of charts.
    """
    from benchctl import console
    from benchctl.errors import UsageError
    from benchctl.report import history_page
    from benchctl.report.drawing import Drawer, workers
    from benchctl.analysis import follows, history, steps
    from benchctl.sweep import words

    words.check(passes=",".join(passes) or None)
    wanted = {"op": ops, "impl": impls, "pass_name": passes,
              "device": [name for given in devices for name in words.parse_devices(given)]}
    with console.warnings_shown():
        loaded = history.load(runs, root)
    all_series = history.series(history.select(loaded, **wanted))
    if not all_series:
        raise UsageError(history.unmatched(loaded, **wanted))
    out = out_dir or history_page.default_folder(runs, root)
    check_writable(out)
    with console.doing(f"finding the steps in {len(all_series)} series") as doing, Drawer(workers()) as drawer:
        found = steps.all_steps(all_series, threshold, alpha)
        said = history.messages(all_series)
        followers = follows.follows(all_series)
        page = history_page.build(all_series, found, said, out, doing, followers, drawer)
    if as_json:
        click.echo(json.dumps(_json(all_series, found, followers, str(page)), indent=2))
        return
    moved = follows.line(followers, len(all_series))
    _print_series(all_series)
    for shown in _steps_shown(found, said):
        console.out.print(shown)
    if moved:
        console.out.print(f"{moved}; the page draws them")
    console.out.print(str(page), highlight=False, soft_wrap=True)


def _steps_shown(found, said) -> list:
    """The steps where the cell's code changed (or a side does not record it) as a table, and a line counting them and
    those at commits that did not touch it (the page folds those, --json lists them)."""
    from benchctl import console
    from benchctl.analysis import steps

    if not found:
        return ["no steps found"]
    code, machine = steps.by_code(found)
    table = console.table("steps, newest first", ["cell", "before", "after", "change [95% interval]", "verdict",
                                                  "message"], [_step_row(st, said) for st in code],
                          wrap=("cell", "verdict", "message"))
    unlisted = " (not listed here: the page and --json list them)" if machine else ""
    return [table] * bool(code) + [steps.summary(found) + unlisted]


SERIES_COLUMNS = ["cell", "machine", "runs", "first", "last", "latest ms", "latest code ms"]


def _series_row(s) -> list[str]:
    """A series' row; "latest code ms" is the fastest and slowest of its runs of the latest code, and how many: how
    far the same code moved between runs, which the latest run's interval does not say."""
    from benchctl.report.tables import runs_text

    same = [p.median_s for p in s.latest_code()]
    return [s.name(), s.machine, str(len(s.points)), s.points[0].label, s.points[-1].label,
            f"{s.points[-1].median_s * 1e3:.4g}", runs_text(min(same), max(same), len(same))]


def _print_series(all_series) -> None:
    """The series table (the machine in its title where every series shares it), and a line on what "latest code ms"
    holds and how often the next run would land within it were the runs alike."""
    from benchctl import console
    from benchctl.analysis.earlier_range import forecast_text

    machines = {s.machine for s in all_series}
    title, columns, rows = "history", SERIES_COLUMNS, [_series_row(s) for s in all_series]
    if len(machines) == 1:  # said once, in the title
        title, columns, rows = f"history ({machines.pop()})", columns[:1] + columns[2:], [r[:1] + r[2:] for r in rows]
    console.out.print(console.table(title, columns, rows, wrap=("cell",)))
    most = max(len(s.latest_code()) for s in all_series)
    console.out.print(f"latest code ms: the fastest and slowest of each cell's runs of its latest code (how many); "
                      f"{forecast_text(most)}")


def _step_row(step, said) -> list:
    from rich.text import Text

    from benchctl.report.history_page import change_text

    c = step.change
    verdict = Text(step.words(), style="" if step.code_unchanged else STYLES.get(c.verdict, ""))
    subject = said[step.after.sha].subject if step.after.sha in said else ""
    return [step.series.name(), step.before.label, step.after.label, change_text(step), verdict, subject]


# What --json gives of each step's judgement (compare's CellChange fields).
STEP_FIELDS = ("verdict", "ratio", "ratio_low", "ratio_high", "reason", "code_changed", "by_pairs", "partner",
               "relative", "relative_low", "relative_high", "phases_apart", "despite")


def _json(all_series, found, followers, page: str) -> dict:
    point = lambda p: {"run_id": p.run_id, "commit": p.sha, "dirty": p.dirty, "time": p.time,  # noqa: E731
                       "median_s": p.median_s, "ci_lo_s": p.ci_lo_s, "ci_hi_s": p.ci_hi_s}
    cell = lambda s: {**s.cell, "machine": s.machine}  # noqa: E731
    steps = [{**cell(st.series), "before": st.before.sha or st.before.run_id, "after": st.after.sha or st.after.run_id,
              **{k: getattr(st.change, k) for k in STEP_FIELDS}} for st in found]
    follows = [{**cell(f.series), "probe": f.probe, "rho": f.rho, "q": f.q,
                "readings": [{"median_s": t, "probe": v} for t, v in f.readings]} for f in followers]
    return {"page": page, "steps": steps, "follows": follows,
            "series": [{**cell(s), "git_ordered": s.git_ordered, "points": [point(p) for p in s.points]}
                       for s in all_series]}

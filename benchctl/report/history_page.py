"""The history page: a chart per operator pass (history_chart.py), the steps found, newest first, and
every commit with its date and message, as `index.html` with the charts embedded (as the report's page).
"""

from __future__ import annotations

import base64
import html
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from benchctl.report import charts
from benchctl.report.contents import Doing, section_title, unseen
from benchctl.report.drawing import Drawer, Job
from benchctl.report.follows_chart import follows_figure
from benchctl.report.history_chart import history_figure
from benchctl.report.render import CSS, html_table, slug
from benchctl.results.commits import Commit
from benchctl.results import storage
from benchctl.analysis import follows
from benchctl.analysis.compare import KEY, machine_kinds
from benchctl.analysis.comparison import time_change
from benchctl.analysis.history import Series
from benchctl.analysis.steps import Step, by_code, summary

FOLDER = "history"  # the page's folder under the results root, beside the run folders
CHART_KEY = ("op", "target", "device", "pass")


def default_folder(runs: Sequence[Path], root: Path) -> Path:
    """Where the page goes: beside the run folders (the first run's results folder, or the folder of
    runs given), else under `root`."""
    if not runs:
        return Path(root) / FOLDER
    first = Path(runs[0]).resolve()
    first = first.parent if first.is_file() else first
    return (first.parent if storage.meta_file(first) else first) / FOLDER


def chart_groups(series: Sequence[Series]) -> dict[tuple[str, ...], list[Series]]:
    """Series by chart: operator, target, device, pass and machine kind."""
    groups: dict[tuple[str, ...], list[Series]] = {}
    for s in series:
        groups.setdefault((*(s.cell[k] for k in CHART_KEY), s.machine), []).append(s)
    return groups


def change_text(step: Step) -> str:
    """The change the verdict rests on: the median's, or where the pairs gave it, the time against the partner."""
    c = step.change
    if c.by_pairs:
        return f"{time_change(c.relative, c.relative_low, c.relative_high)} against {c.partner}"
    return "" if c.ratio is None else time_change(c.ratio, c.ratio_low, c.ratio_high)


def steps_table(found: Sequence[Step], said: Mapping[str, Commit]) -> pd.DataFrame:
    return pd.DataFrame([{"cell": s.series.name(), "machine": s.series.machine, "before": s.before.label,
                          "after": s.after.label, "message": _subject(s.after.sha, said),
                          "change [95% interval]": change_text(s), "verdict": s.words()} for s in found],
                        columns=["cell", "machine", "before", "after", "message", "change [95% interval]", "verdict"])


def commits_table(series: Sequence[Series], said: Mapping[str, Commit]) -> pd.DataFrame:
    seen: dict[str, dict[str, str]] = {}
    for s in series:
        for p in s.points:
            seen.setdefault(p.label, {"commit": p.label, "date": said[p.sha].time if p.sha in said else p.time,
                                      "message": _subject(p.sha, said), "runs": ""})
            runs = seen[p.label]["runs"].split(", ") if seen[p.label]["runs"] else []
            seen[p.label]["runs"] = ", ".join(runs + [p.run_id] if p.run_id not in runs else runs)
    ordered = sorted(seen.values(), key=lambda r: r["date"], reverse=True)
    return pd.DataFrame(ordered, columns=["commit", "date", "message", "runs"])


def _subject(sha: str | None, said: Mapping[str, Commit]) -> str:
    return said[sha].subject if sha in said else ""


def build(series: Sequence[Series], found: Sequence[Step], said: Mapping[str, Commit], out_dir: Path,
          doing: Doing = unseen, followers: Sequence[follows.Follows] | None = None,
          drawer: Drawer | None = None) -> Path:
    """Write `out_dir/index.html` (and each chart's PNG and SVG under figures/); its path. `doing` is told how many
    charts are drawn; `followers` are the series' that follow the machine (follows.follows, worked out here where not
    given); `drawer` draws the charts (drawing.py; default: in this process)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    body = [f"<h1>benchctl history</h1><p>Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}. "
            f"{len(series)} series, {len({p.run_id for s in series for p in s.points})} runs. "
            f"{html.escape(summary(found), quote=False) if found else 'No steps'}.</p>",
            "<h2>Steps, newest first</h2>", *_steps(found, said),
            *_follows_section(follows.follows(series) if followers is None else followers, len(series), out_dir)]
    groups = chart_groups(series)
    titles = {key: section_title(key[0], key[1], key[4]) for key in groups}
    jobs = [Job(history_figure, (group, [s for s in found if any(s.series is g for g in group)], titles[key]),
                out_dir / "figures" / slug(*key, "history")) for key, group in groups.items()]
    drawn = (drawer or Drawer()).draw(jobs, lambda done, total: doing(f"history: drawing the charts ({done} of "
                                                                     f"{total} done)"))
    for (key, title), paths in zip(titles.items(), drawn):
        heading = f"{title}: {charts.panel_title(key[2], key[3])}"
        body += [f'<h2 id="{slug(*key)}">{html.escape(heading)}</h2>', _img(paths, out_dir, f"{title} history")]
    body += ["<h2>Commits</h2>", html_table(commits_table(series, said))]
    index = out_dir / "index.html"
    index.write_text("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>benchctl history</title>"
                     f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n", encoding="utf-8")
    return index


def _steps(found: Sequence[Step], said: Mapping[str, Commit]) -> list[str]:
    """The steps where the cell's code changed (or a side does not record it) in a table; those at commits that did
    not touch the cell's code, the machine's or the software's around it, folded under one line: on a VM whose
    speed moves they are most of the steps, and none is the code's."""
    code, machine = by_code(found)
    out = [html_table(steps_table(code, said)) if code else "<p>None where the cell's code changed.</p>"]
    if machine:
        out.append(f"<details><summary>{len(machine)} at commits that did not touch the cell's code (the machine, or "
                   f"the software around it, moved it)</summary>{html_table(steps_table(machine, said))}</details>")
    return out


def follows_table(found: Sequence[follows.Follows]) -> pd.DataFrame:
    return pd.DataFrame([{"cell": f.series.name(), "machine": f.series.machine, "follows": f.probe,
                          "rho": f"{f.rho:+.2f}", "runs": len(f.readings), "slowest / fastest": f"{f.spread:.2f}x",
                          "fastest and slowest": f.runs_text()} for f in found],
                        columns=["cell", "machine", "follows", "rho", "runs", "slowest / fastest",
                                 "fastest and slowest"])


def _follows_section(found: Sequence[follows.Follows], series: int, out_dir: Path) -> list[str]:
    """The cells whose time follows the machine across their runs of the same code (follows.py), drawn and listed;
    nothing where none does."""
    figure = follows_figure(found)
    if figure is None:
        return []
    paths = charts.save(figure, out_dir / "figures" / "follows")
    return ["<h2>What moved the cells between runs of the same code</h2>",
            f"<p>{html.escape(follows.line(found, series) or '', quote=False)}.</p>",
            _img(paths, out_dir, "the machine's probes", "time against the machine's probe"),
            html_table(follows_table(found))]


def _img(paths: list[Path], out_dir: Path, title: str, caption: str = "time against commit") -> str:
    data = base64.b64encode(paths[0].read_bytes()).decode("ascii")
    links = " · ".join(f'<a href="{html.escape(p.relative_to(out_dir).as_posix())}">{p.suffix[1:].upper()}</a>'
                       for p in paths)
    return (f'<figure><img alt="{html.escape(title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{caption} · {links}</figcaption></figure>")


def for_run(run_dir: Path, threshold: float = 0.05, alpha: float = 0.05, doing: Doing = unseen,
            drawer: Drawer | None = None) -> Path | None:
    """The history page of a run's cells, built beside the run folders from the runs of the same machine
    kind in its results folder (those cells only); None when the run is the only one of its kind there.
    `doing` is told each step as it starts; `drawer` draws the charts."""
    from benchctl.analysis import history, steps

    root = Path(run_dir).resolve().parent
    doing(f"history: reading the runs in {root}")
    rows = history.load([root])
    ours = rows["run_id"] == Path(run_dir).name
    cells = pd.MultiIndex.from_frame(rows[list(KEY)].astype(str))
    rows = rows[cells.isin(cells[ours.to_numpy()]) & machine_kinds(rows).isin(set(machine_kinds(rows[ours])))]
    if rows["run_id"].nunique() < 2:
        return None
    all_series = history.series(rows)
    doing(f"history: finding the steps in {len(all_series)} series")
    found = steps.all_steps(all_series, threshold, alpha)
    return build(all_series, found, history.messages(all_series), root / FOLDER, doing, drawer=drawer)

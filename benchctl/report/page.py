"""The report: charts, a table per operator and the run's environment, as `index.html` and `summary.md`.

This module builds it: the rows to show (the latest of each cell, by machine kind where a run spans
several), a section per operator and target with its charts and tables, then the pages (render.py).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from benchctl.report import charts, machine_chart, profiles, roofline, working_set
from benchctl.report.contents import Doing, Report, Section, section_title, unseen
from benchctl.report.drawing import Drawer, Job
from benchctl.report.render import render_html, render_markdown, slug
from benchctl.report.fastest import answers
from benchctl.report.tables import environment, failure_table, legend, op_table
from benchctl.results import storage
from benchctl.analysis import run_notes
from benchctl.analysis.compare import KEY, machine_kinds
from benchctl.analysis.at_speed import with_earlier
from benchctl.analysis.absent import absent, present
from benchctl.errors import UsageError


@dataclass(frozen=True)
class Loaded:
    rows: pd.DataFrame
    metas: list[dict[str, Any]]  # the metadata of every run folder the rows came from
    folders: list[Path]


def load_results(paths: Sequence[Path | str], root: Path | str = "results") -> Loaded:
    folders = storage.run_folders(paths, root)
    rows = storage.load([Path(p) for p in paths] or folders, root)
    return Loaded(rows, storage.run_metas(folders), folders)


def default_out_dir(folders: Sequence[Path], root: Path | str = "results") -> Path:
    """`<run>/_report` for one run, so the report travels with its data (the underscore keeps the run
    folder a parquet dataset); else a new dated folder."""
    if len(folders) == 1:
        return Path(folders[0]) / storage.REPORT_DIR
    return Path(root) / f"report-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}"


def select_ops(rows: pd.DataFrame, ops: Sequence[str] = ()) -> pd.DataFrame:
    present = sorted(rows["op"].dropna().unique())
    if not present:
        raise UsageError("these results hold no rows")
    missing = [op for op in ops if op not in present]
    if missing:
        raise UsageError(f"no results for {', '.join(map(repr, missing))}; these results have: {', '.join(present)}")
    return rows[rows["op"].isin(ops)] if ops else rows


def check_baselines(rows: pd.DataFrame, wanted: Mapping[str, str]) -> None:
    """Each --baseline must name an operator and an implementation these results hold: a typo would measure
    the speedups against another baseline without a word. ("*" is every operator.)"""
    for op, impl in wanted.items():
        for what, name, column in (("operator", op, "op"), ("implementation", impl, "impl")):
            present = sorted(rows[column].dropna().astype(str).unique())
            if name != "*" and name not in present:
                raise UsageError(f"--baseline {impl if op == '*' else f'{op}={impl}'!r}: no results for {what} "
                                 f"{name!r}; these results have: {', '.join(present)}")


def by_machine(rows: pd.DataFrame) -> pd.Series:
    """The kind of machine of each row when the rows span several kinds for one device (a sweep over a
    cluster of A100 and H100 nodes), so each kind gets its own charts; else "" for every row."""
    kinds = machine_kinds(rows)
    several = kinds.groupby(rows["device"]).transform("nunique") > 1
    return kinds.where(several, "")


def _section(rows: pd.DataFrame, op: str, target: str, out_dir: Path, requested: str | None,
             peaks: Mapping[str, Mapping[str, float]], machine: str = "") -> tuple[Section, dict[str, Job]]:
    """A section without its figures, and the jobs that draw them, by kind (time, speedup, roofline)."""
    title = section_title(op, target, machine)
    lines = absent(rows)
    rows = present(rows, lines)
    baseline, note = charts.resolve_baseline(rows["impl"].dropna(), requested)
    stem = out_dir / "figures" / slug(op, target, *([machine] if machine else []))
    jobs = {"time": Job(charts.timing_figure, (rows, title), Path(f"{stem}-time")),
            "speedup": Job(charts.speedup_figure, (rows, title, baseline), Path(f"{stem}-speedup")),
            "roofline": Job(roofline.roofline_figure, (rows, title, peaks), Path(f"{stem}-roofline"))}
    table = op_table(rows, baseline)
    return Section(op, target, title, baseline, note, {}, table, failure_table(rows), tuple(a.line() for a in lines),
                   legend(table, baseline), answers(rows, baseline)), jobs


def _sections(rows: pd.DataFrame, out_dir: Path, baseline: Callable[[str], str | None],
              peaks: Mapping[str, Mapping[str, float]], doing: Doing) -> list[tuple[Section, dict[str, Job]]]:
    """A section per operator, target and machine kind, each with the baseline asked for it (or None), and the jobs
    that draw its figures."""
    groups = rows.groupby(["op", "target", "machine"], sort=True)
    sections = []
    for i, ((op, target, machine), part) in enumerate(groups, start=1):
        doing(f"reading {op}'s rows ({i} of {groups.ngroups})")
        sections.append(_section(part, str(op), str(target), out_dir, baseline(str(op)), peaks, str(machine)))
    return sections


def _drawn(sections: list[tuple[Section, dict[str, Job]]], machine: list[Job], drawer: Drawer,
           doing: Doing) -> tuple[list[Section], list[list[Path]]]:
    """Every figure of the page in one batch: the sections with theirs (by kind, those drawn), and the machine's."""
    jobs = [job for _, some in sections for job in some.values()] + machine
    paths = iter(drawer.draw(jobs, lambda done, total: doing(f"drawing the charts ({done} of {total} done)")))
    drawn = [replace(s, figures={kind: found for kind in some if (found := next(paths))}) for s, some in sections]
    return drawn, list(paths)


def measured_peaks(rows: pd.DataFrame, metas: Sequence[Mapping[str, Any]] = ()) -> dict[str, dict[str, Any]]:
    """Peak GB/s and GFLOP/s per device (and the cache levels' GB/s), as `benchctl run` stored them in
    metadata from the machine's calibration; {} when the rows have no rates to compare with them."""
    if not rows["gbps"].notna().any():
        return {}
    found = [storage.meta_fact(m, "peaks") for m in metas]
    peaks: dict[str, dict[str, Any]] = {}
    for by_device in (f for f in found if isinstance(f, dict)):
        for device, values in by_device.items():
            if isinstance(values, dict):
                peaks.setdefault(device, {}).update({k: float(v) if isinstance(v, (int, float)) else v
                                                     for k, v in values.items() if v})
    return peaks


def stored_references(metas: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each operator's reference implementation as `benchctl run` stored it in its metadata (the default
    baseline: naflex_posembed has no `py`, its seed's baseline is `loop`); later runs win."""
    found: dict[str, str] = {}
    for refs in (storage.meta_fact(m, "references") for m in metas):
        if isinstance(refs, dict):
            found.update({str(op): str(impl) for op, impl in refs.items()})
    return found


def build(rows: pd.DataFrame, out_dir: Path, metas: Sequence[Mapping[str, Any]] = (),
          baselines: Mapping[str, str] | None = None, ops: Sequence[str] = (),
          peaks: Mapping[str, Mapping[str, float]] | None = None, history: Path | None = None,
          profiles_root: Path | None = None, earlier: pd.DataFrame | None = None, doing: Doing = unseen,
          drawer: Drawer | None = None) -> Report:
    """Charts for every operator and target in `rows`, then index.html and summary.md in `out_dir`; with
    `profiles_root`, the profiles of those operators found under it; with `earlier` (the rows of the runs before
    them, analysis/repeat.py), each speedup measured before drawn with the earlier runs' beside it. `doing` is
    told each step as it starts; `drawer` draws the figures (drawing.py; default: in this process)."""
    wanted = dict(baselines or {})  # "*" applies to every operator without its own entry
    selected = select_ops(rows, ops)
    check_baselines(rows, wanted)
    rows, superseded = latest_only(selected.assign(target=lambda d: d["target"].fillna("op").astype(str)))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    references = stored_references(metas)
    peaks = measured_peaks(rows, metas) if peaks is None else peaks
    rows = with_earlier(rows.assign(machine=by_machine(rows)), earlier)
    drawer = drawer or Drawer()
    made = _sections(rows, out_dir, lambda op: wanted.get(op, wanted.get("*", references.get(op))), peaks, doing)
    figures = out_dir / "figures"
    sections, (machine, load, by_size) = _drawn(made, [
        Job(machine_chart.bandwidth_figure, (rows, peaks.get("cpu", {}).get("read_gbps")),
            figures / "machine-bandwidth"),
        Job(machine_chart.load_figure, (rows, list(metas)), figures / "machine-load"),
        Job(working_set.working_set_figure, (rows, peaks), figures / "working-set")], drawer, doing)
    for asked in (s for s in sections if s.note and (s.op in wanted or "*" in wanted)):
        warnings.warn(f"{asked.title}: {asked.note}", stacklevel=2)
    statuses = {str(k): int(v) for k, v in rows["status"].fillna("missing").value_counts().items()}
    # each run's facts from all its rows: a run whose cells a later run measured again shows none in the tables
    report = Report(out_dir, sections, environment(selected, metas), statuses,
                    datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), superseded=superseded,
                    machine=machine, load=load, working_set=by_size,
                    history=history,
                    profiles=profiles.find(profiles_root, set(rows["op"])) if profiles_root is not None else [],
                    notes=tuple(run_notes.notes(rows, metas, earlier=earlier)))
    pages = {out_dir / "index.html": render_html(report), out_dir / "summary.md": render_markdown(report)}
    for path, text in pages.items():
        path.write_text(text, encoding="utf-8")
    return replace(report, pages=list(pages))


def latest_only(rows: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """One row per cell when merged runs repeat one (a re-run after a fix): the latest run's row, since
    run ids sort by start time; and how many older rows were dropped. The same cell on another kind of
    machine is another cell."""
    kept = storage.latest(rows.assign(_machine=machine_kinds(rows)), [*KEY, "_machine"]).drop(columns="_machine")
    return kept, len(rows) - len(kept)



"""Every cell's time across runs: one series per cell (operator, target, implementation, device, dtype,
params, pass) and kind of machine, one point per run, ordered by the commit of the measured code.

Runs of different machine kinds are separate series, never mixed (the rule `compare` follows). The order
is git's (ancestors first) where the repository the rows name is at hand and knows every commit; else the
commits' dates, and the run's time for a row without a commit. The steps in each series are found in
steps.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from benchctl.errors import UsageError
from benchctl.results import commits, storage
from benchctl.analysis.compare import KEY, machine_kinds
from benchctl.analysis.timed_alike import thread_kinds, timing_kinds
from benchctl.results.params import params_order, params_text
from benchctl.vocab import SHOWN_ORDER, Status

FILTERS = {"op": "op", "impl": "impl", "pass_name": "pass", "device": "device"}  # select() keyword -> column


@dataclass(frozen=True)
class Point:
    """One run's measurement of a cell."""

    run_id: str
    sha: str | None  # the measured code's commit (code_sha), None for rows that do not record it
    dirty: bool
    time: str  # the commit's date, else the run's time
    median_s: float
    ci_lo_s: float
    ci_hi_s: float
    row: dict[str, Any] = field(compare=False, repr=False)  # its row's columns

    @property
    def label(self) -> str:
        """The short commit (`*` when the tree had uncommitted changes), else the run id."""
        return f"{self.sha[:8]}{'*' if self.dirty else ''}" if self.sha else self.run_id


@dataclass(frozen=True)
class Series:
    key: tuple[str, ...]  # KEY's values
    machine: str
    points: tuple[Point, ...]
    repo: str | None = None  # the repository its commits come from, when every point names the same one
    git_ordered: bool = False  # in git's order (else by date)

    @property
    def cell(self) -> dict[str, str]:
        return dict(zip(KEY, self.key))

    def latest_code(self) -> tuple[Point, ...]:
        """The runs of its latest code: those whose code digest (`impl_code`) is the last run's (the last run alone
        where it has none), left alone or not."""
        code = self.points[-1].row.get("impl_code")
        if not isinstance(code, str):
            return self.points[-1:]
        return tuple(p for p in self.points if p.row.get("impl_code") == code)

    def name(self) -> str:
        """`silu py cpu float32 batch_size=8 dim=4096 forward`: the params as KEY=VALUE, to fit a table."""
        c = self.cell
        op = c["op"] if c["target"] in ("op", "") else f"{c['op']}/{c['target']}"
        return f"{op} {c['impl']} {c['device']} {c['dtype']} {params_text(c['params'])} {c['pass']}"


def load(paths: Sequence[Path | str] = (), root: Path | str = "results") -> pd.DataFrame:
    """Rows of the runs given, or of every run under `root`."""
    try:
        return storage.load(list(paths) or [Path(root)])
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None


def select(rows: pd.DataFrame, **wanted: Sequence[str]) -> pd.DataFrame:
    """Rows matching every filter given (op, impl, pass_name, device: each a list of accepted values)."""
    for option, values in wanted.items():
        if values:
            rows = rows[rows[FILTERS[option]].isin(list(values))]
    return rows


def unmatched(rows: pd.DataFrame, **wanted: Sequence[str]) -> str:
    """Why `select(rows, **wanted)` leaves no timed cell: the first filter that none of the timed cells left
    by the filters before it meets, and what those cells hold for it; '' when some cell is left."""
    timed = rows[rows["status"] == Status.OK] if "status" in rows else rows.iloc[:0]
    if timed.empty:
        return "these runs hold no timed cells"
    for option, values in wanted.items():
        column = timed[FILTERS[option]]
        kept = timed[column.isin(list(values))] if values else timed
        if kept.empty:
            held = ", ".join(sorted(column.dropna().astype(str).unique()))
            return f"no timed cell has --{option.split('_')[0]} {','.join(values)!r} (it could match {held})"
        timed = kept
    return ""


def series(rows: pd.DataFrame) -> list[Series]:
    """One series per cell, machine kind and way of timing (eager, CUDA-graph replays, L2 flushed; a CPU cell's
    count of torch's threads), from the timed rows; a run that measured a cell twice gives its last row."""
    timed = rows[rows["status"] == Status.OK].copy()
    if timed.empty:
        return []
    timed = timed.assign(**{k: timed[k].fillna("").astype(str) for k in KEY},
                         _machine=machine_kinds(timed) + timing_kinds(timed))
    threads = thread_kinds(timed)  # named only where a cell was given other counts in other runs
    several = timed.assign(_threads=threads).groupby([*KEY, "_machine"])["_threads"].transform("nunique") > 1
    timed = timed.assign(_machine=timed["_machine"] + threads.where(several, ""))
    timed = storage.latest(timed, [*KEY, "_machine", "run_id"])
    places = _git_places(timed)
    records = dict(zip(timed.index, timed.to_dict("records")))  # each row's columns, read out once for all series
    groups = timed.groupby([*KEY, "_machine"]).groups
    return [_series(tuple(key[:-1]), key[-1], [records[i] for i in groups[key]], places)
            for key in sorted(groups, key=_shown)]


def _shown(key: tuple[str, ...]) -> tuple:
    """A series' place in a table: by operator, implementation, device (CPU first), dtype, params (numbers by
    value), pass (forward first) and machine."""
    c, last = dict(zip(KEY, key)), len(SHOWN_ORDER)
    return (c["op"], c["target"], c["impl"], SHOWN_ORDER.get(c["device"], last), c["device"], c["dtype"],
            params_order(c["params"]), SHOWN_ORDER.get(c["pass"], last), c["pass"], key[-1])


def _git_places(rows: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Each repository's order of the commits its rows measured (commits.git_order), asked once a repository,
    not once a series: 150 series of one repository read its history in 1.0 s."""
    shas = rows.get("code_sha", pd.Series(index=rows.index, dtype=object)).map(_text)
    repos = rows.get("code_repo", pd.Series(index=rows.index, dtype=object)).map(_text)
    return {repo: commits.git_order(repo, list(shas[repos == repo].dropna()))
            for repo in repos.dropna().unique() if Path(repo).is_dir()}


def _series(key: tuple[str, ...], machine: str, rows: list[dict[str, Any]],
            places: dict[str, dict[str, int]]) -> Series:
    points = [_point(r) for r in rows]
    repos = {_text(p.row.get("code_repo")) for p in points}
    repo = repos.pop() if len(repos) == 1 else None
    place = places.get(repo, {}) if repo else {}
    git_ordered = bool(place) and all(p.sha in place for p in points)
    if git_ordered:
        points.sort(key=lambda p: (place[p.sha], _text(p.row.get("timestamp")) or "", p.run_id))
    else:
        points.sort(key=lambda p: (p.time, _text(p.row.get("timestamp")) or "", p.run_id))
    return Series(key, machine, tuple(points), repo, git_ordered)


def _point(row: dict[str, Any]) -> Point:
    median = float(row["median_s"])
    lo, hi = (_number(row.get(k)) for k in ("ci_lo_s", "ci_hi_s"))
    return Point(str(row["run_id"]), _text(row.get("code_sha")), bool(_present(row.get("code_dirty"))),
                 _text(row.get("code_time")) or _text(row.get("timestamp")) or "", median,
                 lo if lo is not None else median, hi if hi is not None else median, row)


def _present(value: Any) -> Any:
    return None if value is None or (not isinstance(value, (list, tuple)) and pd.isna(value)) else value


def _text(value: Any) -> str | None:
    value = _present(value)
    return str(value) if value not in (None, "") else None


def _number(value: Any) -> float | None:
    value = _present(value)
    return float(value) if value is not None else None


def messages(all_series: Sequence[Series]) -> dict[str, commits.Commit]:
    """Date and subject of every commit the series name, from the repositories at hand."""
    by_repo: dict[str, set[str]] = {}
    for s in all_series:
        for p in s.points:
            repo = _text(p.row.get("code_repo"))
            if p.sha and repo and Path(repo).is_dir():
                by_repo.setdefault(repo, set()).add(p.sha)
    return {sha: c for repo, shas in by_repo.items() for sha, c in commits.describe(repo, shas).items()}

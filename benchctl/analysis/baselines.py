"""Saved baselines: under one name, one run per kind of machine (its CPU model and GPU model), so CI can
ask "slower than the saved baseline on this GPU?" and never holds an H100 run against an A100 one.

`baseline save NAME [RUN]` copies the run folder to `<root>/baselines/NAME/<machine kind>/` (saving the
same kind again replaces it); `compare --baseline NAME NEW` picks the one of NEW's kind.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from benchctl.errors import UsageError
from benchctl.analysis.machine_lines import busy_through
from benchctl.results import storage
from benchctl.results.schema import beside_work
from benchctl.vocab import Device, Status

FOLDER = "baselines"
BASELINE_PROCESSES = 3  # worker processes a baseline's cells come from, at least (run --processes)
ABOUT = "baseline.json"
ABOUT_KEYS = ("name", "kind", "run", "saved")  # what `save` writes there, each a string
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def machine_kind(rows: pd.DataFrame) -> str:
    """The CPU model of a run's rows, and the GPU model of its cuda rows: "EPYC 7B13 + NVIDIA H100"."""
    def names(column: str, where: pd.Series) -> list[str]:
        return sorted({str(v) for v in rows.loc[where, column].dropna() if str(v)}) if column in rows else []

    everywhere = pd.Series(True, index=rows.index)
    kinds = names("cpu_name", everywhere) + names("gpu_name", rows["device"] == Device.CUDA)
    return " + ".join(kinds) or "unknown machine"


def _slug(kind: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", kind).strip("-") or "unknown"


def _checked(name: str) -> str:
    if not NAME.fullmatch(name):
        raise UsageError(f"baseline name {name!r}: use letters, digits, '.', '_' and '-'")
    return name


def save(name: str, run_dir: Path, root: Path) -> dict[str, Any]:
    """Copy `run_dir` (without its report) as NAME's baseline for the run's machine kind; what `saved`
    lists for it."""
    _checked(name)
    rows = storage.load_run(run_dir)  # first: a part that holds no results says so
    if rows.empty:
        raise UsageError(f"no results in {run_dir} to keep as a baseline")
    changed = storage.changed_parts(run_dir)
    if changed:  # a baseline holds every later run to it
        raise UsageError(f"{run_dir} is not as benchctl wrote it ({changed[0]}): not kept as a baseline")
    _replicated(rows, run_dir)
    _quiet(rows, run_dir)
    kind = machine_kind(rows)
    dest = Path(root) / FOLDER / name / _slug(kind)
    if dest.resolve() in [Path(run_dir).resolve(), *Path(run_dir).resolve().parents]:  # replacing it would delete it
        raise UsageError(f"{run_dir} is inside baseline {name}'s folder for {kind} ({dest}): it is kept there already")
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(run_dir, dest, ignore=shutil.ignore_patterns(storage.REPORT_DIR, "report", "report-*"))
    about = {"name": name, "kind": kind, "run": Path(run_dir).name,
             "saved": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    (dest / ABOUT).write_text(json.dumps(about, indent=1))
    return {**about, "path": dest}


def _replicated(rows: pd.DataFrame, run_dir: Path) -> None:
    """A baseline is what every later run is judged against: its cells must come from BASELINE_PROCESSES
    worker processes at least, so that a process that landed in a slow mode shows as a spread. A run asked
    for as many whose busy machine left some cells' samples from fewer is refused for that reason."""
    timed = rows[rows["status"] == Status.OK]
    processes = timed["processes"].fillna(1) if "processes" in timed else pd.Series(1, index=timed.index)
    short = int((processes < BASELINE_PROCESSES).sum())
    if not short:
        return
    asked = int(_meta(run_dir).get("processes") or 1)
    if asked < BASELINE_PROCESSES:
        raise UsageError(f"{run_dir} measured its cells in {asked} process(es); a baseline keeps "
                         f"{BASELINE_PROCESSES} at least: run it with --processes {BASELINE_PROCESSES}")
    raise UsageError(f"{short} of the {len(timed)} timed cells of {run_dir} kept samples from fewer than "
                     f"{BASELINE_PROCESSES} processes (the others' were set aside as disturbed): a baseline "
                     "keeps a run measured with nothing else running")


def _quiet(rows: pd.DataFrame, run_dir: Path) -> None:
    """A baseline is measured with nothing else running: a run whose metadata says other work kept cores busy
    through a stretch of it (`busy_stretch`, sweep/session.py) is refused, though its rows may all read clean:
    beside a compile that came and went, one of lstm_cell's passes read 0.339 ms against 0.213 ms quiet; so is
    a run with a pass timed beside other work (`busy`) still after its re-measurement."""
    stretch = _meta(run_dir).get("busy_stretch")
    if stretch:
        raise UsageError(f"{busy_through(stretch)} {run_dir}: a baseline keeps a run measured with nothing else "
                         "running")
    timed = rows[rows["status"] == Status.OK]
    busy = int(timed.apply(beside_work, axis=1).sum()) if len(timed) else 0
    if busy:
        raise UsageError(f"{busy} of the {len(timed)} timed passes of {run_dir} were timed beside other work "
                         "(`busy`): a baseline keeps a run measured with nothing else running")


def _meta(run_dir: Path) -> dict[str, Any]:
    """The run's metadata, which a baseline is judged by: a run without it readable is not kept."""
    try:
        return storage.run_meta(run_dir)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the metadata of {run_dir} ({exc}): not kept as a baseline") from None


def saved(root: Path, name: str | None = None) -> list[dict[str, Any]]:
    """What is saved (of NAME, or of every name): name, kind, run, saved, and the folder. A record that cannot be
    read is skipped with a warning naming it."""
    base = Path(root) / FOLDER
    found = sorted(base.glob(f"{_checked(name) if name else '*'}/*/{ABOUT}"))
    return [about for about in map(_about, found) if about is not None]


def _about(path: Path) -> dict[str, Any] | None:
    """A baseline's record (`ABOUT`), with its folder; None, with a warning, where it is damaged."""
    try:
        about = json.loads(path.read_text())
    except (OSError, ValueError):
        about = None
    if not isinstance(about, dict) or not all(isinstance(about.get(key), str) for key in ABOUT_KEYS):
        warnings.warn(f"skipping {path}: not a baseline's record ({', '.join(ABOUT_KEYS)})", stacklevel=2)
        return None
    return {**about, "path": path.parent}


def find(name: str, rows: pd.DataFrame, root: Path, any_kind: bool = False) -> dict[str, Any]:
    """NAME's baseline for the machine kind of `rows`; with `any_kind`, the newest of any kind when
    there is none of this one."""
    kind, known = machine_kind(rows), saved(root, name)
    if not known:
        raise UsageError(f"no baseline named {name} under {Path(root) / FOLDER}: save one with "
                         f"`benchctl baseline save {name}`")
    same = [b for b in known if b["kind"] == kind]
    if same:
        return same[0]
    if any_kind:
        return max(known, key=lambda b: b["saved"])
    raise UsageError(f"baseline {name} has no run on {kind} (saved for: {', '.join(b['kind'] for b in known)}); "
                     "pass --across-hosts to compare with another kind of machine")

"""Results on disk: one folder per run, one parquet file per finished cell (one in all once the run is complete),
loaded as one DataFrame.

A run folder reads as a parquet dataset as it is (`pd.read_parquet(folder)`): its metadata is `_run.json`,
its report goes to `_report/` and files being written are hidden (`.name.tmp`), so dataset readers skip
them all. Older runs, whose metadata is `run.json`, are still read.

Writing a small file per cell (atomically: write a hidden temp file, then rename) means an interrupted or
crashed sweep keeps everything measured so far, and two runs writing into the same results folder
never touch each other's files. Loaders skip a corrupt or partial file with a warning naming it, and a
part a finished run does not list as written (guard.py holds the folder to what benchctl wrote). The metadata
names the process writing the run (run_state.py). A disk that fills up is one clear error; every part
written before stays.
"""

from __future__ import annotations

import errno
import json
import os
import uuid
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from benchctl.errors import BenchError
from benchctl.results import compaction, guard, run_state
from benchctl.results.schema import COLUMNS, SCHEMA, SCHEMA_VERSION, conformed
from benchctl.vocab import RunState

RUN_FILE = "_run.json"  # leading underscore: parquet dataset readers skip it
LEGACY_RUN_FILE = "run.json"  # what runs written before were called; still read
REPORT_DIR = "_report"  # a run's report, inside its folder
PROFILES_DIR = "profiles"  # `benchctl profile`'s folders, one per profile, inside the results folder
PROFILE_MANIFEST = "profile.json"  # what was profiled, how, its files and tables (profile/profilers.py)


class ResultsNotWritten(BenchError):
    """The run folder cannot take another file (a full disk, a read-only mount); what was written stays."""


def meta_file(run_dir: Path) -> Path | None:
    """The metadata file of a run folder (either name), or None when it is not a run folder."""
    for name in (RUN_FILE, LEGACY_RUN_FILE):
        if (Path(run_dir) / name).is_file():
            return Path(run_dir) / name
    return None


def new_run_id() -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{uuid.uuid4().hex[:6]}"


class RunWriter:
    """Owns one run folder: `_run.json` (metadata, state, the writing process) and `part-NNNNN.parquet`
    per written batch."""

    def __init__(self, root: Path, run_id: str, meta: dict[str, Any]):
        self.dir = Path(root) / run_id
        self.dir.mkdir(parents=True, exist_ok=False)
        self.run_id = run_id
        self.meta = {**meta, "run_id": run_id, "schema_version": SCHEMA_VERSION, "state": RunState.RUNNING,
                     "writer": run_state.this_process()}
        self.parts = 0  # on disk now
        self._written = 0  # ever, which names the next part
        self.guard = guard.FolderGuard(self.dir)
        self._guarded(self._write_meta)

    def write(self, rows: Sequence[dict[str, Any]]) -> Path | None:
        if not rows:
            return None
        path = self.dir / f"part-{self._written + 1:05d}.parquet"
        rows = [{**r, "run_id": self.run_id, "schema_version": SCHEMA_VERSION} for r in rows]
        table = to_table(rows)
        self._guarded(lambda: compaction.write_atomically(table, path))
        self.guard.wrote_part(path, table)
        self._written += 1
        self.parts += 1
        return path

    def withdraw(self, written: Path | None) -> None:
        """Remove a part whose rows a later part replaces (a noisy cell measured again)."""
        if written is not None:
            self._guarded(lambda: written.unlink(missing_ok=True))
            self.guard.dropped_part(written)
            self.parts -= 1

    def look(self, during: str | None = None) -> list[str]:
        """What else changed the run folder (guard.py), put back, and kept in the metadata with what ran `during` it."""
        found: list[str] = []
        self._guarded(lambda: found.extend(self.guard.look()))
        if found:
            self.meta.setdefault(guard.TAMPERED, []).append({"during": during, "found": found})
        return found

    def compact(self) -> Path | None:
        """The run's parts merged into one file (compaction.py); a finished run's metadata lists the new digests."""
        merged = compaction.compact(self.dir)
        if merged is None:
            return None
        self.guard.merged_into(merged, pq.read_table(merged))
        if guard.DIGESTS in self.meta:
            self.meta[guard.DIGESTS] = self.guard.digests()
            self._guarded(self._write_meta)
        return merged

    def finish(self, state: RunState = RunState.COMPLETE, reason: str | None = None, compact: bool = False) -> None:
        """Mark the run's end and list its parts' digests, after a last look; best effort (any way out, a full disk).
        `compact` merges the parts after the look (what it merges is what benchctl wrote), before they are listed."""
        self.meta["state"] = state
        if reason:
            self.meta["reason"] = reason
        self.meta["finished"] = datetime.now(timezone.utc).isoformat()
        try:
            self.look(during="the end of the run")
        except ResultsNotWritten as exc:
            warnings.warn(str(exc), stacklevel=2)
        if compact:
            self.compact()
        self.meta[guard.DIGESTS] = self.guard.digests()
        try:
            self._write_meta()
        except OSError as exc:
            warnings.warn(f"cannot mark {self.dir} {state}: {exc.strerror or exc}", stacklevel=2)

    def _write_meta(self) -> None:
        text = json.dumps(self.meta, indent=2, default=str)
        compaction.replace_atomically(self.dir / RUN_FILE, lambda tmp: tmp.write_text(text))
        self.guard.wrote_meta(self.dir / RUN_FILE, text)

    def _guarded(self, write: Callable[[], object]) -> None:
        """Run `write`; an OS error (ENOSPC, EROFS, ...) becomes one line that says what is kept."""
        try:
            write()
        except OSError as exc:
            reason = exc.strerror or os.strerror(exc.errno or errno.EIO)
            raise ResultsNotWritten(f"cannot write results to {self.dir}: {reason}; the {self.parts} "
                                    "part(s) written before are kept") from None


def to_table(rows: Iterable[dict[str, Any]]) -> pa.Table:
    rows = list(rows)
    unknown = {k for r in rows for k in r} - set(COLUMNS)
    if unknown:
        raise ValueError(f"unknown result columns: {sorted(unknown)}")
    data = {name: [r.get(name) for r in rows] for name in COLUMNS}
    return pa.Table.from_pydict(data, schema=SCHEMA)


def run_dirs(root: Path) -> list[Path]:
    """Run folders under `root`, oldest first (run ids start with a UTC timestamp)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if meta_file(p)), key=lambda p: p.name)


def latest_run(root: Path) -> Path | None:
    runs = run_dirs(root)
    return runs[-1] if runs else None


def run_meta(run_dir: Path) -> dict[str, Any]:
    """A run's metadata; a run still marked running whose writer has died reads as `cut off`."""
    path = meta_file(run_dir)
    if path is None:
        raise FileNotFoundError(f"{run_dir} is not a run folder (no {RUN_FILE})")
    meta = json.loads(path.read_text())
    if not isinstance(meta, dict):
        raise ValueError(f"{path} holds a JSON {type(meta).__name__}, not a run's metadata")
    if meta.get("state") == RunState.RUNNING and run_state.writer_gone(meta.get("writer")):
        meta["state"] = RunState.CUT_OFF
    return meta


def latest(rows: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """The one rule for a cell that repeats: the row of the latest run (run ids sort by start time), and
    within a run the last written (a re-measurement supersedes the row before it). Rows keep their order."""
    ordered = rows.sort_values("run_id", kind="stable", na_position="first") if "run_id" in rows else rows
    return ordered.drop_duplicates(list(keys), keep="last").sort_index()


def read_results(path: Path) -> pa.Table | None:
    """The rows of one parquet file; None, with a warning naming it, where it is corrupt, partial or no results."""
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a truncated file
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        warnings.warn(f"skipping unreadable results file {path}: {first}", stacklevel=2)
        return None
    try:
        return conformed(table)
    except ValueError as exc:
        warnings.warn(f"skipping {path}: not a results file ({exc})", stacklevel=2)
        return None


def _frame(tables: Sequence[pa.Table]) -> pd.DataFrame:
    """Tables as one DataFrame; with none, an empty one with every column."""
    if not tables:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in COLUMNS})
    return pa.concat_tables(tables, promote_options="default").to_pandas()


def load_run(run_dir: Path) -> pd.DataFrame:
    """All rows of one run; part files that are corrupt, partial or not results, or that a finished run's
    metadata does not list as written (`changed_parts`), are skipped with a warning naming them."""
    listed, tables = _listed(Path(run_dir)), []
    for path in compaction.parts(Path(run_dir)):
        table = read_results(path)  # first: a file that is no results says so, whoever wrote it
        why = guard.unlisted(path, listed) if table is not None else None
        if why:
            warnings.warn(f"skipping {why}", stacklevel=2)
        elif table is not None:
            tables.append(table)
    return _frame(tables)


def changed_parts(run_dir: Path) -> list[str]:
    """Why each part of a finished run is not as benchctl wrote it (guard.unlisted), or is gone; empty: all are."""
    listed, parts = _listed(Path(run_dir)), compaction.parts(Path(run_dir))
    return [why for path in parts if (why := guard.unlisted(path, listed))] + guard.gone(run_dir, parts, listed)


def _listed(run_dir: Path) -> dict[str, str] | None:
    """The digests a finished run's metadata lists for its parts (None: none listed, or unreadable)."""
    try:
        listed = run_meta(run_dir).get(guard.DIGESTS)
    except (OSError, ValueError):
        return None
    return listed if isinstance(listed, dict) else None


def load(paths: Sequence[Path | str] = (), root: Path | str = "results") -> pd.DataFrame:
    """Rows of several runs merged. Each path is a run folder, a parquet file, or a folder of runs;
    with no paths, the latest run under `root` (a run not yet written to has no rows). A parquet file that
    holds no results is skipped with a warning; where paths were given and none holds any, FileNotFoundError
    says so."""
    frames = [_load_path(Path(p)) for p in paths or [_latest(root)]]
    if paths and all(frame.empty for frame in frames):
        raise FileNotFoundError(f"no results in {', '.join(map(str, paths))}")
    return pd.concat(frames, ignore_index=True)


def _latest(root: Path | str) -> Path:
    latest = latest_run(Path(root))
    if latest is None:
        raise FileNotFoundError(f"no runs found in {root}")
    return latest


def _load_path(path: Path) -> pd.DataFrame:
    if path.is_file():
        return _frame([t for t in [read_results(path)] if t is not None])
    if meta_file(path):
        return load_run(path)
    runs = run_dirs(path)
    if not runs:
        raise FileNotFoundError(f"no results in {path}")
    return pd.concat([load_run(r) for r in runs], ignore_index=True)


def run_folders(paths: Sequence[Path | str], root: Path | str = "results") -> list[Path]:
    """The run folders behind `paths` (run folders, parquet files inside one, or folders of runs);
    with no paths, the latest run under `root`."""
    if not paths:
        return [_latest(root).resolve()]
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_file():
            found += [path.parent] if meta_file(path.parent) else []
        elif meta_file(path):
            found.append(path)
        else:
            found += run_dirs(path)
    return list(dict.fromkeys(p.resolve() for p in found))


def run_metas(folders: Sequence[Path]) -> list[dict[str, Any]]:
    """The metadata of each folder; a damaged one is skipped with a warning (it loses the environment,
    not the results)."""
    metas = []
    for folder in folders:
        try:
            metas.append(run_meta(folder))
        except (OSError, ValueError) as exc:
            warnings.warn(f"cannot read the metadata of {folder}: {exc}", stacklevel=2)
    return metas


def meta_fact(meta: dict[str, Any], name: str) -> Any:
    """A fact from a run's metadata: at its top level or under "environment" (where `benchctl run` puts it)."""
    env = meta.get("environment")
    return meta.get(name) if meta.get(name) is not None else env.get(name) if isinstance(env, dict) else None

"""Results on disk: one folder per run, one parquet file per finished cell, loaded as one DataFrame.

Writing a small file per cell (atomically: write a temp file, then rename) means an interrupted or
crashed sweep keeps everything measured so far, and two runs writing into the same results folder
never touch each other's files. Loaders skip a corrupt or partial file with a warning naming it.
"""

from __future__ import annotations

import json
import os
import uuid
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from benchctl.results import compaction
from benchctl.results.schema import COLUMNS, SCHEMA, SCHEMA_VERSION

RUN_FILE = "run.json"


def new_run_id() -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{uuid.uuid4().hex[:6]}"


class RunWriter:
    """Owns one run folder: `run.json` (metadata, state) and `part-NNNNN.parquet` per written batch."""

    def __init__(self, root: Path, run_id: str, meta: dict[str, Any]):
        self.dir = Path(root) / run_id
        self.dir.mkdir(parents=True, exist_ok=False)
        self.run_id = run_id
        self.meta = {**meta, "run_id": run_id, "schema_version": SCHEMA_VERSION, "state": "running"}
        self.parts = 0
        self._write_meta()

    def write(self, rows: Sequence[dict[str, Any]]) -> Path | None:
        if not rows:
            return None
        self.parts += 1
        path = self.dir / f"part-{self.parts:05d}.parquet"
        tmp = path.with_suffix(".tmp")
        rows = [{**r, "run_id": self.run_id, "schema_version": SCHEMA_VERSION} for r in rows]
        pq.write_table(to_table(rows), tmp)
        os.replace(tmp, path)  # atomic: a reader never sees half a file
        return path

    def finish(self, state: str = "complete", reason: str | None = None) -> None:
        self.meta["state"] = state
        if reason:
            self.meta["reason"] = reason
        self.meta["finished"] = datetime.now(timezone.utc).isoformat()
        self._write_meta()

    def _write_meta(self) -> None:
        tmp = self.dir / (RUN_FILE + ".tmp")
        tmp.write_text(json.dumps(self.meta, indent=2, default=str))
        os.replace(tmp, self.dir / RUN_FILE)


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
    return sorted((p for p in root.iterdir() if (p / RUN_FILE).exists()), key=lambda p: p.name)


def latest_run(root: Path) -> Path | None:
    runs = run_dirs(root)
    return runs[-1] if runs else None


def run_meta(run_dir: Path) -> dict[str, Any]:
    return json.loads((Path(run_dir) / RUN_FILE).read_text())


def load_run(run_dir: Path) -> pd.DataFrame:
    """All rows of one run; corrupt or partial part files are skipped with a warning naming them."""
    tables = []
    for part in compaction.parts(Path(run_dir)):
        try:
            tables.append(pq.read_table(part))
        except Exception as exc:  # pyarrow raises several types for a truncated file
            warnings.warn(f"skipping unreadable results file {part}: {exc}", stacklevel=2)
    if not tables:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in COLUMNS})
    return pa.concat_tables(tables, promote_options="default").to_pandas()


def load(paths: Sequence[Path | str] = (), root: Path | str = "results") -> pd.DataFrame:
    """Rows of several runs merged. Each path is a run folder, a parquet file, or a folder of runs;
    with no paths, the latest run under `root`."""
    paths = paths or [_latest(root)]
    frames = [_load_path(Path(p)) for p in paths]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _latest(root: Path | str) -> Path:
    latest = latest_run(Path(root))
    if latest is None:
        raise FileNotFoundError(f"no runs found in {root}")
    return latest


def _load_path(path: Path) -> pd.DataFrame:
    if path.is_file():
        return pq.read_table(path).to_pandas()
    if (path / RUN_FILE).exists():
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
            found += [path.parent] if (path.parent / RUN_FILE).exists() else []
        elif (path / RUN_FILE).exists():
            found.append(path)
        else:
            found += run_dirs(path)
    return list(dict.fromkeys(p.resolve() for p in found))


def run_metas(folders: Sequence[Path]) -> list[dict[str, Any]]:
    """run.json of each folder; a damaged one is skipped with a warning (it loses the environment,
    not the results)."""
    metas = []
    for folder in folders:
        try:
            metas.append(run_meta(folder))
        except (OSError, ValueError) as exc:
            warnings.warn(f"cannot read {Path(folder) / RUN_FILE}: {exc}", stacklevel=2)
    return metas


def meta_fact(meta: dict[str, Any], name: str) -> Any:
    """A fact from run.json: at its top level or under "environment" (where `benchctl run` puts it)."""
    env = meta.get("environment")
    return meta.get(name) if meta.get(name) is not None else env.get(name) if isinstance(env, dict) else None

"""One file for a finished run instead of one per cell or series: a sweep on a cluster writes thousands.

`compact` merges a run's part files into `part-00000.parquet` (written whole, then renamed into place)
and deletes the parts it holds; that file's metadata says up to which part number it holds them, so a
crash between the rename and the deletes never counts a row twice. `parts` is what a loader reads: the
compacted file and any later part, or every part of a run that was never compacted.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

COMPACTED = "part-00000.parquet"
HOLDS = b"benchctl.compacted_through"  # the highest part number the compacted file holds


def _number(part: Path) -> int:
    return int(part.stem.split("-")[1])


def parts(run_dir: Path) -> list[Path]:
    found = sorted(Path(run_dir).glob("part-*.parquet"))
    compacted = Path(run_dir) / COMPACTED
    if compacted not in found:
        return found
    through = _holds_through(compacted)
    return [compacted, *(p for p in found if _number(p) > through)]  # the compacted file is number 0


def _holds_through(compacted: Path) -> int:
    """The highest part number the compacted file holds; 0 where it cannot be read (a loader warns of it)."""
    try:
        return int((pq.read_schema(compacted).metadata or {}).get(HOLDS, b"0"))
    except (OSError, ValueError, pa.ArrowException):  # pyarrow raises several types for a damaged file
        return 0


def write_atomically(table: pa.Table, path: Path) -> None:
    """`table` written as `path` through a hidden temp file (replace_atomically)."""
    replace_atomically(path, lambda tmp: pq.write_table(table, tmp))


def replace_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """`write` into a hidden temp file, renamed into place as `path`: a reader (a parquet dataset reader too)
    never sees half a file, and a failed write leaves nothing behind."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def compact(run_dir: Path) -> Path | None:
    """Merge the run's parts into one file; None when there is nothing to merge, or the file cannot be written (a
    full disk: the parts are kept, as good, with a warning)."""
    todo = parts(run_dir)
    if len(todo) < 2:
        return None
    table = pa.concat_tables([pq.read_table(p) for p in todo], promote_options="default")
    through = max(_number(p) for p in todo)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), HOLDS: str(through).encode()})
    target = Path(run_dir) / COMPACTED
    try:
        write_atomically(table, target)
    except OSError as exc:
        warnings.warn(f"cannot merge the parts of {run_dir}: {exc.strerror or exc}; they are kept", stacklevel=2)
        return None
    for part in todo:
        if part != target:
            part.unlink()
    return target

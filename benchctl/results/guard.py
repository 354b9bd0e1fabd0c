"""A run folder held to what benchctl wrote into it, and the files the sweep relies on to what it found.

The measured code runs as the user who runs the sweep, so a worker, or a process it starts, can write into
the run folder while the sweep goes on: add a part of forged rows, rewrite or delete a part, rewrite
`_run.json`; or rewrite the machine's calibration, whose peaks set every later run's floors (`watch`). The
writer keeps what it wrote (each part's table, the file's digest and the metadata's text); `FolderGuard.look`
compares the folder with it, writes back what was changed or removed, sets aside what
benchctl never wrote (renamed hidden, `.tampered-NAME`, so no loader or dataset reader takes it) and says
what it found. The sweep looks after each measurement, so a finding names the cell measured meanwhile.

Once the run is finished its metadata lists each part's digest (`parts`), and a loader skips a part the
list does not hold as written: rows changed or added after the run (by a process that escaped the worker's
process group) do not reach a report. A reader cannot tell that from the metadata being rewritten as well:
on one machine and one user, nothing on disk is out of the measured code's reach once the sweep has ended.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import pyarrow as pa

from benchctl.results import compaction
from benchctl.vocab import Status

SET_ASIDE = ".tampered-"  # what a file benchctl did not write is renamed to, before its name
DIGESTS = "parts"  # the metadata's key for each part's digest, written when the run finishes
TAMPERED = "tampered"  # ... for each look that found the folder changed: what was measured meanwhile, what it found


def digest(path: Path) -> str:
    """The sha256 of a file's bytes."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is written (size, inode, and its change time, which unlike the modification
    time no call can set back); None where it is gone."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_size, st.st_ino, st.st_ctime_ns


@dataclass
class _Kept:
    table: pa.Table
    digest: str
    stamp: tuple[int, int, int] | None


class FolderGuard:
    """What benchctl wrote into one run folder, and a look at the folder against it. What it puts back it
    writes as the writer does (compaction.write_atomically, replace_atomically)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._parts: dict[str, _Kept] = {}
        self._meta: tuple[str, str] | None = None  # the metadata file's name and the text written to it
        self._watched: dict[Path, bytes | None] = {}  # files outside the folder, as the run found them

    def wrote_part(self, path: Path, table: pa.Table) -> None:
        self._parts[path.name] = _Kept(table, digest(path), _stamp(path))

    def dropped_part(self, path: Path) -> None:
        self._parts.pop(path.name, None)

    def merged_into(self, path: Path, table: pa.Table) -> None:
        """The parts compacted into `path` (those no longer in the folder) are its `table` now."""
        for name in [name for name in self._parts if not (self.folder / name).exists()]:
            del self._parts[name]
        self.wrote_part(path, table)

    def wrote_meta(self, path: Path, text: str) -> None:
        self._meta = (path.name, text)

    def watch(self, path: Path) -> None:
        """A file outside the folder that this run and later ones rely on (the machine's calibration: its
        peaks set every floor), kept as the run found it; None where there was none."""
        self._watched[Path(path)] = _contents(Path(path))

    def digests(self) -> dict[str, str]:
        """Each part's name and digest, as written: what the finished run's metadata lists."""
        return {name: kept.digest for name, kept in sorted(self._parts.items())}

    def look(self) -> list[str]:
        """What was changed in the folder since benchctl last wrote there, each in words, with the folder
        put back as benchctl wrote it; empty where nothing was."""
        found = [said for name, kept in self._parts.items() if (said := self._part_back(name, kept))]
        found += [self._meta_back()] if self._meta_changed() else []
        found += [said for path, kept in self._watched.items() if (said := _file_back(path, kept))]
        known = {*self._parts, *(self._meta[:1] if self._meta else ())}
        for entry in sorted(self.folder.iterdir()):
            if entry.name not in known and not entry.name.startswith((".", "_")):
                os.replace(entry, self.folder / f"{SET_ASIDE}{entry.name}")
                found.append(f"{entry.name} added (set aside as {SET_ASIDE}{entry.name})")
        return found

    def _part_back(self, name: str, kept: _Kept) -> str | None:
        path = self.folder / name
        stamp = _stamp(path)
        if stamp == kept.stamp or (stamp is not None and digest(path) == kept.digest):
            return None
        if stamp is not None:
            os.replace(path, self.folder / f"{SET_ASIDE}{name}")
        compaction.write_atomically(kept.table, path)
        self._parts[name] = _Kept(kept.table, digest(path), _stamp(path))
        if stamp is None:
            return f"{name} removed (written again from benchctl's rows)"
        return f"{name} rewritten (set aside as {SET_ASIDE}{name}, written again from benchctl's rows)"

    def _meta_changed(self) -> bool:
        if self._meta is None:
            return False
        try:
            return (self.folder / self._meta[0]).read_text() != self._meta[1]
        except (OSError, UnicodeDecodeError):
            return True

    def _meta_back(self) -> str:
        name, text = self._meta
        _put(self.folder / name, text.encode())
        return f"{name} rewritten (written again from benchctl's copy)"


def _contents(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _file_back(path: Path, kept: bytes | None) -> str | None:
    """A watched file put back as the run found it (removed where there was none); None where it is so."""
    if _contents(path) == kept:
        return None
    if kept is None:
        path.unlink()
        return f"{path} written (removed: there was none when the run started)"
    _put(path, kept)
    return f"{path} rewritten (written back as the run found it)"


def _put(path: Path, data: bytes) -> None:
    compaction.replace_atomically(path, lambda tmp: tmp.write_bytes(data))


def changed_rows(rows: Sequence[Mapping[str, Any]], found: list[str]) -> list[dict[str, Any]]:
    """Rows of a cell measured while the run folder changed (`found`), each an `error` (as_changed)."""
    return [{**row, **as_changed(row, found)} for row in rows]


def as_changed(row: Mapping[str, Any], found: list[str]) -> dict[str, Any]:
    """The columns that make a row of a cell measured while the run folder changed an `error` (its times stay
    in the row, as measured, but no summary, verdict or history takes an error's)."""
    said = ("the run's files were changed while this cell was measured: " + "; ".join(found)
            + ". Only benchctl writes them: what it wrote was put back, and what it did not set aside")
    return {"status": Status.ERROR, "message": f"{said}; {row['message']}" if row.get("message") else said}


def unlisted(path: Path, listed: dict[str, str] | None) -> str | None:
    """Why a finished run's part is not its own (`listed`: the metadata's digests; None for a run from before
    they were kept, or not finished): added or changed after benchctl wrote it. None where it is as written."""
    if listed is None:
        return None
    if path.name not in listed:
        return f"{path}: benchctl did not write it (the run's metadata does not list it)"
    if digest(path) != listed[path.name]:
        return f"{path}: changed after benchctl wrote it (its digest is not the one the run's metadata lists)"
    return None


def gone(folder: Path, parts: Sequence[Path], listed: dict[str, str] | None) -> list[str]:
    """What a finished run's metadata lists (`listed`) that its folder no longer holds (`parts`), in words."""
    held = {p.name for p in parts}
    return [f"{Path(folder) / name}: listed by the run's metadata, and gone"
            for name in listed or {} if name not in held]


def changed_line(meta: Mapping[str, Any]) -> str | None:
    """One line for a run whose folder something else changed while it ran (its metadata's `tampered`)."""
    looks = meta.get(TAMPERED) or []
    if not looks:
        return None
    during = ", ".join(dict.fromkeys(str(look.get("during")) for look in looks))
    return (f"run {meta.get('run_id')}: its files were changed by something other than benchctl while it ran "
            f"(during {during}); benchctl put back what it wrote and set aside what it did not ({SET_ASIDE}*), "
            "and the cells measured meanwhile are errors")

"""Namespace clashes between extensions, found by reading their sources before anything is loaded.

torch lets one `TORCH_LIBRARY(ns, m)` block define a namespace per process: a second library that opens
the same namespace aborts the process that loads it (TORCH_LIBRARY_FRAGMENT blocks may share one). Two
operators whose extensions both open one namespace (two tutorials that kept the tutorial's name) can
each run, but never in the same process; benchctl keeps them apart and says so in one line.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Iterable

from benchctl.ops.library import sources_of

OPENS = re.compile(r"^\s*TORCH_LIBRARY\s*\(\s*(\w+)\s*,", re.M)  # not _FRAGMENT, not _IMPL


@dataclass(frozen=True)
class Opening:
    """One `TORCH_LIBRARY(namespace, ...)` block: which operator's sources open it, and in which file."""
    operator: str
    namespace: str
    file: Path


@dataclass(frozen=True)
class Clash:
    """Two operators opening the same namespace: one process can load only one of them."""
    first: Opening
    second: Opening

    def line(self) -> str:
        a, b = self.first, self.second
        return (f"namespace clash: {a.operator} ({a.file}) and {b.operator} ({b.file}) both open "
                f"TORCH_LIBRARY({a.namespace}, ...), and one process can load only one of them; benchctl builds "
                "and runs them in separate processes. To load both in one, use TORCH_LIBRARY_FRAGMENT in each "
                "or give each its own namespace")


@functools.lru_cache(maxsize=256)
def _scan(folder: Path, mtimes: tuple[int, ...]) -> tuple[tuple[str, Path], ...]:
    found = []
    for src in sources_of(folder, "cpu") + sources_of(folder, "cuda"):
        found += [(ns, src) for ns in OPENS.findall(src.read_text(errors="replace"))]
    return tuple(found)


def openings(operator: str, folder: Path) -> list[Opening]:
    """The namespaces the sources under `folder` open with TORCH_LIBRARY."""
    if not folder.is_dir():
        return []
    stamp = tuple(p.stat().st_mtime_ns for p in sorted(folder.rglob("*")) if p.is_file())
    return [Opening(operator, ns, src) for ns, src in _scan(folder.resolve(), stamp)]


def clashes(extensions: Iterable[tuple[str, Path]]) -> list[Clash]:
    """Every pair of operators whose sources (operator, folder) open the same namespace."""
    found: dict[str, list[Opening]] = {}
    for operator, folder in dict.fromkeys(extensions):
        for opening in openings(operator, folder):
            found.setdefault(opening.namespace, []).append(opening)
    return [Clash(a, b) for group in found.values() for a, b in combinations(group, 2)
            if (a.operator, a.file.resolve()) != (b.operator, b.file.resolve())]


def declared_clashes() -> list[Clash]:
    """Clashes among the extensions the operator files loaded so far declared."""
    from benchctl.ops import extension

    return clashes((ext.operator or ext.name, ext.folder) for ext in extension.declared().values())


def apart(clash_list: Iterable[Clash]) -> set[frozenset[str]]:
    """The pairs of operators that must not share a process."""
    return {frozenset((c.first.operator, c.second.operator)) for c in clash_list}

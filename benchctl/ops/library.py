"""What one compiled library is made of, and the cache key over all of it.

A library is an Extension's sources of one kind (`cpu`: the `*.cpp` files under its folder; `cuda`: the
`*.cu` files, or for a pybind11 module every `*.cpp` and `*.cu`) built with benchctl's flags and the
Extension's own options. Its cache folder, `<name>-<key>`, is keyed by everything that would make
torch's JIT build it again: the toolchain (toolchain.cache_key), every flag, include folder and define,
where the sources are (torch writes the paths into its build file, so two copies of one project are two
entries that never rebuild each other in turn), the contents of every file under the source folder,
and every header the sources include from elsewhere.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

from benchctl.cache import cache_dir
from benchctl.ops import toolchain

COMMON_DIR = "common"  # extensions/common/: headers shared by every operator's extension
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


@dataclass(frozen=True)
class BuildOptions:
    """An Extension's own build options; all of them are part of the cache key."""

    extra_cflags: tuple[str, ...] = ()
    extra_cuda_cflags: tuple[str, ...] = ()
    extra_ldflags: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()  # absolute, or relative to the source folder
    defines: tuple[str, ...] = ()  # "NAME" or "NAME=VALUE", passed as -D to the C++ and CUDA compilers
    python_module: bool = False  # a pybind11 module (PYBIND11_MODULE(TORCH_EXTENSION_NAME, m))

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(data: dict) -> "BuildOptions":
        return BuildOptions(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


@dataclass(frozen=True)
class Library:
    stem: str  # benchctl_<stem>_<kind>: the operator and the Extension's name
    kind: str  # "cpu" or "cuda"
    folder: Path
    sources: tuple[Path, ...]
    options: BuildOptions = BuildOptions()

    @property
    def name(self) -> str:
        return f"benchctl_{self.stem}_{self.kind}"

    @property
    def module(self) -> str:
        """The name torch builds and loads it under: unique per cache entry, so one process that loads
        two entries of one name never has torch bump a version and compile again."""
        return f"{self.name}_{self.fingerprint()}"

    @property
    def include_dirs(self) -> tuple[Path, ...]:
        """The source folder, benchctl's shared headers beside it, and the Extension's own."""
        own = tuple((self.folder / d).resolve() for d in self.options.include_dirs)
        return (self.folder.resolve(), (self.folder.parent / COMMON_DIR).resolve(), *own)

    def cflags(self) -> list[str]:
        return [*toolchain.CFLAGS, *self.options.extra_cflags, *(f"-D{d}" for d in self.options.defines)]

    def cuda_cflags(self) -> list[str]:
        return [*toolchain.CUDA_CFLAGS, *self.options.extra_cuda_cflags, *(f"-D{d}" for d in self.options.defines)]

    def ldflags(self) -> list[str]:
        return [*toolchain.ldflags(), *self.options.extra_ldflags]

    def fingerprint(self) -> str:
        return self._key

    @functools.cached_property
    def _key(self) -> str:
        """Computed once per Library object (a new object reads the files again)."""
        h = hashlib.sha256(toolchain.cache_key().encode())
        spec = {"kind": self.kind, "flags": toolchain.flags(self.kind), "cflags": self.cflags(),
                "cuda": self.cuda_cflags() if self.kind == "cuda" else [], "ldflags": self.ldflags(),
                "includes": [str(d) for d in self.include_dirs], "module": self.options.python_module,
                "folder": str(self.folder.resolve()), "sources": [str(s.resolve()) for s in self.sources]}
        h.update(json.dumps(spec, sort_keys=True).encode())
        for path in self.inputs():
            h.update(str(path).encode() + b"\0" + path.read_bytes())
        return h.hexdigest()[:12]

    def inputs(self) -> list[Path]:
        """Every file under the source folder, then each header included from elsewhere."""
        inside = sorted(p.resolve() for p in self.folder.rglob("*") if p.is_file() and not _hidden(p, self.folder))
        outside = sorted(set(self._included()) - set(inside))
        return inside + outside

    def _included(self) -> Iterator[Path]:
        """Headers the sources include, followed through the headers they include in turn."""
        seen: set[Path] = set()
        todo = [s.resolve() for s in self.sources]
        while todo:
            path = todo.pop()
            if path in seen or not path.is_file():
                continue
            seen.add(path)
            todo += [h for h in self._resolve_includes(path) if h not in seen]
        yield from seen

    def _resolve_includes(self, path: Path) -> Iterator[Path]:
        text = path.read_text(errors="replace")
        for quote, name in INCLUDE.findall(text):
            folders = ((path.parent,) if quote == '"' else ()) + self.include_dirs
            found = next((f / name for f in folders if (f / name).is_file()), None)
            if found is not None:
                yield found.resolve()

    @property
    def build_dir(self) -> Path:
        return cache_dir() / "extensions" / f"{self.name}-{self.fingerprint()}"


def _hidden(path: Path, folder: Path) -> bool:
    """Version-control folders, bytecode caches and editor files are no input of a build."""
    parts = path.relative_to(folder).parts
    return any(p.startswith(".") or p == "__pycache__" for p in parts) or path.suffix == ".pyc"


def sources_of(folder: Path, kind: str, python_module: bool = False) -> tuple[Path, ...]:
    """The files compiled into a library of `kind`: under `folder` and its subfolders."""
    suffixes = {"cpu": (".cpp",), "cuda": (".cpp", ".cu") if python_module else (".cu",)}[kind]
    found = (p for p in folder.rglob("*") if p.suffix in suffixes and p.is_file() and not _hidden(p, folder))
    return tuple(sorted(found))

"""JIT build of the C++/CUDA extensions with torch.utils.cpp_extension + ninja, into a persistent cache.

Each operator's sources live in `extensions/<op>/`: `*.cpp` make the CPU library (which also defines
the op schemas), `*.cu` the CUDA library; the headers in `extensions/common/` are shared by all.
Libraries register ops into `torch.ops.benchctl` when loaded.
The first use compiles (seconds to minutes); later uses only load the shared object.

The cache folder of a library is named by a hash of its sources, headers, compiler flags, torch
version, compiler, CUDA arch list and (because of -march=native) this CPU, so an edit or another
machine never picks up a stale build. A failed build leaves a FAILED marker there, so `availability` can give the reason later
without compiling again. Environment: CUDA_HOME (else /usr/local/cuda or /usr/local/cuda-*),
TORCH_CUDA_ARCH_LIST (default "8.0;9.0"), CXX, and BENCHCTL_CACHE (default ~/.cache/benchctl; the
libraries go to its extensions/ folder). The toolchain and its part of the key are in toolchain.py.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from pathlib import Path

from benchctl.cache import cache_dir
from benchctl.errors import BenchError
from benchctl.ops import paths, toolchain

EXTENSIONS_DIR = paths.EXTENSIONS_DIR
COMMON_DIR = "common"  # extensions/common/: headers shared by every operator's extension
MAX_ERROR_LINES = 20
_LOADED: dict[str, float] = {}


class BuildError(BenchError, RuntimeError):
    """A compile or link failure: `summary` is one line, `log` the path to the full compiler output."""

    def __init__(self, summary: str, compiler_lines: str, log: Path | None):
        super().__init__(summary)
        self.summary = summary
        self.compiler_lines = compiler_lines
        self.log = log


@dataclass(frozen=True)
class BuildResult:
    """One library made usable: its name, the seconds it took, and whether it had to compile."""

    name: str
    seconds: float
    compiled: bool


@dataclass(frozen=True)
class Library:
    op: str
    kind: str  # "cpu" or "cuda"
    sources: tuple[Path, ...]

    @property
    def name(self) -> str:
        return f"benchctl_{self.op}_{self.kind}"

    def fingerprint(self) -> str:
        h = hashlib.sha256(toolchain.cache_key().encode())
        h.update(" ".join(toolchain.flags(self.kind)).encode())
        for src in self.sources:
            h.update(src.name.encode())
            h.update(src.read_bytes())
        for header in self.headers:
            h.update(header.read_bytes())
        return h.hexdigest()[:12]

    @property
    def include_dirs(self) -> tuple[Path, ...]:
        """The operator's own folder and the headers every extension shares."""
        folder = self.sources[0].parent
        return folder, folder.parent / COMMON_DIR

    @property
    def headers(self) -> list[Path]:
        return [h for d in self.include_dirs for h in sorted(d.glob("*.h"))]

    @property
    def build_dir(self) -> Path:
        return cache_dir() / "extensions" / f"{self.name}-{self.fingerprint()}"


def library(op: str, kind: str, root: Path | None = None) -> Library:
    root = root or EXTENSIONS_DIR
    suffix = ".cu" if kind == "cuda" else ".cpp"
    sources = tuple(sorted((root / op).glob(f"*{suffix}")))
    if not sources:
        raise BuildError(f"no {suffix} sources for {op} in {root / op}", "", None)
    return Library(op, kind, sources)


def extension_ops(root: Path | None = None) -> list[str]:
    """Operators that have an extensions/<op>/ folder with sources."""
    root = root or EXTENSIONS_DIR
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (any(p.glob("*.cpp")) or any(p.glob("*.cu"))))


def built_at(lib: Library) -> int | None:
    """When the library was last linked (ns), or None if it never was."""
    times = [p.stat().st_mtime_ns for p in lib.build_dir.glob(f"{lib.name}*.so")]
    return max(times) if times else None


def cached_failure(lib: Library) -> str | None:
    marker = lib.build_dir / "FAILED"
    return marker.read_text() if marker.exists() else None


def ensure_loaded(op: str, kind: str = "cpu", root: Path | None = None, verbose: bool = False) -> float:
    """Build (if needed) and load one library; returns the seconds it took. Raises BuildError."""
    return build(op, kind, root, verbose).seconds


def build(op: str, kind: str = "cpu", root: Path | None = None, verbose: bool = False) -> BuildResult:
    """Build (if needed) and load one library. The CUDA library of an op loads after its CPU library,
    which defines the op schemas. Raises BuildError."""
    root = root or EXTENSIONS_DIR
    lib = library(op, kind, root)
    if lib.name in _LOADED:
        return BuildResult(lib.name, 0.0, False)
    if kind == "cuda":
        reason = toolchain.cuda_toolchain_reason()
        if reason:
            raise BuildError(reason, "", None)
        if any((root / op).glob("*.cpp")):
            build(op, "cpu", root, verbose)
    before = built_at(lib)
    start = time.perf_counter()
    _compile_and_load(lib, verbose)
    _LOADED[lib.name] = time.perf_counter() - start
    # ninja also recompiles a cached folder whose sources are newer than the library (a checkout that
    # put the same text back): that is a compile too, not a cached load.
    return BuildResult(lib.name, _LOADED[lib.name], built_at(lib) != before)


def _compile_and_load(lib: Library, verbose: bool) -> None:
    cpp_extension = toolchain.cpp_extension()
    lib.build_dir.mkdir(parents=True, exist_ok=True)
    includes = [str(d) for d in lib.include_dirs]
    if lib.kind == "cuda":
        includes += toolchain.nvidia_wheel_includes()
    try:
        cpp_extension.load(
            name=lib.name,
            sources=[str(s) for s in lib.sources],
            extra_cflags=list(toolchain.CFLAGS),
            extra_ldflags=list(toolchain.ldflags()),
            extra_cuda_cflags=list(toolchain.CUDA_CFLAGS) if lib.kind == "cuda" else None,
            extra_include_paths=includes,
            build_directory=str(lib.build_dir),
            is_python_module=False,
            with_cuda=lib.kind == "cuda",
            verbose=verbose,
        )
    except Exception as exc:  # torch raises RuntimeError/CalledProcessError with the compiler output
        raise _build_error(lib, exc) from None
    (lib.build_dir / "FAILED").unlink(missing_ok=True)


def _build_error(lib: Library, exc: Exception) -> BuildError:
    output = str(exc)
    extra = getattr(exc, "output", None)
    if isinstance(extra, bytes):
        output += "\n" + extra.decode(errors="replace")
    log = lib.build_dir / "build.log"
    log.write_text(output)
    lines = compiler_error_lines(output)
    count = f"{len(lines)} error line{'' if len(lines) == 1 else 's'}"
    summary = f"building {lib.name} failed ({count}); full log: {log}"
    (lib.build_dir / "FAILED").write_text(summary)
    return BuildError(summary, "\n".join(lines[:MAX_ERROR_LINES]), log)


def compiler_error_lines(output: str) -> list[str]:
    """The compiler's and linker's error lines, without ninja's and torch's own wrapping lines."""
    wrapper = re.compile(r"^(FAILED:|ninja: build stopped|Error building extension|subprocess)")
    found = [l for l in output.splitlines() if re.search(r"error|undefined reference", l, re.I)]
    return [l for l in found if not wrapper.match(l.strip())] or found


def availability(op: str, kind: str = "cpu", root: Path | None = None) -> str | None:
    """Reason an extension is unusable without compiling anything now, or None (built or buildable)."""
    root = root or EXTENSIONS_DIR
    try:
        lib = library(op, kind, root)
    except BuildError as exc:
        return exc.summary
    if kind == "cuda":
        reason = toolchain.cuda_toolchain_reason()
        if reason:
            return reason
        if any((root / op).glob("*.cpp")):
            reason = availability(op, "cpu", root)
            if reason:
                return reason
    return cached_failure(lib)

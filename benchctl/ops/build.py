"""JIT build of the C++/CUDA extensions with torch.utils.cpp_extension + ninja, into a persistent cache.

Each operator's sources live in `extensions/<op>/`: `*.cpp` make the CPU library (which also defines
the op schemas), `*.cu` the CUDA library; the headers in `extensions/common/` are shared by all.
Libraries register ops into their `torch.ops.<namespace>` when loaded.
The first use compiles (seconds to minutes); later uses only load the shared object.

The cache folder of a library is named by a hash of all its inputs (library.py: sources, headers,
flags, where the sources are, torch version, compiler, CUDA arch list and, because of -march=native,
this CPU), so an edit or another machine never picks up a stale build. A failed build leaves a FAILED marker there, so `availability` can give the reason later
without compiling again. Environment: CUDA_HOME (else /usr/local/cuda or /usr/local/cuda-*),
TORCH_CUDA_ARCH_LIST (default "8.0;9.0"), CXX, and BENCHCTL_CACHE (default ~/.cache/benchctl; the
libraries go to its extensions/ folder). The toolchain and its part of the key are in toolchain.py.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from benchctl.errors import BenchError
from benchctl.ops import paths, toolchain
from benchctl.ops.library import BuildOptions, Library, sources_of

EXTENSIONS_DIR = paths.EXTENSIONS_DIR
MAX_ERROR_LINES = 20
_LOADED: dict[str, float] = {}  # by Library.module: the seconds its first load took
_MODULES: dict[str, ModuleType] = {}  # pybind11 modules loaded, by Library.module


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


def library(op: str, kind: str, root: Path | None = None, options: BuildOptions | None = None,
            stem: str | None = None) -> Library:
    """The library of kind `kind` made from the sources in `root/op` (default: benchctl's extensions/),
    named `benchctl_<stem>_<kind>` (default stem: `op`)."""
    root = root or EXTENSIONS_DIR
    options = options or BuildOptions()
    sources = sources_of(root / op, kind, options.python_module)
    if not sources:
        suffix = ".cu" if kind == "cuda" else ".cpp"
        raise BuildError(f"no {suffix} sources for {op} in {root / op}", "", None)
    return Library(stem or op, kind, root / op, sources, options)


def extension_ops(root: Path | None = None) -> list[str]:
    """Operators that have an extensions/<op>/ folder with sources."""
    root = root or EXTENSIONS_DIR
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (any(p.glob("*.cpp")) or any(p.glob("*.cu"))))


def built_at(lib: Library) -> int | None:
    """When the library was last linked (ns), or None if it never was."""
    times = [p.stat().st_mtime_ns for p in lib.build_dir.glob(f"{lib.module}*.so")]
    return max(times) if times else None


def cached_failure(lib: Library) -> str | None:
    marker = lib.build_dir / "FAILED"
    return marker.read_text() if marker.exists() else None


def ensure_loaded(op: str, kind: str = "cpu", root: Path | None = None, verbose: bool = False) -> float:
    """Build (if needed) and load one library; returns the seconds it took. Raises BuildError."""
    return build(op, kind, root, verbose).seconds


def build(op: str, kind: str = "cpu", root: Path | None = None, verbose: bool = False) -> BuildResult:
    """Build (if needed) and load the library of the sources in `root/op`. Raises BuildError."""
    return build_library(library(op, kind, root), verbose)


def schema_library(lib: Library) -> Library | None:
    """The CPU library a CUDA library's kernels attach to (it defines the op schemas), if it has one."""
    if lib.kind != "cuda" or lib.options.python_module:
        return None
    cpu = sources_of(lib.folder, "cpu")
    return Library(lib.stem, "cpu", lib.folder, cpu, lib.options) if cpu else None


def build_library(lib: Library, verbose: bool = False) -> BuildResult:
    """Build (if needed) and load one library in this process. The CUDA library of an op loads after
    its CPU library, which defines the op schemas. Raises BuildError."""
    if lib.module in _LOADED:
        return BuildResult(lib.name, 0.0, False)
    if lib.kind == "cuda":
        reason = toolchain.cuda_toolchain_reason()
        if reason:
            raise BuildError(reason, "", None)
        schemas = schema_library(lib)
        if schemas is not None:
            build_library(schemas, verbose)
    before = built_at(lib)
    start = time.perf_counter()
    loaded = _compile_and_load(lib, verbose)
    if lib.options.python_module:
        _MODULES[lib.module] = loaded
    _LOADED[lib.module] = time.perf_counter() - start
    # ninja also recompiles a cached folder whose sources are newer than the library (a checkout that
    # put the same text back): that is a compile too, not a cached load.
    return BuildResult(lib.name, _LOADED[lib.module], built_at(lib) != before)


def python_module(lib: Library) -> ModuleType:
    """The loaded pybind11 module of `lib` (built and loaded first if needed)."""
    build_library(lib)
    return _MODULES[lib.module]


def _compile_and_load(lib: Library, verbose: bool):
    cpp_extension = toolchain.cpp_extension()
    lib.build_dir.mkdir(parents=True, exist_ok=True)
    includes = [str(d) for d in lib.include_dirs]
    if lib.kind == "cuda":
        includes += toolchain.nvidia_wheel_includes()
    try:
        loaded = cpp_extension.load(
            name=lib.module,
            sources=[str(s) for s in lib.sources],
            extra_cflags=lib.cflags(),
            extra_ldflags=lib.ldflags(),
            extra_cuda_cflags=lib.cuda_cflags() if lib.kind == "cuda" else None,
            extra_include_paths=includes,
            build_directory=str(lib.build_dir),
            is_python_module=lib.options.python_module,
            with_cuda=lib.kind == "cuda",
            verbose=verbose,
        )
    except Exception as exc:  # torch raises RuntimeError/CalledProcessError with the compiler output
        raise _build_error(lib, exc) from None
    (lib.build_dir / "FAILED").unlink(missing_ok=True)
    return loaded


def _build_error(lib: Library, exc: Exception) -> BuildError:
    output = str(exc)
    extra = getattr(exc, "output", None)
    if isinstance(extra, bytes):
        output += "\n" + extra.decode(errors="replace")
    if exc.__cause__ is not None:  # torch's "Could not load this library" hides the loader's reason there
        output += "\n" + str(exc.__cause__)
    log = lib.build_dir / "build.log"
    log.write_text(output)
    lines = compiler_error_lines(output)
    count = f"{len(lines)} error line{'' if len(lines) == 1 else 's'}"
    summary = f"building {lib.name} failed ({count}); full log: {log}"
    (lib.build_dir / "FAILED").write_text(summary)
    return BuildError(summary, "\n".join(lines[:MAX_ERROR_LINES]), log)


def compiler_error_lines(output: str) -> list[str]:
    """The compiler's and linker's error lines, without ninja's and torch's own wrapping lines, and the
    loader's where the library built but did not load (a symbol it needs is defined in no source of it)."""
    wrapper = re.compile(r"^(FAILED:|ninja: build stopped|Error building extension|subprocess)")
    found = [l for l in output.splitlines() if re.search(r"error|undefined (reference|symbol)", l, re.I)]
    return [l for l in found if not wrapper.match(l.strip())] or found


def availability(op: str, kind: str = "cpu", root: Path | None = None) -> str | None:
    """Reason an extension is unusable without compiling anything now, or None (built or buildable)."""
    try:
        lib = library(op, kind, root)
    except BuildError as exc:
        return exc.summary
    return library_availability(lib)


def library_availability(lib: Library) -> str | None:
    """Why `lib` cannot be used, without compiling anything now (None: built or buildable)."""
    if lib.kind == "cuda":
        reason = toolchain.cuda_toolchain_reason()
        if reason:
            return reason
        schemas = schema_library(lib)
        reason = library_availability(schemas) if schemas is not None else None
        if reason:
            return reason
    return cached_failure(lib)

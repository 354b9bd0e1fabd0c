"""JIT build of the C++/CUDA extensions with torch.utils.cpp_extension + ninja, into a persistent cache.

Each operator's sources live in `extensions/<op>/`: `*.cpp` make the CPU library (which also defines
the op schemas), `*.cu` the CUDA library; the headers in `extensions/common/` are shared by all.
Libraries register ops into `torch.ops.benchctl` when loaded.
The first use compiles (seconds to minutes); later uses only load the shared object.

The cache folder of a library is named by a hash of its sources, headers, compiler flags, torch
version and (because of -march=native) this CPU, so an edit or another machine never picks up a stale
build. A failed build leaves a FAILED marker there, so `availability` can give the reason later
without compiling again. Environment: CUDA_HOME (else /usr/local/cuda or /usr/local/cuda-*),
TORCH_CUDA_ARCH_LIST (default "8.0;9.0") and BENCHCTL_CACHE (default ~/.cache/benchctl/extensions).
"""

from __future__ import annotations

import functools
import glob
import hashlib
import logging
import os
import platform
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from benchctl.errors import BenchError
from benchctl.ops import paths

EXTENSIONS_DIR = paths.EXTENSIONS_DIR
COMMON_DIR = "common"  # extensions/common/: headers shared by every operator's extension
CACHE_ENV = "BENCHCTL_CACHE"
ARCH_ENV = "TORCH_CUDA_ARCH_LIST"
DEFAULT_ARCH_LIST = "8.0;9.0"
# -fopenmp: ATen's parallel_for is a header template that runs on torch's OpenMP thread pool only
# when the including file is compiled with OpenMP; without it, every parallel_for runs on one
# thread. The OpenMP runtime linked is the one torch already loaded (same soname, libgomp.so.1).
OPENMP_FLAGS = ("-fopenmp",) if sys.platform.startswith("linux") else ()
CFLAGS = ("-O3", "-march=native", "-fno-math-errno", *OPENMP_FLAGS)
CUDA_CFLAGS = ("-O3", "--use_fast_math")
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
        h = hashlib.sha256(torch.__version__.encode())
        h.update(" ".join(_flags(self.kind)).encode())
        h.update(_cpu_signature().encode())
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
        return cache_root() / f"{self.name}-{self.fingerprint()}"


def _flags(kind: str) -> tuple[str, ...]:
    if kind != "cuda":
        return CFLAGS + ldflags()
    return CFLAGS + ldflags() + CUDA_CFLAGS + (os.environ.get(ARCH_ENV, DEFAULT_ARCH_LIST),)


@functools.lru_cache(maxsize=1)
def ldflags() -> tuple[str, ...]:
    """OpenMP, and the C++ runtime torch already loaded, by path: a toolchain whose library folder
    holds only libstdc++.a would otherwise link a second, static copy into the extension, and two
    copies in one process crash on the first error message that formats a number (seen with a
    relocated GCC 13)."""
    runtime = loaded_library("libstdc++.so")
    return (*OPENMP_FLAGS, *([runtime] if runtime else []))


def loaded_library(name: str, maps: Path = Path("/proc/self/maps")) -> str | None:
    """The path of the first library this process has mapped whose file name starts with `name`."""
    try:
        lines = maps.read_text().splitlines()
    except OSError:  # not Linux
        return None
    fields = (line.split(maxsplit=5) for line in lines)  # address perms offset dev inode [path]
    return next((f[5] for f in fields if len(f) == 6 and Path(f[5]).name.startswith(name)), None)


@functools.lru_cache(maxsize=1)
def _cpu_signature() -> str:
    """The CPU model and feature flags: a library built with -march=native may not run elsewhere."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.machine() + platform.processor()
    keep = [l for l in lines if l.startswith(("model name", "flags"))]
    return platform.machine() + "\n".join(sorted(set(keep)))


def cache_root() -> Path:
    root = os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "benchctl" / "extensions"
    return Path(root)


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


def cuda_toolchain_reason() -> str | None:
    """Why a CUDA extension cannot be compiled here, or None. Also sets the environment it needs."""
    if torch.version.cuda is None:
        return "no CUDA torch: this torch is a CPU-only build, so CUDA extensions cannot be compiled"
    home = find_cuda_home()
    if home is None:
        return "nvcc missing: set CUDA_HOME to the CUDA toolkit folder (with bin/nvcc)"
    os.environ["CUDA_HOME"] = str(home)
    os.environ.setdefault(ARCH_ENV, DEFAULT_ARCH_LIST)
    return None


def find_cuda_home() -> Path | None:
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    candidates += sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for c in candidates:
        if c and (Path(c) / "bin" / "nvcc").exists():
            return Path(c)
    return None


def nvidia_wheel_includes() -> list[str]:
    """Include folders of the `nvidia-*` CUDA wheels (headers such as cusparse.h that torch's headers pull in)."""
    found = []
    for site in sys.path:
        found += glob.glob(os.path.join(site, "nvidia", "cu*", "include"))
        found += glob.glob(os.path.join(site, "nvidia", "*", "include"))
    return sorted({p for p in found if os.path.isdir(p)})


def is_built(lib: Library) -> bool:
    return built_at(lib) is not None


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
        reason = cuda_toolchain_reason()
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


def _cpp_extension():
    """torch.utils.cpp_extension, imported with CUDA_HOME set first (it guesses once, at import, and
    would otherwise take /usr/local for an nvcc wrapper in /usr/local/bin) and without its warning that
    no GPU is present, which is expected when only compiling."""
    home = find_cuda_home()
    if home is not None:
        os.environ.setdefault("CUDA_HOME", str(home))
    logger = logging.getLogger("torch.utils.cpp_extension")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        from torch.utils import cpp_extension
    finally:
        logger.setLevel(level)
    if os.environ.get("CUDA_HOME"):
        cpp_extension.CUDA_HOME = os.environ["CUDA_HOME"]
    return cpp_extension


def _compile_and_load(lib: Library, verbose: bool) -> None:
    cpp_extension = _cpp_extension()
    lib.build_dir.mkdir(parents=True, exist_ok=True)
    includes = [str(d) for d in lib.include_dirs]
    if lib.kind == "cuda":
        includes += nvidia_wheel_includes()
    try:
        cpp_extension.load(
            name=lib.name,
            sources=[str(s) for s in lib.sources],
            extra_cflags=list(CFLAGS),
            extra_ldflags=list(ldflags()),
            extra_cuda_cflags=list(CUDA_CFLAGS) if lib.kind == "cuda" else None,
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
        reason = cuda_toolchain_reason()
        if reason:
            return reason
        if any((root / op).glob("*.cpp")):
            reason = availability(op, "cpu", root)
            if reason:
                return reason
    return cached_failure(lib)

"""JIT build of the C++/CUDA extensions with torch.utils.cpp_extension + ninja, into a persistent cache.

Each operator's sources live in `extensions/<op>/`: `*.cpp` make the CPU library (which also defines
the op schemas), `*.cu` the CUDA library. Libraries register ops into `torch.ops.benchctl` when loaded.
The first use compiles (seconds to minutes); later uses only load the shared object.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

EXTENSIONS_DIR = Path(__file__).resolve().parent.parent / "extensions"
CACHE_ENV = "BENCHCTL_CACHE"
DEFAULT_ARCH_LIST = "8.0;9.0"
_LOADED: dict[str, float] = {}


class BuildError(RuntimeError):
    """A compile or link failure: `summary` is one line, `log` the path to the full compiler output."""

    def __init__(self, summary: str, compiler_lines: str, log: Path | None):
        super().__init__(summary)
        self.summary = summary
        self.compiler_lines = compiler_lines
        self.log = log


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
        for src in self.sources:
            h.update(src.name.encode())
            h.update(src.read_bytes())
        for header in sorted(self.sources[0].parent.glob("*.h")):
            h.update(header.read_bytes())
        return h.hexdigest()[:12]

    @property
    def build_dir(self) -> Path:
        return cache_root() / f"{self.name}-{self.fingerprint()}"


def cache_root() -> Path:
    root = os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "benchctl" / "extensions"
    return Path(root)


def library(op: str, kind: str, root: Path = EXTENSIONS_DIR) -> Library:
    suffix = ".cu" if kind == "cuda" else ".cpp"
    sources = tuple(sorted((root / op).glob(f"*{suffix}")))
    if not sources:
        raise BuildError(f"no {suffix} sources for {op} in {root / op}", "", None)
    return Library(op, kind, sources)


def cuda_toolchain_reason() -> str | None:
    """Why a CUDA extension cannot be compiled here, or None. Also sets the environment it needs."""
    if torch.version.cuda is None:
        return "no CUDA torch: this torch is a CPU-only build, so CUDA extensions cannot be compiled"
    home = find_cuda_home()
    if home is None:
        return "nvcc missing: set CUDA_HOME to the CUDA toolkit folder (with bin/nvcc)"
    os.environ["CUDA_HOME"] = str(home)
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", DEFAULT_ARCH_LIST)
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
    return any(lib.build_dir.glob(f"{lib.name}*.so"))


def cached_failure(lib: Library) -> str | None:
    marker = lib.build_dir / "FAILED"
    return marker.read_text() if marker.exists() else None


def ensure_loaded(op: str, kind: str = "cpu", root: Path = EXTENSIONS_DIR, verbose: bool = False) -> float:
    """Build (if needed) and load one library; returns the seconds it took. Raises BuildError."""
    lib = library(op, kind, root)
    if lib.name in _LOADED:
        return 0.0
    if kind == "cuda":
        reason = cuda_toolchain_reason()
        if reason:
            raise BuildError(reason, "", None)
    start = time.perf_counter()
    _compile_and_load(lib, verbose)
    _LOADED[lib.name] = time.perf_counter() - start
    return _LOADED[lib.name]


def _compile_and_load(lib: Library, verbose: bool) -> None:
    from torch.utils.cpp_extension import load

    lib.build_dir.mkdir(parents=True, exist_ok=True)
    includes = [str(lib.sources[0].parent)]
    if lib.kind == "cuda":
        includes += nvidia_wheel_includes()
    try:
        load(
            name=lib.name,
            sources=[str(s) for s in lib.sources],
            extra_cflags=["-O3", "-march=native", "-fno-math-errno"],
            extra_cuda_cflags=["-O3", "--use_fast_math"] if lib.kind == "cuda" else None,
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
    lines = [l for l in output.splitlines() if re.search(r"error|undefined reference", l, re.I)]
    summary = f"building {lib.name} failed ({len(lines)} error lines); full log: {log}"
    (lib.build_dir / "FAILED").write_text(summary)
    return BuildError(summary, "\n".join(lines[:20]), log)


def availability(op: str, kind: str = "cpu", root: Path = EXTENSIONS_DIR) -> str | None:
    """Reason an extension is unusable without compiling anything now, or None (built or buildable)."""
    try:
        lib = library(op, kind, root)
    except BuildError as exc:
        return exc.summary
    if kind == "cuda":
        reason = cuda_toolchain_reason()
        if reason:
            return reason
    return cached_failure(lib)

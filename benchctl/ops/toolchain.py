"""The toolchain an extension is built with: compiler flags, the C++ runtime to link, the CUDA toolkit and
torch.utils.cpp_extension imported the right way, and what of all this goes into a build's cache key."""

from __future__ import annotations

import functools
import glob
import logging
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import torch

ARCH_ENV = "TORCH_CUDA_ARCH_LIST"
DEFAULT_ARCH_LIST = "8.0;9.0"
# -fopenmp: ATen's parallel_for is a header template that runs on torch's OpenMP thread pool only
# when the including file is compiled with OpenMP; without it, every parallel_for runs on one
# thread. The OpenMP runtime linked is the one torch already loaded (same soname, libgomp.so.1).
OPENMP_FLAGS = ("-fopenmp",) if sys.platform.startswith("linux") else ()
CFLAGS = ("-O3", "-march=native", "-fno-math-errno", *OPENMP_FLAGS)
CUDA_CFLAGS = ("-O3", "--use_fast_math")


def arch_list() -> str:
    """The GPU architectures CUDA code is compiled for (TORCH_CUDA_ARCH_LIST, or benchctl's default)."""
    return os.environ.get(ARCH_ENV, DEFAULT_ARCH_LIST)


def flags(kind: str) -> tuple[str, ...]:
    if kind != "cuda":
        return CFLAGS + ldflags()
    return CFLAGS + ldflags() + CUDA_CFLAGS + (arch_list(),)


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
def cpu_signature() -> str:
    """The CPU model and feature flags: a library built with -march=native may not run elsewhere."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.machine() + platform.processor()
    keep = [l for l in lines if l.startswith(("model name", "flags"))]
    return platform.machine() + "\n".join(sorted(set(keep)))


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


def cpp_extension():
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




@functools.lru_cache(maxsize=1)
def compiler_identity() -> str:
    """The C++ compiler a build uses (CXX, else c++) and its version: another compiler is another build."""
    cxx = os.environ.get("CXX") or "c++"
    path = shutil.which(cxx) or cxx
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        version = ""
    return f"{path}\n{version.splitlines()[0] if version else ''}"


def cache_key() -> str:
    """Everything of the toolchain a library's cache folder is keyed on, besides its sources."""
    return "\n".join([torch.__version__, cpu_signature(), compiler_identity(), arch_list()])

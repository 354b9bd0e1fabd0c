"""benchctl.ops.build: the persistent cache (a second process only loads), compiler errors reported as
BuildError with the compiler's own lines, the failure remembered for `availability`, and the real
CUDA sources of every operator compiling and linking wherever nvcc and a CUDA torch are present."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from benchctl import cache
from benchctl.ops import build, toolchain

REPO = Path(__file__).resolve().parents[2]
BROKEN = """
#include <torch/library.h>
int hoconv2d_broken() { return value_that_does_not_exist + 1; }
"""
FIXED = "int hoconv2d_fixed() { return 1; }\n"
THROWS = """
#include <ATen/core/Tensor.h>
#include <torch/library.h>
at::Tensor must_be_4d(const at::Tensor& x) { TORCH_CHECK(x.dim() == 4, "x has ", x.dim(), " dims"); return x; }
TORCH_LIBRARY(benchctl_throws, m) { m.def("must_be_4d(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(benchctl_throws, CPU, m) { m.impl("must_be_4d", &must_be_4d); }
"""
CALL_THROWS = """
import sys, torch
from pathlib import Path
from benchctl.ops import build
build.build("throws", "cpu", Path(sys.argv[1]))
try:
    torch.ops.benchctl_throws.must_be_4d(torch.zeros(2))
except RuntimeError as exc:
    print(str(exc).splitlines()[0])
"""
FRESH_PROCESS = """
import json, time
import torch
from benchctl.ops import build
start = time.perf_counter()  # the load alone: importing torch can take seconds on a busy machine
result = build.build("hoconv2d", "cpu")
print(json.dumps({"compiled": result.compiled, "seconds": time.perf_counter() - start,
                  "op": hasattr(torch.ops.hoconv2d, "hoconv2d_filter")}))
"""


def artefacts(lib: build.Library) -> dict[str, int]:
    """Modification times of the objects and libraries in a build folder."""
    return {p.name: p.stat().st_mtime_ns for p in lib.build_dir.iterdir() if p.suffix in (".o", ".so")}


@pytest.fixture
def tmp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An extensions root of our own and a cache folder of our own, so nothing real is touched."""
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    root = tmp_path / "extensions"
    (root / "broken").mkdir(parents=True)
    (root / "broken" / "broken.cpp").write_text(BROKEN)
    return root


def test_second_load_in_a_fresh_process_compiles_nothing() -> None:
    build.build("hoconv2d", "cpu")  # the first build of this source may compile (tens of seconds)
    lib = build.library("hoconv2d", "cpu")
    before = artefacts(lib)
    assert any(name.endswith(".so") for name in before)
    proc = subprocess.run([sys.executable, "-c", FRESH_PROCESS], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["op"] and not report["compiled"]
    assert report["seconds"] < 1.5  # ~0.5 s on an idle 2-core machine
    assert artefacts(lib) == before


def test_cache_folder_follows_the_sources(tmp_root: Path) -> None:
    lib = build.library("broken", "cpu", tmp_root)
    assert lib.build_dir.parent == tmp_root.parent / "cache" / "extensions"
    first = lib.build_dir
    (tmp_root / "broken" / "broken.cpp").write_text(BROKEN + "\n// edited\n")
    assert build.library("broken", "cpu", tmp_root).build_dir != first


def test_compile_error_gives_compiler_lines_and_is_remembered(tmp_root: Path) -> None:
    with pytest.raises(build.BuildError) as info:
        build.build("broken", "cpu", tmp_root)
    err = info.value
    assert "benchctl_broken_cpu failed" in err.summary and "\n" not in err.summary
    assert "value_that_does_not_exist" in err.compiler_lines and "error" in err.compiler_lines
    assert err.log is not None and "value_that_does_not_exist" in err.log.read_text()
    start = time.perf_counter()
    assert build.availability("broken", "cpu", tmp_root) == err.summary
    assert time.perf_counter() - start < 1.0  # read from the marker, not recompiled


def test_fixed_source_is_buildable_again(tmp_root: Path) -> None:
    with pytest.raises(build.BuildError):
        build.build("broken", "cpu", tmp_root)
    (tmp_root / "broken" / "broken.cpp").write_text(FIXED)
    assert build.availability("broken", "cpu", tmp_root) is None
    assert build.build("broken", "cpu", tmp_root).compiled


def test_a_source_newer_than_its_library_is_reported_as_compiled(tmp_root: Path) -> None:
    (tmp_root / "broken" / "broken.cpp").write_text(FIXED)
    code = ("import json, sys; from pathlib import Path; from benchctl.ops import build; "
            "print(json.dumps(build.build('broken', 'cpu', Path(sys.argv[1])).compiled))")
    runs = []
    for touch in (False, False, True):
        if touch:  # same text (same cache folder), newer than the library: ninja rebuilds
            os.utime(tmp_root / "broken" / "broken.cpp", ns=(time.time_ns(), time.time_ns()))
        proc = subprocess.run([sys.executable, "-c", code, str(tmp_root)], cwd=REPO, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert runs == [True, False, True]


def test_missing_sources_are_a_reason_not_a_crash(tmp_root: Path) -> None:
    assert "no .cu sources" in build.availability("broken", "cuda", tmp_root)
    with pytest.raises(build.BuildError, match="no .cpp sources"):
        build.build("nothing_here", "cpu", tmp_root)


def test_extension_ops_lists_folders_with_sources(tmp_root: Path) -> None:
    (tmp_root / "empty").mkdir()
    assert build.extension_ops(tmp_root) == ["broken"]
    assert "hoconv2d" in build.extension_ops()


# The kernels each CUDA library registers: the test fails when a library with .cu sources is missing here.
CUDA_KERNELS = {
    "grid_sample": ("grid_sample_forward", "grid_sample_grid_backward"),
    "hoconv2d": ("hoconv2d_filter", "hoconv2d_filter_backward"),
    "lstm_cell": ("lstm_cell_pointwise", "lstm_cell_pointwise_backward"),
    "naflex_posembed": ("naflex_posembed_forward", "naflex_posembed_table_backward"),
}


def test_every_cuda_library_is_compiled_below() -> None:
    with_cu = [op for op in build.extension_ops() if any((REPO / "extensions" / op).glob("*.cu"))]
    assert sorted(with_cu) == sorted(CUDA_KERNELS)


@pytest.mark.parametrize("op", sorted(CUDA_KERNELS))
def test_cuda_sources_compile_and_link(op: str) -> None:
    reason = toolchain.cuda_toolchain_reason()
    if reason:
        pytest.skip(reason)
    assert toolchain.find_cuda_home() is not None
    build.build(op, "cpu")  # the op schemas
    result = build.build(op, "cuda")  # first run: a minute or more of nvcc; a failure fails
    assert result.name == f"benchctl_{op}_cuda"
    assert build.built_at(build.library(op, "cuda")) is not None
    for kernel in CUDA_KERNELS[op]:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(f"{op}::{kernel}", "CUDA"), kernel


def test_a_compiler_that_finds_only_a_static_cxx_runtime_still_links_torchs(
        tmp_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relocated GCC whose library folder holds only libstdc++.a put a second C++ runtime into each
    extension; the process then crashed on the first error message that formats a number."""
    static = Path(subprocess.run(["g++", "-print-file-name=libstdc++.a"], capture_output=True,
                                 text=True).stdout.strip())
    if not static.is_absolute():
        pytest.skip("g++ has no static libstdc++ to mislead it with")
    fake = tmp_path / "toolchain"
    fake.mkdir()
    (fake / "libstdc++.a").symlink_to(static)
    compiler = fake / "g++"
    compiler.write_text(f'#!/bin/sh\nexec g++ -B{fake}/ "$@"\n')
    compiler.chmod(0o755)
    monkeypatch.setenv("CXX", str(compiler))
    (tmp_root / "throws").mkdir()
    (tmp_root / "throws" / "throws.cpp").write_text(THROWS)
    proc = subprocess.run([sys.executable, "-c", CALL_THROWS, str(tmp_root)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "x has 1 dims"


def test_the_cxx_runtime_linked_is_the_one_this_process_mapped(tmp_path: Path) -> None:
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f01 r--p 00000000 08:01 12 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7f02-7f03 r-xp 00000000 00:00 0 \n"
        "7f04-7f05 r--p 00000000 08:01 34 /opt/env/lib/libstdc++.so.6.0.33\n"
        "7f06-7f07 rw-p 00000000 00:00 0 [heap]\n")
    assert toolchain.loaded_library("libstdc++.so", maps) == "/opt/env/lib/libstdc++.so.6.0.33"
    assert toolchain.loaded_library("libnothing.so", maps) is None
    assert toolchain.loaded_library("libstdc++.so", tmp_path / "absent") is None
    if sys.platform.startswith("linux"):  # torch links libstdc++, so this process has it mapped
        assert any("libstdc++.so" in flag for flag in toolchain.ldflags())


def test_a_library_that_builds_but_does_not_load_names_the_missing_symbol(tmp_root: Path) -> None:
    """The link of a shared library leaves undefined symbols for the loader: the error is the loader's."""
    folder = tmp_root / "half_defined"
    folder.mkdir()
    (folder / "half.cpp").write_text("int defined_elsewhere(int);\nint half(int x) { return defined_elsewhere(x); }\n")
    with pytest.raises(build.BuildError) as caught:
        build.build_library(build.library("half_defined", "cpu", tmp_root))
    assert "(1 error line)" in caught.value.summary
    assert "undefined symbol" in caught.value.compiler_lines and "defined_elsewhere" in caught.value.compiler_lines

"""Each built-in operator's C++/CUDA sources use one torch.library namespace of its own: the one its
.cpp opens with TORCH_LIBRARY, which every TORCH_LIBRARY_IMPL block (the .cu's CUDA kernels included)
attaches to, and which its operator file's `Extension` names. Read from the sources, so a .cu that
only compiles here (no GPU) is still held to it."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from benchctl.ops import registry
from benchctl.ops.namespaces import OPENS
from benchctl.ops.paths import EXTENSIONS_DIR

ATTACHES = re.compile(r"^\s*TORCH_LIBRARY_IMPL\s*\(\s*(\w+)\s*,", re.M)
FOLDERS = sorted(p for p in EXTENSIONS_DIR.iterdir() if p.is_dir() and any(p.glob("*.cpp")))


def opened(folder: Path) -> set[str]:
    return {ns for src in folder.rglob("*.cpp") for ns in OPENS.findall(src.read_text())}


def mismatches(folder: Path) -> list[str]:
    """Each source file's TORCH_LIBRARY_IMPL namespace that is not the one the folder's .cpp opens."""
    (namespace,) = opened(folder) or {""}
    return [f"{src.name}: {ns} (not {namespace})" for src in sorted(folder.rglob("*.c*"))
            if src.suffix in (".cpp", ".cu") for ns in ATTACHES.findall(src.read_text()) if ns != namespace]


def test_every_builtin_extension_folder_is_found() -> None:
    names = {p.name for p in FOLDERS}
    assert names == {p.name for p in EXTENSIONS_DIR.iterdir() if p.is_dir() and p.name != "common"}
    assert names and all(any(p.glob("*.cu")) for p in FOLDERS)  # each has CUDA kernels to hold to it


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_cuda_kernels_attach_to_the_namespace_the_cpp_opens(folder: Path) -> None:
    assert opened(folder) == {folder.name}  # one namespace, the operator's own name
    assert mismatches(folder) == []


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_operator_file_declares_that_namespace(folder: Path) -> None:
    registry.discover(only=[folder.name])
    ext = importlib.import_module(f"benchctl_ops.{folder.name}.ext")
    assert ext.EXT.namespace == folder.name and ext.EXT.folder == folder


def test_a_cu_whose_kernels_attach_elsewhere_is_a_mismatch(tmp_path: Path) -> None:
    (tmp_path / "op.cpp").write_text("TORCH_LIBRARY(mine, m) {}\nTORCH_LIBRARY_IMPL(mine, CPU, m) {}\n")
    (tmp_path / "op_cuda.cu").write_text("TORCH_LIBRARY_IMPL(benchctl, CUDA, m) {}\n")
    assert mismatches(tmp_path) == ["op_cuda.cu: benchctl (not mine)"]

"""Builds and loads in a child process (tiny sources without torch headers, so each compile takes
seconds): two copies of one project alternate without rebuilding, an edited header in a subfolder
rebuilds, and a library that aborts the process loading it is a reason, not the end of the caller."""

import shutil
from pathlib import Path

import pytest

from benchctl import cache
from benchctl.ops import isolated, registry
from benchctl.ops.build import BuildError
from benchctl.ops.cells import Cell
from benchctl.ops.extension import Extension
from benchctl.ops.registry import Case, Operator, Target, randn
from benchctl.sweep.preflight import Preflight

ABORTS = """#include <stdexcept>
namespace { struct Registration { Registration() { throw std::runtime_error("static registration failed"); } } r; }
int aborts() { return 1; }
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    src = tmp_path / "one" / "csrc"
    (src / "sub").mkdir(parents=True)
    (src / "f.cpp").write_text('#include "sub/helper.h"\nint f() { return helper(); }\n')
    (src / "sub" / "helper.h").write_text("inline int helper() { return 1; }\n")
    return tmp_path


def compiled(folder: Path) -> bool:
    return isolated.build_library(Extension("tiny", sources=folder, operator="tiny").library("cpu")).compiled


def test_two_copies_of_a_project_alternate_without_rebuilding(project):
    shutil.copytree(project / "one", project / "two")
    one, two = project / "one" / "csrc", project / "two" / "csrc"
    assert [compiled(f) for f in (one, two, one, two)] == [True, True, False, False]


def test_an_edited_header_in_a_subfolder_rebuilds(project):
    folder = project / "one" / "csrc"
    assert [compiled(folder), compiled(folder)] == [True, False]
    (folder / "sub" / "helper.h").write_text("inline int helper() { return 2; }\n")
    assert compiled(folder)


def test_a_cache_entry_that_loaded_before_is_not_loaded_again_until_an_input_is_newer(project, monkeypatch):
    folder = project / "one" / "csrc"
    lib = Extension("tiny", sources=folder, operator="tiny").library("cpu")
    assert not isolated.proven(lib)
    assert isolated.build_library(lib).compiled and isolated.proven(lib)
    children = []
    real = isolated._ask
    monkeypatch.setattr(isolated, "_ask", lambda *a, **k: children.append(1) or real(*a, **k))
    assert isolated.build_library(lib).seconds == 0.0 and children == []  # no child started
    header = folder / "sub" / "helper.h"
    header.write_text(header.read_text())  # the same text, newer than the library: ninja would compile
    assert not isolated.proven(lib)
    isolated.build_library(lib)
    assert children == [1] and isolated.proven(lib)


def test_a_library_that_aborts_while_loading_makes_its_cells_unavailable(project):
    (project / "boom").mkdir()
    (project / "boom" / "boom.cpp").write_text(ABORTS)
    ext = Extension("boom", sources=project / "boom", operator="abort_toy")
    with pytest.raises(BuildError) as info:
        isolated.build_library(ext.library("cpu"))
    assert "SIGABRT" in info.value.summary and "static registration failed" in info.value.summary

    def inputs(case: Case):
        return {"x": randn(case, case.generator(), 2, 3)}

    op = Operator("abort_toy", "d", {"batch_size": 2}, (Target("op", inputs),))
    op.implementation("py")(lambda x: x * 2)
    op.implementation("cpp", devices=("cpu",), build=ext.load, prepare=ext.prepare)(lambda x: x * 2)
    registry.register(op)
    cells = [Cell.make("abort_toy", "op", impl, "cpu", "float32", {"batch_size": 2}) for impl in ("py", "cpp")]
    preflight = Preflight(cells)
    said: list[str] = []
    preflight.build_extensions(said.append)  # this process is still here afterwards
    runnable, reasons = preflight.availability()
    assert [c.impl for c in runnable] == ["py"]
    [reason] = reasons
    assert reason.startswith("abort_toy cpp: loading benchctl_abort_toy_boom_cpu ended its process")
    assert "static registration failed" in reason


def test_a_sweep_says_an_extension_built_before_is_taken_from_the_cache_and_builds_one_that_is_not(project):
    ext = Extension("tiny", sources=project / "one" / "csrc", operator="cached_toy")

    def inputs(case: Case):
        return {"x": randn(case, case.generator(), 2, 3)}

    op = Operator("cached_toy", "d", {"batch_size": 2}, (Target("op", inputs),))
    op.implementation("py")(lambda x: x * 2)
    op.implementation("cpp", devices=("cpu",), build=ext.load)(lambda x: x * 2)
    registry.register(op)
    cells = [Cell.make("cached_toy", "op", "cpp", "cpu", "float32", {"batch_size": 2})]
    said: list[str] = []
    Preflight(cells).build_extensions(said.append)
    assert said[0] == "building cached_toy cpp for cpu ..." and said[1].startswith("  ready in ")
    said.clear()
    Preflight(cells).build_extensions(said.append)
    assert said == ["cached_toy cpp for cpu: built before (its cached library)"]

"""A library's name and cache key: the operator and Extension name, and every input torch's JIT would
rebuild for (files under the source folder, headers included from elsewhere, flags, include folders,
defines, where the sources are)."""

from pathlib import Path

import pytest

from benchctl import cache
from benchctl.ops.extension import Extension
from benchctl.ops.library import BuildOptions

SOURCE = '#include "sub/helper.h"\n#include <shared.h>\nint f() { return helper() + shared(); }\n'


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    src = tmp_path / "op" / "csrc"
    (src / "sub").mkdir(parents=True)
    (src / "f.cpp").write_text(SOURCE)
    (src / "sub" / "helper.h").write_text("inline int helper() { return 1; }\n")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "shared.h").write_text("inline int shared() { return 2; }\n")
    return tmp_path


def ext(tree: Path, **options) -> Extension:
    return Extension("ext", sources=tree / "op" / "csrc", include_dirs=[tree / "shared"], operator="op", **options)


def test_two_operators_with_same_named_source_folders_get_two_libraries(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    for name in ("a", "b"):
        (tmp_path / name / "csrc").mkdir(parents=True)
        (tmp_path / name / "csrc" / "op.cpp").write_text("int f() { return 1; }\n")
    a = Extension("ext", sources=tmp_path / "a" / "csrc", operator="op_a").library("cpu")
    b = Extension("ext", sources=tmp_path / "b" / "csrc", operator="op_b").library("cpu")
    assert (a.name, b.name) == ("benchctl_op_a_ext_cpu", "benchctl_op_b_ext_cpu")
    assert a.build_dir != b.build_dir and a.module != b.module


def test_the_operator_is_taken_from_the_file_that_declares_the_extension(tmp_path):
    scope = {"__name__": "benchctl_ops.my_op", "Extension": Extension, "here": tmp_path}
    exec("EXT = Extension('csrc', sources=here)", scope)
    assert scope["EXT"].operator == "my_op" and scope["EXT"].stem == "my_op_csrc"
    scope = {"__name__": "benchctl_ops.sqadd.ext", "Extension": Extension, "here": tmp_path}
    exec("EXT = Extension('sqadd', sources=here)", scope)
    assert scope["EXT"].stem == "sqadd"


def test_an_edited_header_in_a_subfolder_changes_the_key(tree):
    before = ext(tree).library("cpu").build_dir
    (tree / "op" / "csrc" / "sub" / "helper.h").write_text("inline int helper() { return 3; }\n")
    assert ext(tree).library("cpu").build_dir != before


def test_a_header_included_from_another_folder_is_an_input(tree):
    lib = ext(tree).library("cpu")
    assert (tree / "shared" / "shared.h").resolve() in lib.inputs()
    before = lib.build_dir
    (tree / "shared" / "shared.h").write_text("inline int shared() { return 4; }\n")
    assert ext(tree).library("cpu").build_dir != before


@pytest.mark.parametrize("option", [{"extra_cflags": ["-O1"]}, {"extra_ldflags": ["-lm"]}, {"defines": ["FAST=1"]},
                                    {"extra_cuda_cflags": ["-lineinfo"]}, {"include_dirs": ["sub"]}])
def test_every_build_option_is_part_of_the_key(tree, option):
    (tree / "op" / "csrc" / "k.cu").write_text("__global__ void k() {}\n")
    for kind in ("cpu", "cuda") if "extra_cuda_cflags" not in option else ("cuda",):
        options = {**option, "include_dirs": [tree / "shared", *option.get("include_dirs", ())]}
        changed = Extension("ext", sources=tree / "op" / "csrc", operator="op", **options)
        assert changed.library(kind).build_dir != ext(tree).library(kind).build_dir, kind


def test_options_reach_the_compiler(tree):
    lib = ext(tree, extra_cflags=["-O1"], defines=["FAST=1"], extra_ldflags=["-lm"]).library("cpu")
    assert lib.cflags()[-2:] == ["-O1", "-DFAST=1"] and lib.ldflags()[-1] == "-lm"
    assert (tree / "shared").resolve() in lib.include_dirs
    assert BuildOptions.from_json(lib.options.to_json()) == lib.options


def test_two_copies_of_one_project_are_two_entries(tree, tmp_path):
    """torch writes the source and include paths into its build file: two copies sharing one entry
    would rebuild it in turn."""
    import shutil

    shutil.copytree(tree / "op", tmp_path / "copy" / "op")
    copy = Extension("ext", sources=tmp_path / "copy" / "op" / "csrc", include_dirs=[tree / "shared"], operator="op")
    assert copy.library("cpu").name == ext(tree).library("cpu").name
    assert copy.library("cpu").build_dir != ext(tree).library("cpu").build_dir

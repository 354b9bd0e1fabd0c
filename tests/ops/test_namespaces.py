"""Namespace clashes read from the sources, before any library is loaded."""

from pathlib import Path

from benchctl.ops import namespaces

OPENS = "#include <torch/library.h>\nTORCH_LIBRARY({ns}, m) {{\n  m.def(\"f(Tensor x) -> Tensor\");\n}}\n"
FRAGMENT = "TORCH_LIBRARY_FRAGMENT({ns}, m) {{}}\nTORCH_LIBRARY_IMPL({ns}, CPU, m) {{}}\n"


def folder(root: Path, name: str, text: str, file: str = "op.cpp") -> Path:
    (root / name / "csrc").mkdir(parents=True)
    (root / name / "csrc" / file).write_text(text)
    return root / name / "csrc"


def test_two_operators_opening_one_namespace_are_one_line_with_the_fix(tmp_path):
    a = folder(tmp_path, "a", OPENS.format(ns="shared_ns"), "muladd.cpp")
    b = folder(tmp_path, "b", OPENS.format(ns="shared_ns"), "lltm.cpp")
    c = folder(tmp_path, "c", OPENS.format(ns="own_ns"))
    [clash] = namespaces.clashes([("muladd", a), ("lltm", b), ("other", c)])
    line = clash.line()
    assert "\n" not in line
    assert "muladd (" + str(a / "muladd.cpp") + ")" in line and "lltm (" + str(b / "lltm.cpp") + ")" in line
    assert "TORCH_LIBRARY(shared_ns, ...)" in line
    assert "TORCH_LIBRARY_FRAGMENT" in line and "its own namespace" in line
    assert namespaces.apart([clash]) == {frozenset({"muladd", "lltm"})}


def test_fragments_and_impl_blocks_share_a_namespace_freely(tmp_path):
    a = folder(tmp_path, "a", OPENS.format(ns="shared_ns"))
    b = folder(tmp_path, "b", FRAGMENT.format(ns="shared_ns"))
    c = folder(tmp_path, "c", FRAGMENT.format(ns="shared_ns"))
    assert namespaces.clashes([("a", a), ("b", b), ("c", c)]) == []


def test_an_edited_source_is_read_again(tmp_path):
    a = folder(tmp_path, "a", OPENS.format(ns="ns_one"))
    b = folder(tmp_path, "b", OPENS.format(ns="ns_two"))
    assert namespaces.clashes([("a", a), ("b", b)]) == []
    (b / "op.cpp").write_text(OPENS.format(ns="ns_one") + "// edited\n")
    assert len(namespaces.clashes([("a", a), ("b", b)])) == 1

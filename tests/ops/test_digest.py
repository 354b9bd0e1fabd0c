"""The digest of the code a cell times: it moves with the implementation's own code, its helpers, kernels'
configs, constants and extension sources, and with nothing else: not with another implementation in the
same file, not with where the files lie, not with the harness's wrappers around it."""

from __future__ import annotations

import functools
import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from benchctl.measure.result import PassResult
from benchctl.ops import digest, registry
from benchctl.ops.extension import Extension
from benchctl.ops.triton_support import Pinned
from benchctl.sweep.driver import stamp

USER = '''
import torch

SCALE = 2.0


def helper(x):
    return x * SCALE


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return helper(x)

    @staticmethod
    def backward(ctx, g):
        return g * SCALE


def py(x):
    return helper(x) + 1


def other(x):
    return x - 1


def function(x):
    return Twice.apply(x)
'''


def load(folder: Path, text: str, name: str = "digest_user") -> ModuleType:
    """`text` as module `name` from a file in `folder` (its source readable, as an operator's file is)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)  # as the registry loads an operator
    spec.loader.exec_module(module)
    return module


def codes(module: ModuleType) -> dict[str, str]:
    return {n: digest.digest([getattr(module, n)]) for n in ("py", "other", "function")}


def test_the_digest_is_twelve_hex_digits_that_two_copies_in_different_folders_share(tmp_path):
    a, b = codes(load(tmp_path / "a", USER)), codes(load(tmp_path / "b", USER))
    assert a == b and len(set(a.values())) == 3
    assert all(len(v) == digest.DIGEST_CHARS and int(v, 16) >= 0 for v in a.values())


def test_a_helper_changes_the_implementations_that_call_it_and_no_other(tmp_path):
    before = codes(load(tmp_path / "a", USER))
    after = codes(load(tmp_path / "b", USER.replace("return x * SCALE", "return x * SCALE * 1.0")))
    assert after["py"] != before["py"] and after["function"] != before["function"]  # through the Function
    assert after["other"] == before["other"]


def test_a_constant_and_an_autograd_functions_backward_count(tmp_path):
    before = codes(load(tmp_path / "a", USER))
    scaled = codes(load(tmp_path / "b", USER.replace("SCALE = 2.0", "SCALE = 3.0")))
    backward = codes(load(tmp_path / "c", USER.replace("return g * SCALE", "return g * SCALE + 0")))
    assert scaled["py"] != before["py"] and scaled["other"] == before["other"]
    assert backward["function"] != before["function"] and backward["py"] == before["py"]


def test_wrappers_are_followed_to_what_they_wrap(tmp_path):
    one, two = load(tmp_path / "a", USER), load(tmp_path / "b", USER.replace("+ 1", "+ 2"))
    assert digest.digest([functools.partial(one.py)]) == digest.digest([one.py])
    assert digest.digest([functools.partial(two.py)]) != digest.digest([one.py])

    class Kernel:  # an autotuned kernel's stand-in: Pinned reads its configs
        configs = [1, 2]

    assert digest.digest([Pinned(one.py, Kernel(), 0)]) != digest.digest([Pinned(two.py, Kernel(), 0)])


def test_the_harness_and_installed_packages_are_not_hashed():
    """Their code is the harness's commit (git_sha) and the software's versions, not the implementation's."""
    assert digest.digest([registry.call_with_inputs]) == digest.digest([])
    assert digest.digest([functools.partial(shutil.copy)]) == digest.digest([])


def test_an_extensions_sources_and_options_count_and_their_folder_does_not(tmp_path):
    def ext(folder: Path, body: str, defines=()) -> Extension:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "k.cpp").write_text(body)
        return Extension("digest_probe", sources=folder, defines=defines)

    source = "int k() { return 1; }\n"
    first = digest.digest([ext(tmp_path / "a" / "k", source)])
    assert digest.digest([ext(tmp_path / "b" / "k", source)]) == first
    assert digest.digest([ext(tmp_path / "c" / "k", source.replace("1", "2"))]) != first
    assert digest.digest([ext(tmp_path / "d" / "k", source, defines=("FAST",))]) != first


def test_a_registered_cell_and_its_partner_are_stamped(builtin_ops):
    py, cpp = (digest.cell_code("grid_sample", "sample", impl) for impl in ("py", "cpp"))
    assert py and cpp and py != cpp
    assert digest.cell_code("grid_sample", "sample", "py@compile") == py  # the modifier is in the name
    assert digest.cell_code("no_such_operator", "op", "py") is None
    (row,) = stamp([PassResult(op="grid_sample", target="sample", impl="cpp", paired_with="py")], {})
    assert (row["impl_code"], row["partner_code"]) == (cpp, py)
    (alone,) = stamp([PassResult(op="grid_sample", target="sample", impl="cpp")], {})
    assert alone["impl_code"] == cpp and "partner_code" not in alone


@pytest.mark.parametrize("op, target, a, b", [("hoconv2d", "filter", "py", "cpp"),
                                              ("lstm_cell", "cell", "py", "triton")])
def test_builtin_implementations_of_one_operator_differ(builtin_ops, op, target, a, b):
    assert digest.cell_code(op, target, a) != digest.cell_code(op, target, b)


def test_a_cell_whose_code_cannot_be_read_gets_no_digest_and_keeps_its_row(builtin_ops, monkeypatch):
    digest.cell_code.cache_clear()
    monkeypatch.setattr(digest, "digest", lambda roots: (_ for _ in ()).throw(OSError("gone")))
    try:
        (row,) = stamp([PassResult(op="grid_sample", target="sample", impl="py", median_s=1e-3)], {})
        assert row["median_s"] == 1e-3 and row.get("impl_code") is None
    finally:
        digest.cell_code.cache_clear()


def test_builtin_operators_are_own_code_even_inside_an_installed_package(tmp_path, monkeypatch):
    """A wheel puts implementations/ inside the benchctl package, whose own code is not hashed."""
    package = tmp_path.resolve() / "site" / "benchctl"
    module = load(package / "implementations", USER)
    monkeypatch.setattr(digest, "_NOT_OWN", (f"{package}/",))
    monkeypatch.setattr(digest, "_BUILTIN", f"{tmp_path.resolve()}/elsewhere/")
    assert digest.digest([module.other]) == digest.digest([])
    monkeypatch.setattr(digest, "_BUILTIN", f"{package}/implementations/")
    assert digest.digest([module.other]) != digest.digest([])


def test_two_lambdas_of_one_module_both_count(tmp_path):
    text = "A = lambda x: x + 1\nB = lambda x: x * 2\n\n\ndef py(x):\n    return A(x) + B(x)\n"
    before = digest.digest([load(tmp_path / "a", text, "digest_lambdas").py])
    assert digest.digest([load(tmp_path / "b", text.replace("x + 1", "x + 3"), "digest_lambdas").py]) != before
    assert digest.digest([load(tmp_path / "c", text.replace("x * 2", "x * 4"), "digest_lambdas").py]) != before


def test_implementations_made_by_one_factory_differ_by_what_they_hold(tmp_path):
    text = "def make(block, scale=1.0):\n    def impl(x):\n        return x * block * scale\n    return impl\n"
    module = load(tmp_path / "a", text, "digest_factory")
    assert len({digest.digest([module.make(b, s)]) for b, s in ((64, 1.0), (128, 1.0), (64, 2.0))}) == 3


def test_the_digest_is_the_same_in_another_process():
    """Nothing of a process (an object's address, the order of a set) reaches it: a triton kernel with
    autotune configs included."""
    import subprocess

    cells = [("lstm_cell", "cell", "triton"), ("hoconv2d", "filter", "cpp"), ("grid_sample", "sample", "py")]
    script = ("from benchctl.ops import registry, digest; registry.discover(); "
              f"print([digest.cell_code(*c) for c in {cells!r}])")
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert runs[0] == runs[1] and "None" not in runs[0]

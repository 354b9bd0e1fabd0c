"""Operator discovery from the built-in folder, --ops-dir and BENCHCTL_OPS_PATH; unavailable reasons."""

import pytest
import torch

from benchctl.ops import registry
from benchctl.ops.registry import Case, Operator, Target


def test_builtin_hoconv2d_is_declared_once_with_both_targets(builtin_ops):
    op = builtin_ops["hoconv2d"]
    assert [t.name for t in op.targets] == ["module", "filter"]
    assert op.params == {"batch_size": 8, "C": 3, "H": 224, "W": 224, "k": 5}
    assert op.implementations["py"].devices == ("cpu", "cuda")


def test_hoconv2d_inputs_are_seeded_and_sized(builtin_ops):
    target = builtin_ops["hoconv2d"].target("filter")
    case = Case({"batch_size": 2, "C": 3, "H": 5, "W": 7, "k": 3}, torch.float32, "cpu", seed=3)
    a, b = target.make_inputs(case), target.make_inputs(case)
    assert a["x"].shape == (2, 3, 5, 7) and a["weights"].shape == (2, 9, 5, 7)
    assert torch.equal(a["x"], b["x"]) and a["x"].requires_grad
    other = target.make_inputs(Case(case.params, torch.float32, "cpu", seed=4))
    assert not torch.equal(a["x"], other["x"])


def test_hoconv2d_byte_and_flop_counts(builtin_ops):
    t = builtin_ops["hoconv2d"].target("filter")
    p = {"batch_size": 16, "C": 3, "H": 224, "W": 224, "k": 5}
    bchw, bkkhw = 16 * 3 * 224 * 224, 16 * 25 * 224 * 224
    assert t.bytes(p, 4) == (2 * bchw + bkkhw) * 4
    assert t.bwd_bytes(p, 4) == (3 * bchw + 2 * bkkhw) * 4
    assert t.flops(p) == 2 * bchw * 25


def test_user_operator_from_ops_dir(example_ops_dir):
    ops = registry.discover([example_ops_dir])
    op = ops["scale_shift"]
    assert set(op.implementations) == {"py", "addcmul"}
    inputs = op.targets[0].make_inputs(Case({"batch_size": 2, "dim": 3}))
    out = op.targets[0].call(op.implementations["addcmul"].fn, inputs)
    assert torch.allclose(out, inputs["x"] * inputs["scale"] + inputs["shift"])


def test_broken_operator_file_is_reported_not_raised(tmp_path):
    (tmp_path / "broken.py").write_text("raise ImportError('needs a missing package')\n")
    registry.discover([tmp_path])
    assert "needs a missing package" in registry.load_errors()[str(tmp_path / "broken.py")]


def test_missing_ops_dir_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="operators folder not found"):
        registry.discover([tmp_path / "nope"])


def test_ops_path_environment_variable(tmp_path, monkeypatch):
    (tmp_path / "env_op.py").write_text(
        "from benchctl.ops.registry import Operator, Target, register\n"
        "register(Operator('env_op', 'd', {'batch_size': 1}, (Target('op', lambda c: {}, lambda f, i: f()),)))\n"
    )
    monkeypatch.setenv(registry.OPS_PATH_ENV, str(tmp_path))
    assert "env_op" in registry.discover()


def test_unavailable_reasons(fixture_ops):
    op = fixture_ops["faulty"]
    assert op.implementations["noreason"].unavailable_reason("cpu") == "needs a thing this machine lacks"
    assert "does not support device cuda" in op.implementations["py"].unavailable_reason("cuda")
    if not torch.cuda.is_available():
        reason = fixture_ops["faulty"].implementations["py"].unavailable_reason("cuda")
        assert reason and "cuda" in reason


def test_cuda_reason_names_the_cause():
    reason = registry.cuda_device_reason()
    if torch.version.cuda is None:
        assert reason.startswith("no CUDA torch")
    elif not torch.cuda.is_available():
        assert reason.startswith("no CUDA device")
    else:
        assert reason is None


def test_duplicate_implementation_name_is_refused():
    op = Operator("dup", "d", {"batch_size": 1}, (Target("op", lambda c: {}, lambda f, i: f()),))
    op.implementation("a")(lambda: None)
    with pytest.raises(ValueError, match="registered twice"):
        op.implementation("a")(lambda: None)


def test_a_reloaded_module_registers_its_implementations_again_without_a_clash(tmp_path):
    """An operator package's ext.py reloaded (as a second prepare may) runs its decorators again: the same
    definition replaces itself; another function under a taken name is still refused."""
    import importlib.util

    op = Operator("reloaded", "r", {"batch_size": 1}, (Target("op", lambda c: {}, lambda f, i: f()),))
    path = tmp_path / "impls.py"
    path.write_text("def register(op):\n    @op.implementation('a')\n    def a():\n        return 1\n")
    for _ in range(2):
        spec = importlib.util.spec_from_file_location("reloaded_impls", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.register(op)
    assert op.implementations["a"].fn() == 1
    with pytest.raises(ValueError, match="registered twice"):
        op.implementation("a")(lambda: 2)


COLLIDING = """import torch
from benchctl.ops.registry import Operator, Target, randn, register

LIB = torch.library.Library("{namespace}", "DEF")  # a second file defining this namespace is refused
LIB.define("twice(Tensor x) -> Tensor")
OP = register(Operator("{name}", "d", {{"batch_size": 2}},
                       (Target("op", lambda c: {{"x": randn(c, c.generator(), c.params["batch_size"])}}),)))


@OP.implementation("py")
def py(x):
    return x * 2
"""


def colliding_files(folder, namespace):
    """Two operator files, {namespace}_a.py and {namespace}_b.py, defining torch.library namespace {namespace}."""
    for name in (f"{namespace}_a", f"{namespace}_b"):
        (folder / f"{name}.py").write_text(COLLIDING.format(namespace=namespace, name=name))


def test_a_command_for_one_operator_loads_only_its_file(tmp_path):
    colliding_files(tmp_path, "collide_one")
    ops = registry.discover([tmp_path], only=["collide_one_b"])
    assert "collide_one_b" in ops and "collide_one_a" not in ops
    assert not [p for p in registry.load_errors() if p.startswith(str(tmp_path))]


def test_two_files_defining_one_torch_library_namespace_are_one_error_naming_both(tmp_path):
    colliding_files(tmp_path, "collide_two")
    ops = registry.discover([tmp_path])
    assert "collide_two_a" in ops and "collide_two_b" not in ops  # the first loads; the second is refused
    error = registry.load_errors()[str(tmp_path / "collide_two_b.py")]
    assert error == (f"torch.library namespace collide_two is defined by two operator files, "
                     f"{tmp_path / 'collide_two_a.py'} and {tmp_path / 'collide_two_b.py'}: give each its own "
                     "namespace, or ask for one of them with --op")


def test_an_operator_no_file_is_named_after_loads_every_file(tmp_path):
    (tmp_path / "misc.py").write_text(COLLIDING.format(namespace="collide_misc", name="odd_name"))
    assert "odd_name" in registry.discover([tmp_path], only=["odd_name"])

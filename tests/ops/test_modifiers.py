"""The @compile modifier's names: parsing, the canonical form rows carry, lookup, the alias, IMPLS on the
command line. Nothing here compiles (torch.compile runs on a wrapper's first call)."""

import pytest

from benchctl.errors import UsageError
from benchctl.ops import lookup, modifiers
from benchctl.ops.compiling import CompiledFn
from benchctl.ops.modifiers import CompileSpec
from benchctl.sweep import request


@pytest.mark.parametrize("name, base, spec", [
    ("py@compile", "py", CompileSpec()),
    ("py@compile:max-autotune", "py", CompileSpec("max-autotune")),
    ("py@compile:reduce-overhead", "py", CompileSpec("reduce-overhead")),
    ("cpp@compile:dynamic=False", "cpp", CompileSpec(dynamic=False)),
    ("py@compile:dynamic=true:max-autotune", "py", CompileSpec("max-autotune", True)),
    ("py@compile:dynamic=auto", "py", CompileSpec()),
])
def test_a_name_splits_into_its_implementation_and_how_it_is_compiled(name, base, spec):
    assert modifiers.split(name) == (base, spec)


@pytest.mark.parametrize("name, canonical", [
    ("py@compile:default", "py@compile"),
    ("py@compile:dynamic=TRUE:max-autotune", "py@compile:max-autotune:dynamic=true"),
    ("py@compile:dynamic=auto", "py@compile"),
    ("bmm@compile:dynamic=False", "bmm@compile:dynamic=false"),
    ("py", "py"),
])
def test_rows_carry_one_spelling_per_variant(name, canonical):
    assert modifiers.canonical(name) == canonical


@pytest.mark.parametrize("name, bad", [
    ("py@jit", "unknown modifier"), ("@compile", "unknown modifier"),
    ("py@compile:fast", "unknown compile option 'fast'"),
    ("py@compile:dynamic=maybe", "unknown compile option 'dynamic=maybe'"),
])
def test_a_malformed_modifier_is_a_usage_error_that_shows_the_syntax(name, bad):
    with pytest.raises(UsageError) as err:
        modifiers.split(name)
    assert bad in str(err.value) and modifiers.SYNTAX in str(err.value)


def test_a_modified_implementation_is_built_once_from_its_base(builtin_ops):
    op = builtin_ops["lstm_cell"]
    found = lookup.find(op, "py@compile:dynamic=false")
    assert lookup.find(op, "py@compile:dynamic=False") is found  # one wrapper, one Dynamo cache, per process
    assert found.name == "py@compile:dynamic=false" and found.devices == op.implementations["py"].devices
    assert isinstance(found.fn, CompiledFn) and found.description == "torch.compile (mode default, dynamic false) of py"
    assert "py@compile:dynamic=false" not in op.implementations  # `all` stays the registered ones
    with pytest.raises(KeyError, match="no implementation 'nope'"):
        lookup.find(op, "nope@compile")
    assert lookup.known(op, "cpp@compile") and not lookup.known(op, "nope@compile")


def test_lstm_cells_compile_is_the_modifier_under_its_old_name(builtin_ops):
    compiled = builtin_ops["lstm_cell"].implementations["compile"]
    assert compiled.description == "torch.compile (mode default, dynamic auto) of py"
    assert isinstance(compiled.fn, CompiledFn) and compiled.devices == ("cpu", "cuda")


def test_impls_on_the_command_line_take_modifiers(builtin_ops):
    ops = request.select_ops(["lstm_cell", "patch_resample"])
    chosen = request.select_impls(ops, "py,py@compile:dynamic=False,bmm@compile:max-autotune")
    assert chosen == {"lstm_cell": ["py", "py@compile:dynamic=false"],
                      "patch_resample": ["bmm@compile:max-autotune"]}
    with pytest.raises(UsageError, match="unknown implementation 'nope@compile'"):
        request.select_impls(ops, "nope@compile")


def test_expand_gives_cells_of_the_canonical_name(builtin_ops):
    cells = request.expand(request.SweepRequest("py@compile:default", "cpu", ("lstm_cell",), batch_sizes=(1, 2)))
    assert [(c.impl, c.params["batch_size"]) for c in cells] == [("py@compile", 1), ("py@compile", 2)]
    assert cells[0].resolve().impl is lookup.find(builtin_ops["lstm_cell"], "py@compile")

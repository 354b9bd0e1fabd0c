"""Config + flags -> cells: names, aliases, sweeps, and the errors bad input gets."""

import pytest

from benchctl.sweep import words
from benchctl.sweep.config import load_config, parse_config
from benchctl.errors import UsageError
from benchctl.sweep.request import SweepRequest, expand


def test_py_cpu_expands_to_both_hoconv2d_targets(builtin_ops):
    cells = expand(SweepRequest("py", "cpu", ops=("hoconv2d",), batch_sizes=(1, 2)))
    assert [(c.target, c.params["batch_size"]) for c in cells] == [("module", 1), ("module", 2),
                                                                   ("filter", 1), ("filter", 2)]
    assert all(c.device == "cpu" and c.dtype == "float32" and len(c.passes) == 3 for c in cells)


def test_gpu_is_an_alias_of_cuda_and_all_means_both():
    assert words.parse_devices("gpu") == ["cuda"]
    assert words.parse_devices("cpu,gpu,cuda") == ["cpu", "cuda"]
    assert words.parse_devices("all") == ["cpu", "cuda"]


def test_implementations_not_supporting_a_device_are_left_out(fixture_ops):
    cells = expand(SweepRequest("py,wrong", "all", ops=("faulty",)))
    assert {c.device for c in cells} == {"cpu"} and {c.impl for c in cells} == {"py", "wrong"}


@pytest.mark.parametrize("kwargs, message", [
    ({"impls": "nope"}, "unknown implementation 'nope'"),
    ({"devices": "tpu"}, "unknown device 'tpu'"),
    ({"ops": ("nope",)}, "unknown operator 'nope'"),
    ({"batch_sizes": (0,)}, "param batch_size must be a positive integer, got 0"),
    ({"dtypes": ("float8",)}, "unknown dtype 'float8'"),
    ({"passes": ("sideways",)}, "unknown pass 'sideways'"),
    ({"targets": ("sideways",)}, "unknown target 'sideways'; choose from filter, module"),
    ({"params": {"H": "big"}}, "param H takes numbers, got 'big'"),
    ({"params": {"H": 1.5}}, "param H takes integers, got 1.5"),  # the input factory would make H=1 of it
    ({"params": {"H": [16, 0]}}, "param H must be at least 1, got 0"),
    ({"params": {"k": 4}}, "param k must be odd, got 4"),
    ({"params": {"hidden": 64}}, "no operator here has param 'hidden'; choose from C, H, W, batch_size, k"),
])
def test_bad_requests_name_the_problem_and_the_choices(builtin_ops, kwargs, message):
    req = SweepRequest(**{"impls": "py", "devices": "cpu", "ops": ("hoconv2d",), **kwargs})
    with pytest.raises(UsageError, match=message):
        expand(req)


def test_quick_and_config_params_are_swept_as_a_product(builtin_ops):
    cfg = parse_config({"params": {"hoconv2d": {"batch_size": [1, 2], "k": [3, 5], "H": 16}},
                        "targets": {"hoconv2d": ["filter"]}, "dtypes": ["float64"]})
    cells = expand(SweepRequest("py", "cpu", ops=("hoconv2d",), config=cfg))
    assert sorted((c.params["batch_size"], c.params["k"]) for c in cells) == [(1, 3), (1, 5), (2, 3), (2, 5)]
    assert all(c.params["H"] == 16 and c.target == "filter" and c.dtype == "float64" for c in cells)
    quick = expand(SweepRequest("py", "cpu", ops=("hoconv2d",), quick=True))
    assert sorted({c.params["batch_size"] for c in quick}) == [1, 2, 4]


def test_config_errors_are_one_line_usage_errors(tmp_path, builtin_ops):
    bad = tmp_path / "bad.toml"
    bad.write_text("dtypes = [\n")
    with pytest.raises(UsageError, match="malformed config"):
        load_config(bad)
    with pytest.raises(UsageError, match="unknown key 'batchsize'"):
        parse_config({"batchsize": 3})
    with pytest.raises(UsageError, match="min_time must be a non-negative finite number"):
        parse_config({"timing": {"min_time": "fast"}})
    cfg = parse_config({"params": {"hoconv2d": {"kernel": 3}}})
    with pytest.raises(UsageError, match="hoconv2d has no param 'kernel'"):
        expand(SweepRequest("py", "cpu", ops=("hoconv2d",), config=cfg))
    with pytest.raises(UsageError, match="config file not found"):
        load_config(tmp_path / "missing.toml")
    bad.write_bytes(b"\xff\xfe garbage")
    with pytest.raises(UsageError, match="malformed config .*: 'utf-8' codec can't decode byte 0xff"):
        load_config(bad)
    cfg = parse_config({"params": {"nosuchop": {"H": 8}}, "targets": {"lstm_cell": ["op"]}}, "x.toml")
    with pytest.raises(UsageError, match=r"x.toml \[params\]: unknown operator 'nosuchop'; choose from "):
        expand(SweepRequest("py", "cpu", ops=("hoconv2d",), config=cfg))


def test_shipped_configs_load_and_expand(builtin_ops):
    from pathlib import Path

    for path in sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.toml")):
        cfg = load_config(path)
        names = [n for n in cfg.ops if n in builtin_ops] or ["hoconv2d"]
        assert expand(SweepRequest("all", "all", ops=tuple(names), config=cfg)), path


def test_a_target_keeps_only_the_operators_that_have_it(builtin_ops):
    cells = expand(SweepRequest("all", "cpu", ops=("hoconv2d", "lstm_cell"), targets=("filter",), quick=True))
    assert {(c.op, c.target) for c in cells} == {("hoconv2d", "filter")}


def test_the_implementations_of_one_point_are_measured_one_after_the_other(builtin_ops):
    """A round reaches py and cpp of the same batch size back to back, so their ratio pairs samples
    taken seconds apart."""
    cells = expand(SweepRequest("py,cpp", "cpu", ops=("hoconv2d",), targets=("filter",), batch_sizes=(1, 2, 4)))
    assert [(c.params["batch_size"], c.impl) for c in cells] == [
        (1, "py"), (1, "cpp"), (2, "py"), (2, "cpp"), (4, "py"), (4, "cpp")]


def test_pair_with_times_the_other_implementations_of_each_point_in_alternation_with_it(fixture_ops):
    cells = expand(SweepRequest("py,wrong,zeros", "cpu", ops=("faulty",), batch_sizes=(1, 2), pair_with="py"))
    assert [(c.impl, c.paired_with) for c in cells] == [("py", None), ("wrong", "py"), ("zeros", "py")] * 2
    with pytest.raises(UsageError, match="--pair-with 'loop': it is not among the implementations run here"):
        expand(SweepRequest("py,wrong", "cpu", ops=("faulty",), pair_with="loop"))


def test_pair_with_reference_pairs_each_operator_s_cells_with_its_own_reference(builtin_ops):
    cells = expand(SweepRequest("all", "cpu", ops=("lstm_cell", "patch_resample"), quick=True, pair_with="reference"))
    pairs = {(c.op, c.impl, c.paired_with) for c in cells}
    assert ("lstm_cell", "py", None) in pairs and ("lstm_cell", "cpp", "py") in pairs
    assert ("patch_resample", "bmm", None) in pairs and ("patch_resample", "vmap", "bmm") in pairs
    assert {c.paired_with for c in cells if not c.is_reference} == {"py", "bmm"}
    with pytest.raises(UsageError, match=r"--pair-with 'reference': no operator's reference implementation \(py\) is "
                                         "among those run here; list it in IMPLS too"):
        expand(SweepRequest("cpp", "cpu", ops=("lstm_cell",), pair_with="reference"))


def test_run_s_default_pairs_cpu_cells_with_their_reference_and_never_fails_for_want_of_it(builtin_ops):
    cells = expand(SweepRequest("py,cpp,cuda", "cpu,cuda", ops=("lstm_cell",), batch_sizes=(16,),
                                pair_with="reference-on-cpu"))
    assert {(c.impl, c.device, c.paired_with) for c in cells} == {
        ("py", "cpu", None), ("cpp", "cpu", "py"), ("py", "cuda", None), ("cuda", "cuda", None)}
    alone = expand(SweepRequest("cpp", "cpu", ops=("lstm_cell",), batch_sizes=(16,), pair_with="reference-on-cpu"))
    assert [c.paired_with for c in alone] == [None]
    off = expand(SweepRequest("py,cpp", "cpu", ops=("lstm_cell",), batch_sizes=(16,), pair_with="none"))
    assert [(c.impl, c.paired_with) for c in off] == [("py", None), ("cpp", None)]

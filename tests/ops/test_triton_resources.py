"""Triton kernels compiled ahead of time for a GPU architecture, without a GPU: each launch an implementation
makes is noted (not run), bound and compiled by Triton for each architecture, and read back from ptxas."""

from pathlib import Path

import pytest
import torch

from benchctl.errors import BenchError
from benchctl.ops import triton_resources, triton_support

triton = pytest.importorskip("triton")

TRITON_OPS = Path(__file__).resolve().parents[1] / "fixtures" / "triton_ops"


@pytest.mark.parametrize("text, archs", [
    ("8.0;9.0", [80, 90]),
    ("9.0+PTX 8.6", [86, 90]),
    ("9.0a;9.0", [90]),
    ("", []),
])
def test_the_architectures_are_torchs_arch_list(text, archs):
    assert triton_resources.archs(text) == archs


def test_launches_are_noted_under_every_config_and_nothing_runs():
    from benchctl.ops import registry

    registry.discover([TRITON_OPS], only=["spilly"])
    impl = registry.get("spilly").implementations["triton"]
    x = torch.ones(2, 300)
    out: list[torch.Tensor] = []
    launches = triton_resources.noted_launches(impl.kernels, lambda: out.append(impl.fn(x)))
    noted = [(k.__name__, kw["BLOCK"], kw["num_warps"]) for k, _, kw in launches]
    assert noted == [("cube", 256, 4), ("cube", 4096, 1)]
    assert all(args[0] is x and args[2] == 600 for _, args, _ in launches)
    assert torch.equal(out[0], torch.zeros_like(x))  # the kernel did not write
    assert "run" not in vars(impl.kernels[0]) and "run" not in vars(impl.kernels[0].fn)  # patches taken off
    if triton_support.interpreted(impl.kernels):  # launches run again: Triton's interpreter, blocks of 256
        assert torch.allclose(impl.fn(x).flatten()[:256], torch.sigmoid(torch.tensor(1.0)) + 256)


def test_each_config_and_dtype_is_compiled_for_each_architecture_and_a_capped_one_spills():
    found = triton_resources.of_operator("spilly", [str(TRITON_OPS)])
    assert {impl for impl, _ in found} == {"triton float32", "triton-half bfloat16"}
    kernels = {(k.kernel, k.arch): k for impl, k in found if impl == "triton float32"}
    assert sorted(kernels) == [("cube BLOCK=256 w4", "sm_80"), ("cube BLOCK=256 w4", "sm_90"),
                               ("cube BLOCK=4096 w1", "sm_80"), ("cube BLOCK=4096 w1", "sm_90")]
    roomy, capped = kernels[("cube BLOCK=256 w4", "sm_90")], kernels[("cube BLOCK=4096 w1", "sm_90")]
    assert not roomy.spills and 0 < roomy.registers <= 64 and roomy.warps_per_block == 4
    # maxnreg=32 on 4096 values a thread: at 32 registers, kilobytes go to local memory
    assert capped.registers == 32 and capped.spill_stores > 1000 and capped.spill_loads > 1000
    assert roomy.shared > 0  # tl.sum's cross-warp step: shared memory Triton launches it with
    # the bfloat16-only implementation launches the same kernel: compiled apart, for its own dtype
    half = {k.kernel: k for impl, k in found if impl == "triton-half bfloat16" and k.arch == "sm_90"}
    assert sorted(half) == ["cube BLOCK=256 w4", "cube BLOCK=4096 w1"] and half["cube BLOCK=4096 w1"].spills


@pytest.mark.parametrize("name, broken, reason", [
    ("badly", "undefined_name(x)", r"cube for sm_80: NameError: undefined_name is not defined \(kernel line 4:\d+\)$"),
    # its bfloat16 implementation reaches tl.sigmoid, which takes fp32 and fp64 only
    ("halfway", "tl.sigmoid(x)", r"cube for sm_80: ValueError: Expected dtype .* but got bf16 \(kernel line 4:\d+\)$"),
])
def test_a_kernel_triton_cannot_compile_says_why_and_where_in_one_line(tmp_path, name, broken, reason):
    text = (TRITON_OPS / "spilly.py").read_text().replace('name="spilly"', f'name="{name}"')
    (tmp_path / f"{name}.py").write_text(text.replace("tl.sigmoid(x.to(tl.float32))", broken))
    with pytest.raises(BenchError, match=f"^compiling {name}'s Triton kernels failed: {reason}"):
        triton_resources.of_operator(name, [str(tmp_path)])


def test_an_implementation_that_launches_nothing_on_cpu_tensors_says_so(tmp_path):
    text = (TRITON_OPS / "spilly.py").read_text().replace('name="spilly"', 'name="gpuonly"')
    launch = '    cube[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)\n'
    assert launch in text
    (tmp_path / "gpuonly.py").write_text(text.replace(launch, '    if x.is_cuda:\n    ' + launch))
    with pytest.raises(BenchError, match="failed: triton launched none of its Triton kernels on CPU tensors"):
        triton_resources.of_operator("gpuonly", [str(tmp_path)])


@pytest.mark.parametrize("op", ["grid_sample", "hoconv2d", "lstm_cell", "naflex_posembed"])
def test_no_builtin_triton_kernel_spills_at_the_default_params(op):
    """A guard, as for the CUDA kernels: every config of every built-in Triton kernel, float32, sm_80 and
    sm_90, keeps its values in registers at the operator's default size."""
    found = triton_resources.of_operator(op)
    assert found and {k.arch for _, k in found} == {"sm_80", "sm_90"}
    assert [k.kernel for _, k in found if k.spills] == []


@pytest.mark.gpu
@pytest.mark.parametrize("op_name", ["grid_sample", "hoconv2d", "lstm_cell", "naflex_posembed"])
def test_compiled_ahead_each_kernel_has_the_registers_it_launches_with_on_this_gpu(builtin_ops, op_name, monkeypatch):
    """The figures `build --resources` gives without a GPU are the ones a launched kernel reports (n_regs), for
    this GPU's architecture, at the same params, dtype and config."""
    major, minor = torch.cuda.get_device_capability()
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", f"{major}.{minor}")
    ahead = {(k.kernel.split()[0], k.warps_per_block): k.registers
             for impl, k in triton_resources.of_operator(op_name) if impl == "triton float32"}
    op = builtin_ops[op_name]
    impl = op.implementations["triton"]
    triton_resources.forward_backward(op, impl, "cuda")
    torch.cuda.synchronize()
    launched: dict[tuple[str, int], set[int]] = {}
    for kernel in impl.kernels:
        for cache in triton_support.base_kernel(kernel).device_caches.values():
            for compiled in cache[0].values():  # every specialisation this process compiled, every config
                compiled._init_handles()
                launched.setdefault((compiled.name, compiled.metadata.num_warps), set()).add(compiled.n_regs)
    both = [key for key in ahead if key in launched]
    assert {name for name, _ in both} == {name for name, _ in ahead}, (ahead, launched)
    assert [(key, ahead[key]) for key in both if ahead[key] not in launched[key]] == [], launched

"""ptxas's report of each CUDA kernel read into numbers, and the seed's hoconv2d kernels held to no spill."""

import os
import re
import shutil

import pytest

from benchctl.errors import BenchError
from benchctl.ops import build, resources, toolchain
from benchctl.ops.resources import KernelResources

# nvcc --resource-usage, as it printed hoconv2d's kernels (two entries for sm_80, two for sm_90)
PTXAS = """\
ptxas info    : 28 bytes gmem, 224 bytes cmem[4]
ptxas info    : Compiling entry function '_ZN8hoconv2d49_GLOBAL__N__2fd3e696_16_hoconv2d_cuda_cu_b6e549ba17backward_k_kernelIfLi7ELi4EEEvPKT_S4_S4_PS2_S5_NS_5ShapeE' for 'sm_80'
ptxas info    : Function properties for _ZN8hoconv2d49_GLOBAL__N__2fd3e696_16_hoconv2d_cuda_cu_b6e549ba17backward_k_kernelIfLi7ELi4EEEvPKT_S4_S4_PS2_S5_NS_5ShapeE
    16 bytes stack frame, 16 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 16 bytes cumulative stack size, 17024 bytes smem, 432 bytes cmem[0]
ptxas info    : Compile time = 78.881 ms
ptxas info    : Compiling entry function '_ZN8hoconv2d49_GLOBAL__N__2fd3e696_16_hoconv2d_cuda_cu_b6e549ba14grad_wt_kernelIdEEvPKT_S4_PS2_NS_5ShapeE' for 'sm_80'
ptxas info    : Function properties for _ZN8hoconv2d49_GLOBAL__N__2fd3e696_16_hoconv2d_cuda_cu_b6e549ba14grad_wt_kernelIdEEvPKT_S4_PS2_NS_5ShapeE
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 48 registers, used 0 barriers, 417 bytes cmem[0]
ptxas info    : Compiling entry function '_ZN8hoconv2d49_GLOBAL__N__2fd3e696_16_hoconv2d_cuda_cu_b6e549ba17backward_k_kernelIfLi7ELi4EEEvPKT_S4_S4_PS2_S5_NS_5ShapeE' for 'sm_90'
ptxas info    : Function properties for _ZN8hoconv2d49_GLOBAL__N__2fd3e696_16_hoconv2d_cuda_cu_b6e549ba17backward_k_kernelIfLi7ELi4EEEvPKT_S4_S4_PS2_S5_NS_5ShapeE
    16 bytes stack frame, 12 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 16 bytes cumulative stack size, 17024 bytes smem
ptxas info    : Compiling entry function '_ZN8hoconv2d49_GLOBAL__N__2fd3e696_16_hoconv2d_cuda_cu_b6e549ba16forward_k_kernelIfLi5EEEvPKT_S4_PS2_NS_5ShapeE' for 'sm_90'
ptxas info    : Function properties for _ZN8hoconv2d49_GLOBAL__N__2fd3e696_16_hoconv2d_cuda_cu_b6e549ba16forward_k_kernelIfLi5EEEvPKT_S4_PS2_NS_5ShapeE
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 56 registers, used 0 barriers
"""


def test_every_entry_function_is_read_with_its_arch_registers_spills_and_shared_memory() -> None:
    found = resources.parse(PTXAS)
    assert [(k.arch, k.registers, k.spill_stores, k.spill_loads, k.stack, k.shared, k.barriers) for k in found] == [
        ("sm_80", 64, 16, 16, 16, 17024, 1),
        ("sm_80", 48, 0, 0, 0, 0, 0),
        ("sm_90", 64, 12, 12, 16, 17024, 1),
        ("sm_90", 56, 0, 0, 0, 0, 0),
    ]
    assert [k.spills for k in found] == [True, False, True, False]
    assert found[0].kernel.startswith("_ZN8hoconv2d") and found[0].kernel == found[2].kernel


@pytest.mark.parametrize("registers, arch, share", [
    (64, "sm_90", 0.5),  # 2048 registers a warp: 32 of 64 warps
    (56, "sm_90", 36 / 64),  # 1792 a warp: 36 warps
    (57, "sm_90", 32 / 64),  # rounded up to 2048 a warp
    (32, "sm_90", 1.0),
    (32, "sm_86", 1.0),  # 48 warps at most there
    (64, "sm_86", 32 / 48),
    (255, "sm_80", 8 / 64),
])
def test_the_warps_registers_leave_room_for_follow_the_allocation_unit(registers, arch, share) -> None:
    kernel = KernelResources("k", arch, registers, 0, 0, 0, 0, 0)
    assert kernel.occupancy_limit() == pytest.approx(share)


@pytest.mark.parametrize("registers, warps, shared, arch, share", [
    (33, 1, 0, "sm_90", 32 / 64),  # registers leave room for 51 warps, but an SM holds 32 blocks of one warp
    (40, 4, 0, "sm_90", 48 / 64),  # 51 warps by registers: 12 whole blocks of 4
    (40, 4, 100 * 1024, "sm_90", 8 / 64),  # 228 KiB hold 2 blocks of 100 KiB (+1 KiB each)
    (32, 8, 0, "sm_86", 48 / 48),
    (32, 1, 0, "sm_86", 16 / 48),  # 16 blocks an SM there
    (112, 4, 2048, "sm_80", 16 / 64),  # 18 warps by registers: 4 blocks
    (33, 1, 0, "sm_120", 48 / 48),  # no block limits known there: registers alone
])
def test_a_known_block_size_counts_whole_blocks_limited_by_blocks_and_shared_memory(
        registers, warps, shared, arch, share) -> None:
    kernel = KernelResources("k", arch, registers, 0, 0, 0, shared, 0, warps_per_block=warps)
    assert kernel.occupancy_limit() == pytest.approx(share)


def test_an_architecture_without_known_limits_has_no_share() -> None:
    assert KernelResources("k", "sm_53", 32, 0, 0, 0, 0, 0).occupancy_limit() is None


@pytest.mark.parametrize("demangled, name", [
    ("void hoconv2d::(anonymous namespace)::backward_k_kernel<float, 7, 4>(float const*, float const*, "
     "float const*, float*, float*, hoconv2d::Shape)", "backward_k_kernel<float, 7, 4>"),
    ("void hoconv2d::(anonymous namespace)::per_pixel_kernel<double, hoconv2d::GradXAt>(double const*, "
     "double const*, double*, hoconv2d::Shape, hoconv2d::GradXAt)", "per_pixel_kernel<double, hoconv2d::GradXAt>"),
    ("void add_kernel(float*, int)", "add_kernel"),
])
def test_a_kernel_is_named_by_its_function_and_template_arguments(demangled, name) -> None:
    assert resources.short(demangled) == name


def test_mangled_names_are_made_readable_where_cxxfilt_is_installed() -> None:
    kernels = [k.kernel for k in resources.parse(PTXAS)]
    readable = resources.names(kernels)
    if shutil.which("c++filt") is None:
        assert readable == {k: k for k in kernels}
    else:
        assert sorted(set(readable.values())) == ["backward_k_kernel<float, 7, 4>", "forward_k_kernel<float, 5>",
                                                   "grad_wt_kernel<double>"]


def test_a_library_not_built_yet_is_an_error_that_says_to_build_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path))
    lib = build.library("lstm_cell", "cuda")
    with pytest.raises(BenchError, match="not built: run `benchctl build --cuda` first"):
        resources.of_library(lib)


def test_the_seed_sized_hoconv2d_kernels_do_not_spill() -> None:
    """k=5, C=3 in float32 is the seed's shape: a spill there is a trip to local memory in its inner loop.
    Compiles hoconv2d's kernels (the build's own command line) for every architecture it is built for."""
    reason = toolchain.cuda_toolchain_reason() or (None if shutil.which("c++filt") else "no c++filt to name kernels")
    if reason:
        pytest.skip(reason)
    build.build("hoconv2d", "cpu")
    build.build("hoconv2d", "cuda")
    kernels = resources.of_library(build.library("hoconv2d", "cuda"))
    readable = resources.names([k.kernel for k in kernels])
    listed = os.environ.get(toolchain.ARCH_ENV, toolchain.DEFAULT_ARCH_LIST)
    arches = {f"sm_{a.replace('.', '')}" for a in re.findall(r"\d+\.\d+", listed)}
    assert {k.arch for k in kernels} == arches
    seed_names = ("backward_k_kernel<float, 5, 3>", "forward_k_kernel<float, 5>")
    seed = [k for k in kernels if readable[k.kernel] in seed_names]
    assert len(seed) == 2 * len(arches)
    assert all(not k.spills and k.registers <= 64 for k in seed), seed

"""Triton implementations: the interpreter rule, where they are checked and timed, best_config from
autotuning (a fake GPU timer picks the config), one variant per config. Uses examples/ops/silu_triton.py,
run by Triton's interpreter on this CPU."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from benchctl import triton_env
from benchctl.measure.execute import Settings, prepare, run_cell
from benchctl.measure.timing import Policy
from benchctl.ops import registry, triton_support
from benchctl.ops.cells import Cell

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ops"
FAST = Settings(policy=Policy(warmup=1, warmup_time=0.0, min_samples=3, min_time=0.0, max_time=1.0),
                check=False, probe_bandwidth=False)
SMALL = {"batch_size": 2, "dim": 8}
pytestmark = pytest.mark.skipif(triton_support.missing() is not None, reason="triton is not installed")


@pytest.fixture(scope="module")
def silu_triton():
    return registry.discover([EXAMPLES], only=["silu_triton"])["silu_triton"]


@pytest.fixture
def fwd(silu_triton):
    """The example's autotuned forward kernel, its autotune cache emptied before and after."""
    kernel = silu_triton.implementations["triton"].kernels[0]
    kernel.cache.clear()
    yield kernel
    kernel.cache.clear()


def test_the_interpreter_is_switched_on_only_where_no_gpu_is_visible(monkeypatch):
    monkeypatch.delitem(sys.modules, "triton")
    for visible, expected in ((False, "1"), (True, None)):
        monkeypatch.delenv(triton_env.INTERPRET_ENV, raising=False)
        monkeypatch.setattr(triton_env, "gpu_visible", lambda: visible)
        assert triton_env.interpret_without_gpu() is (expected == "1")
        assert os.environ.get(triton_env.INTERPRET_ENV) == expected
    monkeypatch.setenv(triton_env.INTERPRET_ENV, "0")  # the user's choice is kept
    monkeypatch.setattr(triton_env, "gpu_visible", lambda: False)
    assert triton_env.interpret_without_gpu() is False


def test_a_gpu_is_visible_when_a_driver_is_there_and_cuda_visible_devices_leaves_one(monkeypatch, tmp_path):
    driver = tmp_path / "version"
    monkeypatch.setattr(triton_env, "GPU_DRIVER_FILES", (str(driver),))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert triton_env.gpu_visible() is False
    driver.write_text("NVRM version: 1")
    assert triton_env.gpu_visible() is True
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert triton_env.gpu_visible() is False


def test_here_kernels_are_interpreted_checked_on_the_cpu_and_never_timed_there(silu_triton):
    impl = silu_triton.implementations["triton"]
    assert triton_support.interpreted(impl.kernels) and triton_support.library_interpreted()
    assert impl.unavailable_reason("cpu") == triton_support.NOT_TIMED_ON_CPU
    assert impl.unavailable_reason("cpu", timed=False) is None
    assert silu_triton.implementations["py"].unavailable_reason("cpu") is None


def test_run_records_triton_cells_on_the_cpu_unavailable_with_the_reason(silu_triton):
    rows = run_cell(Cell.make("silu_triton", "op", "triton", "cpu", "float32", SMALL), FAST)
    assert [(r["status"], r["message"]) for r in rows] == [("unavailable", triton_support.NOT_TIMED_ON_CPU)] * 3


def test_a_kernel_compiled_for_the_gpu_is_not_checked_on_the_cpu():
    class JITFunction:  # what @triton.jit gives without the interpreter
        pass

    assert triton_support.reason((JITFunction(),), "cpu", timed=False) == triton_support.NOT_INTERPRETED
    assert triton_support.reason((JITFunction(),), "cuda", timed=True) is None
    assert triton_support.reason((), "cpu", timed=True) is None  # not a Triton implementation


def test_each_config_is_a_variant_named_by_what_sets_it_apart(silu_triton):
    names = [n for n in silu_triton.implementations if n.startswith("triton")]
    assert names == ["triton", "triton-BLOCK256-w2", "triton-BLOCK1024-w4"]
    assert silu_triton.implementations["triton-BLOCK256-w2"].kernels == silu_triton.implementations["triton"].kernels


def test_a_pinned_variant_runs_its_own_config_and_the_autotuned_one_all_of_them(silu_triton, fwd):
    import torch

    x = torch.randn(3, 5)
    impls = silu_triton.implementations
    impls["triton-BLOCK1024-w4"].fn(x)
    assert triton_support.best_config(impls["triton"].kernels) == "BLOCK=1024, num_warps=4, num_stages=3"
    assert len(fwd.configs) == 1
    impls["triton"].fn(x)
    assert len(fwd.configs) == 2
    # In the interpreter no config is timed: every one runs once, all rank equal, so the first wins.
    assert triton_support.best_config(impls["triton"].kernels) == "BLOCK=256, num_warps=2, num_stages=3"


@pytest.mark.parametrize("times, best", [((2.0, 1.0), "BLOCK=1024, num_warps=4, num_stages=3"),
                                         ((1.0, 2.0), "BLOCK=256, num_warps=2, num_stages=3")])
def test_the_autotuned_config_is_chosen_before_the_clock_and_recorded_in_every_row(silu_triton, fwd, monkeypatch,
                                                                                   times, best):
    """A fake GPU timer gives each config its time; the interpreter stands in for the GPU."""
    benched = []

    def fake_gpu_timer(kernel_call, quantiles):
        kernel_call()
        benched.append(times[len(benched)])
        return [benched[-1]] * len(quantiles)

    monkeypatch.setattr(fwd, "do_bench", fake_gpu_timer)
    monkeypatch.setattr(triton_support, "reason", lambda kernels, device, timed: None)
    cell = Cell.make("silu_triton", "op", "triton", "cpu", "float32", SMALL)
    prepared = prepare(cell.resolve())
    assert benched == list(times) and prepared.best_config == best  # both configs timed in the first call
    rows = run_cell(cell, FAST)
    assert len(benched) == 2  # cached: the timed calls never autotune again
    assert [r["status"] for r in rows] == ["ok"] * 3
    assert {r["best_config"] for r in rows} == {best} and all(r["compile_s"] > 0 for r in rows)


def test_several_autotuned_kernels_are_named_in_best_config():
    class Config:
        def __init__(self, block, warps):
            self.kwargs, self.num_warps, self.num_stages, self.num_ctas = {"BLOCK": block}, warps, 3, 1

    class Base:
        def __init__(self, name):
            self.__name__ = name

    class Autotuner:
        def __init__(self, name, config):
            self.fn, self.configs, self.cache, self.best_config = Base(name), [config], {}, config

    kernels = (Autotuner("fwd", Config(64, 4)), Autotuner("bwd", Config(128, 8)))
    assert triton_support.best_config(kernels) == ("fwd: BLOCK=64, num_warps=4, num_stages=3; "
                                                   "bwd: BLOCK=128, num_warps=8, num_stages=3")
    assert triton_support.best_config(()) is None

"""torch.profiler's events of the timed loop (benchctl.profile.torch_events): the top operators and the
operator stacks of the flame graph, from stand-in events (a GPU's kernels included, which no GPU here makes)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchctl.profile import torch_events
from benchctl.profile.torch_events import CPU_TIME, KERNEL_TIME, TORCH_RANGE

CPU, CUDA = SimpleNamespace(name="CPU"), SimpleNamespace(name="CUDA")


def event(name: str, start: float, end: float, cpu: float, device: float = 0.0, mem: int = 0, parent=None,
          kernels=(), device_type=CPU) -> SimpleNamespace:
    return SimpleNamespace(name=name, time_range=SimpleNamespace(start=start, end=end), self_cpu_time_total=cpu,
                           self_device_time_total=device, self_cpu_memory_usage=mem, self_device_memory_usage=0,
                           cpu_parent=parent, kernels=[SimpleNamespace(name=k, duration=d) for k, d in kernels],
                           device_type=device_type, is_async=False)


def test_top_ops_keeps_only_the_timed_ranges() -> None:
    events = [event(TORCH_RANGE, 0, 100, 1), event(TORCH_RANGE, 200, 300, 1),
              event("aten::fill_", 10, 40, 30, mem=64), event("aten::fill_", 210, 230, 20),
              event("aten::mul", 50, 90, 25), event("aten::mul", 120, 150, 500)]  # outside: setup's forward
    rows = torch_events.top_ops(events)
    assert [r["name"] for r in rows] == ["aten::fill_", "aten::mul"]
    assert rows[0]["calls"] == 2 and rows[0]["self_cpu_us"] == 50 and rows[0]["self_cpu_mem_bytes"] == 64
    assert rows[0]["pct"] == pytest.approx(100 * 50 / 75)


def gpu_loop() -> list[SimpleNamespace]:
    """One timed range on a GPU: aten::add launched a 30 us kernel, aten::mul (under a custom op) a 10 us one;
    each kernel is also a device event of its own, as torch.profiler lists it."""
    timed = event(TORCH_RANGE, 0, 100, 5)
    custom = event("myop::fused", 1, 60, 4, device=0.0, parent=timed)
    mul = event("aten::mul", 2, 20, 8, device=10.0, parent=custom, kernels=[("mul_kernel", 10.0)])
    add = event("aten::add", 30, 50, 6, device=30.0, parent=timed, kernels=[("add_kernel", 30.0)])
    return [timed, custom, mul, add, event("mul_kernel", 21, 31, 0, device=10.0, device_type=CUDA),
            event("add_kernel", 51, 81, 0, device=30.0, device_type=CUDA)]


def test_top_ops_on_a_gpu_share_the_kernels_time_once() -> None:
    rows = {r["name"]: r for r in torch_events.top_ops(gpu_loop())}
    # 40 us of kernels: each kernel's row and its operator's row hold its share, not half of it
    assert rows["add_kernel"]["pct"] == pytest.approx(75.0) and rows["aten::add"]["pct"] == pytest.approx(75.0)
    assert rows["mul_kernel"]["pct"] == pytest.approx(25.0) and rows["myop::fused"]["pct"] == 0.0
    assert rows["add_kernel"]["device"] and not rows["aten::add"]["device"]  # the CLI's two tables
    assert [r["name"] for r in torch_events.top_ops(gpu_loop())][:2] in (["add_kernel", "aten::add"],
                                                                          ["aten::add", "add_kernel"])


def test_op_stacks_on_a_gpu_hang_each_kernel_from_the_operators_that_launched_it() -> None:
    stacks, of = torch_events.op_stacks(gpu_loop())
    assert of == KERNEL_TIME
    assert sorted(stacks) == [([TORCH_RANGE, "aten::add", "add_kernel"], 30),
                              ([TORCH_RANGE, "myop::fused", "aten::mul", "mul_kernel"], 10)]


def test_op_stacks_on_a_cpu_are_self_times_under_their_callers() -> None:
    timed = event(TORCH_RANGE, 0, 100, 7.4)
    node = event("autograd::engine::evaluate_function: SliceBackward0", 1, 90, 3.0, parent=timed)
    backward = event("aten::slice_backward", 2, 80, 2.2, parent=node)
    events = [timed, node, backward, event("aten::zeros", 3, 40, 35.6, parent=backward),
              event("aten::zeros", 41, 60, 10.0, parent=backward),  # a second call: the same stack, added
              event("aten::copy_", 61, 79, 0.3, parent=backward),  # under a microsecond: left out
              event("aten::mul", 120, 150, 500)]  # outside the range (the untimed setup)
    stacks, of = torch_events.op_stacks(events)
    assert of == CPU_TIME
    path = [TORCH_RANGE, node.name, "aten::slice_backward"]
    assert sorted(stacks) == sorted([([TORCH_RANGE], 7), ([TORCH_RANGE, node.name], 3), (path, 2),
                                     (path + ["aten::zeros"], 46)])

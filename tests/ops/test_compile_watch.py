"""CompileWatch against Dynamo's real records (the eager backend: Dynamo traces, nothing is generated, so
these stay fast): recompilations per cell and in all, graph breaks and their reason, dynamic shapes."""

import torch
import torch._dynamo

from benchctl.ops.compile_watch import CompileWatch


def sin_cos(x):
    return x.sin().cos()


def with_a_break(x):
    y = x.sin()
    torch._dynamo.graph_break()
    return y.cos()


def watched(watch: CompileWatch, fn, *sizes: int) -> dict:
    """One cell: the watch around calls at the given batch sizes."""
    finish = watch()
    for size in sizes:
        fn(torch.randn(size, 3))
    return finish()


def test_a_new_size_with_static_shapes_is_one_recompile_and_adds_to_the_total():
    fn, watch = torch.compile(sin_cos, backend="eager", dynamic=False), CompileWatch()
    first = watched(watch, fn, 2)
    second = watched(watch, fn, 3)
    again = watched(watch, fn, 3, 2)  # both sizes compiled already
    assert (first["recompiles"], second["recompiles"], again["recompiles"]) == (0, 1, 0)
    assert second["recompiles_total"] == first["recompiles_total"] + 1 == again["recompiles_total"]
    assert second["graph_breaks"] == 0 and second["graph_break_reason"] is None
    assert second["dynamic_shapes"] is False


def test_the_total_counts_every_compiled_function_of_the_process():
    a, b = (torch.compile(f, backend="eager", dynamic=False) for f in (sin_cos, lambda x: x.exp()))
    wa, wb = CompileWatch(), CompileWatch()
    start = watched(wa, a, 5)["recompiles_total"]
    watched(wb, b, 5)
    assert watched(wb, b, 6)["recompiles_total"] == start + 1
    assert watched(wa, a, 6)["recompiles_total"] == start + 2


def test_a_graph_break_is_counted_with_its_reason_and_kept_by_cells_that_compile_nothing():
    fn, watch = torch.compile(with_a_break, backend="eager", dynamic=False), CompileWatch()
    first = watched(watch, fn, 2)
    assert first["graph_breaks"] == 1
    assert first["graph_break_reason"].startswith("Call to `torch._dynamo.graph_break()`")
    assert "\n" not in first["graph_break_reason"]
    cached = watched(watch, fn, 2)
    assert cached["recompiles"] == 0 and cached["graph_breaks"] == 1  # the same code ran, breaks and all
    assert cached["graph_break_reason"] == first["graph_break_reason"]


def test_dynamic_shapes_are_seen_in_the_graph_dynamo_made():
    fn, watch = torch.compile(sin_cos, backend="eager", dynamic=True), CompileWatch()
    assert watched(watch, fn, 4)["dynamic_shapes"] is True
    auto, watch = torch.compile(lambda x: x.tanh(), backend="eager"), CompileWatch()
    assert watched(watch, auto, 4)["dynamic_shapes"] is False  # torch's default: static at first ...
    changed = watched(watch, auto, 5)
    assert changed["recompiles"] == 1 and changed["dynamic_shapes"] is True  # ... dynamic once a size changes

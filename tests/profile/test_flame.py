"""The flame graph drawn from a profile's collapsed stacks (benchctl.profile.flame): which boxes, how wide,
where, in what colour, and the SVG's hover text and labels."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchctl.profile import flame, torch_events
from benchctl.profile.stacks import GENERATED, SETUP_FRAME, TIMED_FRAME, parse_collapsed

LOOP = "run_loop (benchctl/profile/child.py:56)"
THUNK = f"{TIMED_FRAME} (benchctl/profile/child.py:46)"
STEP = "step (model.py:{})"
MUL = "at::_ops::mul_Tensor::call (libtorch_cpu.so)"
KERNEL = "mul_kernel<float> (libtorch_cpu.so)"
STACKS = [
    ([LOOP, THUNK, STEP.format(3), MUL, KERNEL], 6),
    ([LOOP, THUNK, STEP.format(4), MUL], 2),  # the same function, another line: one box
    ([LOOP, THUNK, STEP.format(5), "jit_conv (generated code)"], 3),
    ([LOOP, THUNK, "relu (model.py:9)"], 4),
    ([LOOP, THUNK, "click_main (click/core.py:1)"], 1),  # benchctl's and click's frames fold away
    ([LOOP, THUNK], 1),
    ([LOOP, f"{SETUP_FRAME} (benchctl/profile/child.py:40)", "setup (model.py:1)"], 9),  # not timed
    (["<module> (torch/__init__.py:1)"], 5),  # start-up
]


def by_name(boxes: list[flame.Box]) -> dict[str, flame.Box]:
    return {b.name: b for b in boxes}


def test_boxes_are_the_timed_samples_merged_per_function_widest_first() -> None:
    boxes = flame.boxes(STACKS)
    assert boxes[0] == flame.Box(flame.ROOT, flame.ROOT, 0, 0, 17)  # 6+2+3+4+1+1: only the timed samples
    named = by_name(boxes)
    assert len(boxes) == len(named) == 6  # root, step, relu, mul, its kernel, the generated code
    step, relu = named["step (model.py)"], named["relu (model.py)"]
    assert (step.depth, step.start, step.samples, step.kind) == (1, 0, 11, flame.PYTHON)
    assert (relu.depth, relu.start, relu.samples) == (1, 11, 4)  # right of the wider step
    mul = named[MUL]
    assert (mul.depth, mul.start, mul.samples, mul.kind) == (2, 0, 8, flame.ATEN)
    generated = named[f"jit_conv ({GENERATED})"]
    assert (generated.depth, generated.start, generated.samples, generated.kind) == (2, 8, 3, GENERATED)
    kernel = named[KERNEL]
    assert (kernel.depth, kernel.start, kernel.samples, kernel.kind) == (3, 0, 6, flame.NATIVE)


def test_boxes_under_the_least_share_are_left_out_with_their_callees() -> None:
    stacks = [([THUNK, "big (a.py:1)"], 2000), ([THUNK, "tiny (a.py:2)", "below (a.py:3)"], 1)]
    names = [b.name for b in flame.boxes(stacks)]
    assert names == [flame.ROOT, "big (a.py)"]  # 1 of 2001 is under MIN_SHARE (0.1%)


def test_a_profile_without_timed_samples_has_no_boxes_and_no_picture() -> None:
    setup_only = [([f"{SETUP_FRAME} (benchctl/profile/child.py:40)", "setup (model.py:1)"], 9)]
    assert flame.boxes(setup_only) == []
    with pytest.raises(ValueError, match="no sample of the timed loop"):
        flame.svg(setup_only, "x")


def test_the_svg_shows_each_boxs_share_with_its_interval_on_hover(tmp_path: Path) -> None:
    path = tmp_path / "flamegraph.svg"
    flame.write(STACKS, "model/op py cpu backward", path)
    text = path.read_text()
    titles = re.findall(r"<title>([^<]*)</title>", text)
    assert titles[0] == "timed loop: 17 of 17 samples, 100.0% [82, 100]"
    # 6 of 17 is 35.3%, its 95% Wilson interval 17.3-58.7%; the name's < > escaped.
    assert f"{KERNEL.replace('<', '&lt;').replace('>', '&gt;')}: 6 of 17 samples, 35.3% [17, 59]" in titles
    assert len(titles) == 6
    assert "model/op py cpu backward" in text and ">step<" in text  # title and labels are text, not paths
    assert ">ATen operator<" in text and ">generated code<" in text  # the legend names the kinds drawn


def test_the_legend_names_only_the_kinds_of_frame_drawn() -> None:
    text = flame.svg([([THUNK, "step (model.py:3)", "relu (model.py:9)"], 5)], "python only")
    assert ">Python<" in text and ">timed loop<" in text
    assert ">ATen operator<" not in text and ">C/C++<" not in text and ">generated code<" not in text


def test_labels_are_cut_to_their_box() -> None:
    wide = flame.Box("some_function (a.py)", flame.PYTHON, 1, 0, 10)
    assert flame._label(wide, 5.0) == "some_function"  # the location is left to the hover text
    assert flame._label(wide, 0.5) == "some_f…"  # 0.5 in holds 8 characters at 7 pt, one is kept free
    assert flame._label(wide, 0.1) == ""


def test_the_fixtures_stacks_draw() -> None:
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "profile_stacks.txt"
    stacks = parse_collapsed(fixture.read_text())
    text = flame.svg(stacks, "fixture")
    assert "<title>timed loop: 65 of 65 samples" in text
    assert re.search(r"<title>c10::function_ref&lt;[^<]*fill_kernel[^<]*: 30 of 65 samples, 46.2% \[35, 58\]", text)


def test_names_with_dollar_signs_are_drawn_as_they_are() -> None:
    stacks = [([THUNK, "triton_$fused$_kernel (libkernels.so)"], 5)]
    assert ">triton_$fused$_kernel<" in flame.svg(stacks, "a $b$ title")  # not read as mathtext


OP_STACKS = [(["benchctl.timed"], 7), (["benchctl.timed", "autograd::engine::evaluate_function: SliceBackward0"], 3),
             (["benchctl.timed", "autograd::engine::evaluate_function: SliceBackward0", "aten::slice_backward"], 2),
             (["benchctl.timed", "autograd::engine::evaluate_function: SliceBackward0", "aten::slice_backward",
               "aten::zeros"], 46), (["benchctl.timed", "myop::fused"], 42)]


def test_a_torch_profiles_boxes_are_operators_as_wide_as_their_time() -> None:
    boxes = flame.op_boxes(OP_STACKS, torch_events.CPU_TIME)
    assert boxes[0] == flame.Box(flame.ROOT, flame.ROOT, 0, 0, 100)  # the range's own 7 us included
    named = by_name(boxes)
    node = named["autograd::engine::evaluate_function: SliceBackward0"]
    assert (node.kind, node.depth, node.samples) == (flame.AUTOGRAD, 1, 51)
    assert named["myop::fused"] == flame.Box("myop::fused", flame.OTHER, 1, 51, 42) and node.start == 0  # widest first
    zeros = named["aten::zeros"]
    assert (zeros.kind, zeros.depth, zeros.start, zeros.samples) == (flame.ATEN, 3, 0, 46)


def test_a_gpu_torch_profiles_leaves_are_kernels_and_its_hover_gives_milliseconds() -> None:
    stacks = [(["benchctl.timed", "aten::add", "void add_kernel<float>(float*)"], 3000),
              (["benchctl.timed", "aten::mul", "mul_kernel"], 1000)]
    boxes = by_name(flame.op_boxes(stacks, torch_events.KERNEL_TIME))
    assert boxes["void add_kernel<float>(float*)"].kind == torch_events.KERNEL_TIME
    assert boxes["aten::add"].kind == flame.ATEN
    text = flame.op_svg(stacks, "op cuda forward", torch_events.KERNEL_TIME)
    titles = re.findall(r"<title>([^<]*)</title>", text)
    assert titles[0] == "timed loop: 4 of 4 ms, 100.0%"
    assert "void add_kernel&lt;float&gt;(float*): 3 of 4 ms, 75.0%" in titles
    assert "4 ms of GPU kernel time in the timed loop" in text and ">GPU kernel<" in text
    assert ">Python<" not in text  # the legend names only the kinds drawn
    with pytest.raises(ValueError, match="no operator time"):
        flame.op_svg([], "x", torch_events.CPU_TIME)

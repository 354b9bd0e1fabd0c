"""Collapsed stacks -> top-frames tables (benchctl.profile.stacks), the child's loop and torch-profiler table,
and the profile manifest (benchctl.profile.profilers), on a hand-made fixture whose counts are known."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from benchctl.measure.interference import RunQueue
from benchctl.profile import child as profile_child
from benchctl.profile import profilers as profiling
from benchctl.ops.cells import Cell
from benchctl.profile.stacks import (HARNESS, NO_OP, SETUP_FRAME, TIMED_FRAME, TopFrames, classify, parse_collapsed,
                             parse_frame, share_interval, short_name, speedscope, top_frames)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "profile_stacks.txt"
FILL = ("c10::function_ref<void (char**, long const*, long, long)>::callback_fn<at::native::AVX2::VectorizedLoop2d<"
        "at::native::(anonymous namespace)::fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::"
        "operator()() const::{lambda()#7}, at::vec::AVX2::Vectorized<float> > >")


@pytest.fixture(scope="module")
def top() -> TopFrames:
    return top_frames(parse_collapsed(FIXTURE.read_text()))


def by_function(rows) -> dict[str, object]:
    return {r.function: r for r in rows}


def test_parse_frame_python_native_and_unresolved() -> None:
    py = parse_frame("filter_py (hoconv2d/py.py:20)")
    assert (py.function, py.location, py.native, py.line) == ("filter_py", "hoconv2d/py.py", False, 20)
    assert parse_frame("_run_code (<frozen runpy>:88)").location == "<frozen runpy>"
    # C++ names carry parentheses of their own: the location is the last one.
    cpp = parse_frame(f"{FILL} (libtorch_cpu.so)")
    assert (cpp.function, cpp.location, cpp.native) == (FILL, "libtorch_cpu.so", True)
    assert parse_frame("0x7f0200aa12 (libgomp.so.1)") == parse_frame("0x7f0200bb34 (libgomp.so.1)")
    assert parse_frame("0x7f0200aa12 (libgomp.so.1)").function == "[unknown]"
    # Lines differ, the function is the same frame.
    assert parse_frame("f (a.py:1)") == parse_frame("f (a.py:9)")


def test_parse_collapsed_counts_and_rejects_garbage() -> None:
    stacks = parse_collapsed(FIXTURE.read_text())
    assert len(stacks) == 8
    assert sum(n for _, n in stacks) == 115
    with pytest.raises(ValueError, match="line 2"):
        parse_collapsed("a;b 3\nnot a stack\n")


def test_samples_are_sorted_by_marker(top: TopFrames) -> None:
    assert top.samples == {"total": 115, "timed": 65, "setup": 10, "startup": 40}
    region, frames = classify(["x (benchctl/profile_child.py:1)", f"{TIMED_FRAME} (benchctl/profile_child.py:2)",
                               "leaf (libfoo.so)"])
    assert region == "timed" and [f.function for f in frames] == ["leaf"]
    assert classify([f"{SETUP_FRAME} (benchctl/profile_child.py:2)"])[0] == "setup"


def test_self_time_names_native_leaves(top: TopFrames) -> None:
    rows = by_function(top.by_self)
    assert top.by_self[0].function == FILL and top.by_self[0].samples == 30
    assert top.by_self[0].pct == pytest.approx(100 * 30 / 65)
    # Unresolved addresses in one library are merged: 10 (copy) + 15 (mul) samples.
    assert rows["[unknown]"].samples == 25 and rows["[unknown]"].location == "libgomp.so.1"
    assert rows["at::native::add_kernel"].samples == 2
    assert sum(r.samples for r in top.by_self) == 65


def test_harness_frames_are_folded(top: TopFrames) -> None:
    every = [*top.by_self, *top.by_total, *top.path]
    assert not any("benchctl/" in r.location or "runpy" in r.location for r in every)
    # Samples whose own frame is the loop's count as the harness, not as torch's.
    assert by_function(top.by_self)[HARNESS].samples == 3


def test_total_time_once_per_sample_and_path_split_off(top: TopFrames) -> None:
    rows = by_function(top.by_total)
    assert rows["at::_ops::slice_backward::call"].samples == 40
    assert rows["at::_ops::slice_backward::call"].pct == pytest.approx(100 * 40 / 65)
    assert rows["at::_ops::add__Tensor::call"].samples == 2  # on the stack twice, counted once
    assert [p.function for p in top.path] == ["backward", "THPEngine_run_backward", "torch::autograd::Engine::execute"]
    assert not {p.function for p in top.path} & set(rows)


def test_aten_operator_table(top: TopFrames) -> None:
    ops = {r.op: r for r in top.by_op}
    assert (ops["zero_"].self_samples, ops["zero_"].total_samples) == (30, 30)
    assert (ops["slice_backward"].self_samples, ops["slice_backward"].total_samples) == (0, 40)
    assert ops["mul_Tensor"].self_samples == 15 and ops["copy_"].self_samples == 10
    assert ops[NO_OP].self_samples == 8  # engine overhead (5) and the harness (3)
    assert [r.op for r in top.by_op[:2]] == ["slice_backward", "zero_"]  # by total, then self


def test_round_trip_through_json(top: TopFrames) -> None:
    assert TopFrames.from_dict(json.loads(json.dumps(top.to_dict()))) == top


def test_short_name_keeps_the_kernel() -> None:
    assert short_name(FILL) == "c10::function_ref<…>::callback_fn<…fill_kernel…>"
    assert short_name("std::vector<int, std::allocator<int> >::push_back") == "std::vector<…>::push_back"
    assert short_name("a::operator<<") == "a::operator<<"
    assert short_name("x" * 200, 20) == "x" * 19 + "…"


def test_speedscope_file() -> None:
    stacks = parse_collapsed(FIXTURE.read_text())
    doc = speedscope(stacks, "hoconv2d backward")
    profile = doc["profiles"][0]
    assert profile["type"] == "sampled" and sum(profile["weights"]) == profile["endValue"] == 115
    assert len(profile["samples"]) == len(stacks)
    names = [doc["shared"]["frames"][i]["name"] for i in profile["samples"][2]]
    assert names == [parse_frame(f).function for f in stacks[2][0]]
    assert {"name": "filter_py", "file": "hoconv2d/py.py", "line": 20} in doc["shared"]["frames"]


def test_child_markers_match_the_parser() -> None:
    assert profile_child.benchctl_timed_thunk.__name__ == TIMED_FRAME
    assert profile_child.benchctl_untimed_setup.__name__ == SETUP_FRAME


def test_run_loop_repeats_setup_then_thunk() -> None:
    calls: list[str] = []

    def setup():
        calls.append("setup")
        return lambda: calls.append("thunk")

    reps = profile_child.run_loop(setup, 0.0, lambda: None).reps
    assert (reps, calls) == (1, ["setup", "thunk"])  # at least once, even with no time
    reps = profile_child.run_loop(setup, 10.0, lambda: None, max_reps=4).reps
    assert reps == 4 and calls[2:] == ["setup", "thunk"] * 4


def test_run_loop_on_a_gpu_times_the_thunk_s_kernels_not_those_its_setup_queued() -> None:
    """A backward's setup queues its forward's kernels (30 ms here) and returns before they ran; as the CUDA-event
    clock does, the loop waits for them before its clock starts, so the timed wall (and, in a profile, the timed
    range and the samples of the wait in the timed frame) is the thunk's own 2 ms."""
    from gpu_fakes import FakeStream

    gpu = FakeStream()

    def setup():
        gpu.launch("forward", 0.03)
        return lambda: gpu.launch("backward", 0.002)

    opened = []
    ranged = lambda: contextlib.nullcontext(opened.append(len(gpu.log)))  # noqa: E731
    loop = profile_child.run_loop(setup, 10.0, gpu.synchronize, max_reps=3, timed_range=ranged)
    assert gpu.log == ["forward", "sync", "backward", "sync"] * 3
    assert opened == [2, 6, 10]  # each timed range opens once the setup's work is done
    assert 3 * 0.002 <= loop.timed_s < 3 * 0.02


def test_run_loop_flushes_in_the_untimed_setup_after_it_and_before_the_sync() -> None:
    """With --flush-caches, each repetition's flush runs inside the setup's frame (its py-spy samples are not the
    timed thunk's), after the setup and before the wait for the device, so its GPU work is not in the timed range
    either; its time is not in the timed wall."""
    log: list[str] = []

    def setup():
        log.append("setup")
        return lambda: log.append("thunk")

    def flush():
        log.append("flush")
        time.sleep(0.02)
        assert sys._getframe(1).f_code.co_name == SETUP_FRAME

    loop = profile_child.run_loop(setup, 10.0, lambda: log.append("sync"), max_reps=3, before=flush)
    assert log == ["setup", "flush", "sync", "thunk", "sync"] * 3
    assert loop.timed_s < 0.02  # three flushes of 20 ms each ran, none inside the clock


def test_a_profile_on_cold_caches_asks_its_child_for_them_and_keeps_it_in_its_manifest(tmp_path: Path) -> None:
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": 2})
    warm, cold = profiling.ProfileRequest(cell, "forward", 1.0), profiling.ProfileRequest(cell, "forward", 1.0,
                                                                                          flush_caches=True)
    assert "--flush-caches" not in profiling.child_command(warm, Path("/tmp/s.json"))
    assert "--flush-caches" in profiling.child_command(cold, Path("/tmp/s.json"))
    assert profile_child.parse_args(profiling.child_command(cold, Path("/tmp/s.json"))[4:]).flush_caches
    assert profiling.profiled(cold) == profiling.profiled(warm) + " (caches flushed)"
    result = profiling.ProfileResult(tmp_path, "py-spy", 1, 0.1)
    assert json.loads(profiling.write_manifest(cold, result).read_text())["flush_caches"] is True
    assert json.loads(profiling.write_manifest(warm, result).read_text())["flush_caches"] is False


def test_run_loop_counts_its_threads_cpu_time_apart_from_the_wall_time() -> None:
    asleep = profile_child.run_loop(lambda: lambda: time.sleep(0.05), 10.0, lambda: None, max_reps=2)
    assert asleep.timed_s >= 0.1 and asleep.cpu_s < 0.2 * asleep.timed_s  # asleep: off the CPU
    busy = profile_child.run_loop(lambda: _spin, 10.0, lambda: None, max_reps=2)
    assert busy.cpu_s >= 0.04 and busy.timed_s >= 0.99 * busy.cpu_s  # the two clocks differ by microseconds


@pytest.mark.skipif(not RunQueue(), reason="no per-thread schedstat here (not Linux)")
def test_run_loop_counts_the_time_its_thread_waited_for_a_core() -> None:
    """Every core taken by a neighbour: the loop's thread must wait for one, and says how long (judged by
    what the OS reported, not by how long anything took)."""
    busy = "import time\nend = time.monotonic() + 20\nwhile time.monotonic() < end: pass"
    neighbours = [subprocess.Popen([sys.executable, "-c", busy]) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.3)  # the neighbours are running
        loop = profile_child.run_loop(lambda: _spin, 10.0, lambda: None, max_reps=10)
    finally:
        for n in neighbours:
            n.kill()
            n.wait()
    assert loop.waited_s > 0 and loop.cpu_s >= 0.2
    # on a core or waiting for one: within the wall, to a scheduler slice (the CPU clock and the run-queue delay are
    # read outside the wall clock's reads, so a wait for a core between the two lands in them and not in the wall:
    # once 2.8 ms over 1% of a 245 ms loop beside two spinning neighbours)
    assert loop.cpu_s + loop.waited_s <= 1.01 * loop.timed_s + SLICE_S


SLICE_S = 0.01  # a scheduler slice, at most, beside a neighbour on every core


def _spin() -> None:  # 20 ms on this thread's CPU clock, however long the wall clock takes
    until = time.thread_time() + 0.02
    while time.thread_time() < until:
        pass


def test_run_loop_keeps_the_garbage_collector_off_as_run_does() -> None:
    seen: list[bool] = []
    assert gc.isenabled()
    profile_child.run_loop(lambda: lambda: seen.append(gc.isenabled()), 10.0, lambda: None, max_reps=3)
    assert seen == [False] * 3 and gc.isenabled()  # off in the loop, on again after


def test_manifest_round_trips(tmp_path: Path, top: TopFrames) -> None:
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": 2}, ("backward",))
    req = profiling.ProfileRequest(cell, "backward", 1.0)
    result = profiling.ProfileResult(tmp_path / "p1", "py-spy", 7, 0.5, {"stacks": "stacks.txt"}, top)
    result.out_dir.mkdir()
    path = profiling.write_manifest(req, result)
    loaded = json.loads(path.read_text())
    assert path == tmp_path / "p1" / profiling.MANIFEST
    assert loaded["pass"] == "backward" and loaded["reps"] == 7
    assert TopFrames.from_dict(loaded) == top
    assert Cell.from_json(json.dumps(loaded["cell"])) == cell
    assert loaded["unprofiled_s_per_rep"] is None and loaded["slowdown"] is None  # not measured: not invented


def test_slowdown_is_a_profiled_repetition_over_one_alone(tmp_path: Path) -> None:
    result = profiling.ProfileResult(tmp_path, "py-spy", 4, 2.0, unprofiled_s=0.1)
    assert result.slowdown == pytest.approx(5.0)  # 0.5 s a repetition under the profiler, 0.1 s alone
    assert profiling.ProfileResult(tmp_path, "py-spy", 0, 0.0, unprofiled_s=0.1).slowdown is None
    costs = profiling._costs({"unprofiled_reps": 4, "unprofiled_s": 0.6, "unprofiled_cpu_s": 0.4, "cpu_s": 1.0,
                              "unprofiled_waited_s": 0.02, "waited_s": 0.3})
    assert costs == pytest.approx({"unprofiled_s": 0.15, "unprofiled_cpu_s": 0.1, "cpu_s": 1.0,
                                   "unprofiled_waited_s": 0.005, "waited_s": 0.3})


def test_a_slowdown_splits_into_the_threads_own_time_and_its_time_off_the_cpu(tmp_path: Path) -> None:
    # 0.5 s a repetition under the profiler, 0.1 s alone; its thread ran 0.125 s of each (0.1 s alone)
    result = profiling.ProfileResult(tmp_path, "py-spy", 4, 2.0, unprofiled_s=0.1, cpu_s=0.5, unprofiled_cpu_s=0.1)
    assert result.ran == pytest.approx(1.25) and result.off_cpu == pytest.approx(0.75)
    assert result.waiting is None  # not measured: not invented
    # of each 0.5 s, 0.1 s waiting for a core where it waited 0.05 s alone: 10% of the time more
    waited = replace(result, waited_s=0.4, unprofiled_waited_s=0.05)
    assert waited.waiting == pytest.approx(0.1)
    assert replace(result, waited_s=0.0, unprofiled_waited_s=0.05).waiting == 0.0  # less than alone: none
    # a thread that waits half its time alone (on a GPU, say) is not off the CPU for that: only for what is new
    waits = profiling.ProfileResult(tmp_path, "torch", 4, 0.4, unprofiled_s=0.1, cpu_s=0.2, unprofiled_cpu_s=0.05)
    assert waits.ran == pytest.approx(1.0) and waits.off_cpu == pytest.approx(0.0)
    held = profiling.ProfileResult(tmp_path, "py-spy", 4, 0.8, unprofiled_s=0.1, cpu_s=0.2, unprofiled_cpu_s=0.05)
    assert held.off_cpu == pytest.approx(0.5)  # twice the wall, the same CPU: half of it held off
    assert profiling.ProfileResult(tmp_path, "torch", 4, 0.4, unprofiled_s=0.1, cpu_s=0.5,
                                   unprofiled_cpu_s=0.1).off_cpu == 0.0  # ran longer than the wall grew: none off
    assert profiling.ProfileResult(tmp_path, "py-spy", 4, 2.0, unprofiled_s=0.1).off_cpu is None  # not measured


def test_child_command_is_a_list_without_a_shell() -> None:
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": 2, "name": "a b; rm"})
    req = profiling.ProfileRequest(cell, "forward", 2.0, ops_dirs=("/x y",))
    cmd = profiling.child_command(req, Path("/tmp/s.json"))
    assert cmd[:4] == [sys.executable, "-P", "-m", "benchctl.profile.child"]  # this benchctl, not the folder's
    assert cmd[cmd.index("--cell") + 1] == cell.to_json() and cmd[-2:] == ["--ops-dir", "/x y"]


def test_a_share_of_the_samples_is_known_to_a_binomials_interval() -> None:
    assert share_interval(30, 100) == pytest.approx((21.9, 39.6), abs=0.05)
    assert share_interval(300, 1000) == pytest.approx((27.2, 32.9), abs=0.05)  # ten times the samples: a third as wide
    low, high = share_interval(0, 40)
    assert low == 0.0 and high == pytest.approx(8.8, abs=0.05)



def test_samples_in_openmps_runtime_are_counted_whatever_its_librarys_name(top: TopFrames) -> None:
    """The fixture's [unknown] frames in libgomp.so.1: 25 of its 65 timed samples; a wheel's vendored copy too."""
    from benchctl.profile.stacks import in_openmp

    assert in_openmp(top) == (25, "libgomp.so.1")
    vendored = replace(top, by_self=tuple(replace(r, location="libgomp-a34b3233.so.1") if r.location == "libgomp.so.1"
                                          else r for r in top.by_self))
    assert in_openmp(vendored) == (25, "libgomp-a34b3233.so.1")
    assert in_openmp(replace(top, by_self=tuple(r for r in top.by_self if "gomp" not in r.location))) == (0, "")


def test_the_child_says_an_operator_with_no_backward_has_no_backward_to_profile(output_ops, tmp_path: Path) -> None:
    cell = Cell.make("rowmax", "op", "sort", "cpu", "float32", {"batch_size": 4, "dim": 8})
    request = profiling.ProfileRequest(cell, "backward", 0.1)
    args = profile_child.parse_args(profiling.child_command(request, tmp_path / "s.json")[4:])
    result = profile_child.run(args)
    assert result["status"] == "unavailable" and result["error"].startswith("no output carries a gradient")
    assert result["error"].endswith("(profile --pass forward)")

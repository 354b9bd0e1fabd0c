"""Generated code named from a perf map (benchctl.profile.perf_map): the map's parsing, the lookup, the
stacks rewritten, the ATen table's row for samples cut off at generated code, and the
environment that asks oneDNN for the map."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchctl.profile import perf_map
from benchctl.profile.stacks import (GENERATED, NO_OP, NO_OP_GENERATED, TIMED_FRAME, parse_frame,
                                     top_frames)

MAP = """7f1041827000 38fb jit_avx512_common_conv_fwd_kernel_vmm_t.0
7f1041433000 1e8 jit_uni_reorder_kernel_f32.1
not a symbol line
7f10411c0000 194 jit_uni_reorder_kernel_f32.2
"""
FWD, REORDER = "jit_avx512_common_conv_fwd_kernel_vmm_t", "jit_uni_reorder_kernel_f32"
THUNK = f"{TIMED_FRAME} (benchctl/profile/child.py:46)"


def test_parse_sorts_spans_and_merges_serial_numbers() -> None:
    symbols = perf_map.parse(MAP)
    assert symbols.starts == (0x7F10411C0000, 0x7F1041433000, 0x7F1041827000)
    assert symbols.ends == (0x7F10411C0000 + 0x194, 0x7F1041433000 + 0x1E8, 0x7F1041827000 + 0x38FB)
    assert symbols.names == (REORDER, REORDER, FWD)  # `.1` and `.2` are one kind of kernel
    assert perf_map.parse("") == perf_map.JitSymbols()


def test_an_address_is_named_from_its_start_to_before_its_end() -> None:
    symbols = perf_map.parse(MAP)
    assert symbols.name(0x7F1041827000) == FWD
    assert symbols.name(0x7F1041827000 + 0x38FA) == FWD
    assert symbols.name(0x7F1041827000 + 0x38FB) is None  # one past the end
    assert symbols.name(0x7F1041432FFF) is None and symbols.name(0x10) is None
    assert perf_map.JitSymbols().name(0x7F1041827000) is None


def test_stacks_name_mapped_addresses_only() -> None:
    symbols = perf_map.parse(MAP)
    stacks = [(["main (a.py:1)", "0x7f1041827010 (?)"], 5), (["main (a.py:1)", "0x7f10000000aa (?)"], 2),
              (["0x7f1041433001 (libgomp.so.1)"], 1)]
    named = perf_map.name_stacks(stacks, symbols)
    assert named[0] == (["main (a.py:1)", f"{FWD} ({GENERATED})"], 5)
    assert named[1] == stacks[1]  # not in the map: left as py-spy wrote it
    assert named[2] == ([f"{REORDER} ({GENERATED})"], 1)
    frame = parse_frame(named[0][0][1])
    assert (frame.function, frame.location, frame.native) == (FWD, GENERATED, True)


def test_samples_cut_off_in_generated_code_have_their_own_aten_row() -> None:
    stacks = [([THUNK, "_engine_run_backward (torch/autograd/graph.py:1)", f"{FWD} ({GENERATED})"], 6),
              ([THUNK, "at::_ops::convolution::call (libtorch_cpu.so)", f"{FWD} ({GENERATED})"], 3),
              ([THUNK, "free (libc.so.6)"], 1)]
    ops = {r.op: r for r in top_frames(stacks).by_op}
    assert ops[NO_OP_GENERATED].self_samples == 6  # no op on the stack: unwinding stopped at the kernel
    assert ops["convolution"].self_samples == 3  # unwound: its op is known
    assert ops[NO_OP].self_samples == 1


def test_take_reads_the_map_and_removes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perf_map, "path_for", lambda pid: tmp_path / f"perf-{pid}.map")
    (tmp_path / "perf-41.map").write_text(MAP)
    assert perf_map.take(41).names == (REORDER, REORDER, FWD)
    assert not (tmp_path / "perf-41.map").exists()
    assert perf_map.take(42) == perf_map.JitSymbols()  # a child that generated nothing wrote no map


@pytest.mark.parametrize("before, after", [(None, "2"), ("1", "3"), ("6", "6"), ("vtune", "2")])
def test_the_child_asks_onednn_for_its_map_keeping_other_bits(before: str | None, after: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    if before is None:
        monkeypatch.delenv(perf_map.JIT_PROFILE, raising=False)
    else:
        monkeypatch.setenv(perf_map.JIT_PROFILE, before)
    assert perf_map.child_env() == {perf_map.JIT_PROFILE: after}

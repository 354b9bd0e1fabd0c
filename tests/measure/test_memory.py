"""Peak memory is a measurement: a pass that allocates 200 MB reports about that, a tiny one about 0."""

import sys

import pytest
import torch

from benchctl.measure.memory import KEPT_MIN_BYTES, cpu_footprint, kept

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")


def test_cpu_peak_of_a_known_allocation():
    n = 25_000_000  # 100 MB of float32; `* 2` allocates another 100 MB while the first is alive
    peak = cpu_footprint(lambda: (lambda: torch.ones(n) * 2)).peak_bytes
    assert 190e6 < peak < 260e6


def test_cpu_peak_excludes_what_setup_allocated():
    held = []

    def setup():
        held.append(torch.ones(25_000_000))  # 100 MB before the pass: not the pass's memory
        return lambda: torch.ones(10) * 2

    assert cpu_footprint(setup).peak_bytes < 20e6


def test_what_each_call_kept_is_a_leak_and_what_the_first_kept_once_is_not():
    kept_forever, cache = [], {}

    def leaks():
        kept_forever.append(torch.ones(1_000_000))  # 4 MB a call, never freed
        return torch.ones(10)

    def fills_a_cache_once():
        cache.setdefault("buffer", torch.ones(1_000_000))  # 4 MB at the first call only
        return torch.ones(10)

    leaked = cpu_footprint(lambda: leaks, calls=4).kept_bytes
    assert 3.5e6 < leaked < 4.5e6 and len(kept_forever) == 4  # (last - first) over the 3 calls after the first
    assert abs(cpu_footprint(lambda: fills_a_cache_once).kept_bytes) < KEPT_MIN_BYTES
    assert abs(cpu_footprint(lambda: (lambda: torch.ones(5_000_000) * 2)).kept_bytes) < KEPT_MIN_BYTES


def test_a_row_says_what_each_call_kept_from_a_mib():
    assert kept(4 * 2**20) == ("its calls kept 4.0 MiB each after returning, memory no call freed (a leak, or a cache "
                               "that grows with every call): the worker's memory grows with each call")
    assert kept(KEPT_MIN_BYTES - 1) == "" and kept(None) == ""


def test_tcmallocs_free_memory_is_released_before_the_peak_is_read(monkeypatch):
    """Under a preloaded tcmalloc, memory freed before the call is still resident in its cache: released first,
    the call's pages count as new (a 300 MiB peak read 0-26 MiB without it)."""
    import ctypes
    from types import SimpleNamespace

    from benchctl.measure import memory

    released, real = [], ctypes.CDLL
    monkeypatch.setattr(memory.ctypes, "CDLL", lambda name: SimpleNamespace(
        MallocExtension_ReleaseFreeMemory=lambda: released.append(True)) if name is None else real(name))
    memory._resident(memory._libc())
    assert released == [True]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM and the kept blocks are Linux's")
def test_an_extensions_kept_result_blocks_count_in_its_peak(builtin_ops):
    """naflex_posembed's cpp forward returns its B x N x D result in a block it keeps for the next call: kept,
    that call's peak read 0; released before the peak is read, the result's own bytes."""
    from benchctl.measure.execute import prepare
    from benchctl.ops.cells import Cell

    params = {"batch_size": 8, "D": 768, "grid": 32}
    prepared = prepare(Cell.make("naflex_posembed", "add", "cpp", "cpu", "float32", params).resolve())
    setup = prepared.untimed(prepared.setup("forward"))
    result = setup()()  # a warm call: its block is kept once the result is let go of
    nbytes = result.numel() * result.element_size()
    del result
    assert nbytes >= 8 << 20  # past the 2 MiB from which results get a block
    assert cpu_footprint(setup).peak_bytes >= 0.9 * nbytes

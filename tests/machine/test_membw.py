"""The memory bandwidth probe: its arithmetic with a fake clock, its buffer size, a real read."""

import math

import pytest
import torch

from benchctl.machine import caches, membw


def test_read_gbps_is_the_buffers_bytes_over_the_median_read():
    buffer = torch.ones(1 << 18)  # 1 MiB
    # start and end of five reads: 4, 1, 2, 9 and 2 ms, median 2 ms
    ticks = iter([0.0, 0.004, 0.010, 0.011, 0.020, 0.022, 0.030, 0.039, 0.040, 0.042])
    assert membw.read_gbps(buffer, reads=5, timer=lambda: next(ticks)) == pytest.approx((1 << 20) / 0.002 * 1e-9)


@pytest.mark.parametrize("cache, expected", [(0, 64 << 20), (8 << 20, 64 << 20), (32 << 20, 128 << 20),
                                             (260 << 20, 256 << 20)])
def test_the_buffer_is_four_times_the_cache_between_64_and_256_mib(cache, expected):
    assert membw.buffer_bytes(cache) == expected


def test_the_cache_is_the_largest_level_the_kernel_reports(monkeypatch):
    monkeypatch.setattr(membw.caches, "cpu_caches", lambda: [caches.CacheSize("L2", 2 << 20, 1),
                                                           caches.CacheSize("L3", 260 << 20, 2)])
    assert membw.last_level_cache_bytes() == 260 << 20
    monkeypatch.setattr(membw.caches, "cpu_caches", lambda: [])
    assert membw.last_level_cache_bytes() == 0


def test_a_real_read_gives_a_finite_positive_rate():
    assert membw.last_level_cache_bytes() >= 0
    gbps = membw.read_gbps(torch.ones(4 << 20), reads=3)
    assert math.isfinite(gbps) and gbps > 0.1

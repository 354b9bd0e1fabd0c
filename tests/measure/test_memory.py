"""Peak memory is a measurement: a pass that allocates 200 MB reports about that, a tiny one about 0."""

import sys

import pytest
import torch

from benchctl.measure.memory import cpu_peak_bytes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")


def test_cpu_peak_of_a_known_allocation():
    n = 25_000_000  # 100 MB of float32; `* 2` allocates another 100 MB while the first is alive
    peak = cpu_peak_bytes(lambda: (lambda: torch.ones(n) * 2))
    assert 190e6 < peak < 260e6


def test_cpu_peak_excludes_what_setup_allocated():
    held = []

    def setup():
        held.append(torch.ones(25_000_000))  # 100 MB before the pass: not the pass's memory
        return lambda: torch.ones(10) * 2

    assert cpu_peak_bytes(setup) < 20e6

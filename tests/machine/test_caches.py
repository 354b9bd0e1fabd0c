"""Cache levels: what sysfs says, what the threads of a pass can use, and the ceiling a working set meets."""

import math

import pytest

from benchctl.machine import caches


def sysfs(root, *entries):
    for i, (level, kind, size, shared) in enumerate(entries):
        index = root / f"index{i}"
        index.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
            (index / name).write_text(f"{value}\n")
    return root


def test_the_data_caches_from_l2_up_with_their_sharing(tmp_path):
    root = sysfs(tmp_path, (1, "Data", "32K", "0"), (1, "Instruction", "32K", "0"),
                 (2, "Unified", "1024K", "0"), (3, "Unified", "32768K", "0-3,8-11"))
    l2, l3 = caches.cpu_caches(root)
    assert (l2.name, l2.bytes, l2.shared_by) == ("L2", 1 << 20, 1)
    assert (l3.name, l3.bytes, l3.shared_by) == ("L3", 32 << 20, 8)
    assert caches.cpu_caches(tmp_path / "absent") == []


def test_a_private_cache_counts_once_per_thread_a_shared_one_once_per_group():
    assert caches.CacheSize("L2", 1 << 20, 1).capacity(4) == 4 << 20
    assert caches.CacheSize("L3", 32 << 20, 8).capacity(4) == 32 << 20
    assert caches.CacheSize("L3", 32 << 20, 8).capacity(12) == 64 << 20


def test_the_smallest_level_a_working_set_fits_in_and_dram_beyond():
    peak = {"gbps": 20.0, "levels": {"L3": {"bytes": 32 << 20, "gbps": 150.0},
                                     "L2": {"bytes": 2 << 20, "gbps": 120.0}}}
    l2, l3, dram = caches.levels(peak)
    assert [lv.name for lv in (l2, l3, dram)] == ["L2", "L3", "DRAM"] and dram.bytes == math.inf
    assert l2.gbps == 150.0  # measured below L3 (call overhead on a small copy): never below a larger level
    assert caches.level_for(1 << 20, [l2, l3, dram]) == l2
    assert caches.level_for((2 << 20) + 1, [l2, l3, dram]) == l3
    assert caches.level_for(1 << 30, [l2, l3, dram]) == dram
    assert caches.level_for(10, caches.levels({})) is None


def test_a_working_set_is_held_to_what_a_copy_of_its_size_does():
    """A VM's share of an L3 can be far less than its capacity: the calibration times copies at each doubling,
    and a working set is held to what a copy of its size does (read between the two timed either side of it on a
    log-log line), not to its level's best, nor to DRAM's just past the capacity."""
    copies = {1: 110.0, 8: 140.0, 16: 144.0, 32: 104.0, 64: 57.0, 512: 30.0}  # GB/s by MiB held
    peak = {"gbps": 30.0, "levels": {"L2": {"bytes": 2 << 20, "gbps": 110.0}, "L3": {"bytes": 32 << 20, "gbps": 140.0}},
            "copy_sizes": [{"copy_bytes": mib << 20, "gbps": gbps} for mib, gbps in copies.items()]}

    def held_to(nbytes, ceilings=caches.levels(peak)):
        level = caches.level_for(nbytes, ceilings)
        return level.name, pytest.approx(level.gbps)

    assert held_to(512 << 10) == ("L2", 144.0)  # under the smallest copy: its rate, never below a larger copy's
    assert held_to(16 << 20) == ("L3", 144.0)
    assert held_to(24 << 20) == ("L3", 144.0 * (104.0 / 144.0) ** math.log2(1.5))
    assert held_to(32 << 20) == ("L3", 104.0)  # the copy that fills the L3: what the VM's share of it moved
    assert held_to((32 << 20) * 2 ** 0.5) == ("L3", (104.0 * 57.0) ** 0.5)  # halfway, on the log scale
    assert held_to(64 << 20) == ("DRAM", 57.0)
    assert held_to(1 << 30) == ("DRAM", 30.0)  # past the largest copy: its rate
    by_capacity = caches.levels({name: v for name, v in peak.items() if name != "copy_sizes"})  # an older calibration
    assert held_to(30 << 20, by_capacity) == ("L3", 140.0) and held_to(40 << 20, by_capacity) == ("DRAM", 30.0)


@pytest.mark.parametrize("text, size", [("32K", 32 << 10), ("1024K", 1 << 20), ("8M", 8 << 20), ("4096", 4096)])
def test_sizes_in_the_kernels_units(text, size):
    assert caches._size(text) == size

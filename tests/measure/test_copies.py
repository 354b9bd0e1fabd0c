"""The copies a calibration times: their sizes, and the fastest of their windows by the bytes they held."""

from benchctl.measure import copies


def test_a_level_not_four_times_the_one_below_is_timed_at_a_quarter_of_its_capacity(monkeypatch):
    monkeypatch.setattr(copies, "level_bytes", lambda device: {"L2": 2 << 20, "L3": 6 << 20})
    assert copies.copy_sources("cpu") == {"L2": 512 << 10, "L3": 1536 << 10}


def test_between_the_levels_and_dram_a_copy_at_each_doubling_from_the_smallest_level_s(monkeypatch):
    monkeypatch.setattr(copies, "level_bytes", lambda device: {"L2": 192 << 20, "L3": 1152 << 20})  # a large server
    assert copies.copy_sources("cpu") == {"L2": 48 << 20, "L3": 288 << 20}
    assert copies.dram_source("cpu") == 2304 << 20
    assert copies.between_sources("cpu") == [mib << 20 for mib in (96, 192, 384, 768, 1536)]
    monkeypatch.setattr(copies, "level_bytes", lambda device: {})  # no cache levels known: the DRAM copy alone
    assert copies.between_sources("cpu") == []


def test_each_copy_keeps_its_fastest_window_and_is_stored_by_the_bytes_it_held(monkeypatch):
    monkeypatch.setattr(copies, "level_bytes", lambda device: {"L2": 2 << 20, "L3": 32 << 20})
    windows = [{"DRAM": 30.0, "L2": 100.0, "L3": 150.0, 16 << 20: 60.0}, {"DRAM": 40.0, "L2": 120.0, "L3": 140.0}]
    best = copies.best_copies(windows, "cpu")
    assert best["gbps"] == 40.0 and best["copy_bytes"] == 512 << 20
    assert best["levels"]["L3"] == {"bytes": 32 << 20, "gbps": 150.0, "copy_bytes": 8 << 20}
    assert best["copy_sizes"] == [{"copy_bytes": 1 << 20, "gbps": 120.0}, {"copy_bytes": 8 << 20, "gbps": 150.0},
                                  {"copy_bytes": 32 << 20, "gbps": 60.0}, {"copy_bytes": 512 << 20, "gbps": 40.0}]

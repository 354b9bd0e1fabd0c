"""Environment facts: how busy the CPU is, from two /proc/stat readings."""

import os

from benchctl.metadata import busy_cores


def test_busy_cores_from_two_proc_stat_readings(tmp_path):
    stat = tmp_path / "stat"
    readings = iter([
        "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 ...\n",  # busy 200 of 1000
        "cpu  250 0 150 1000 0 0 0 0 0 0\ncpu0 ...\n",  # +200 busy, +200 idle
    ])
    stat.write_text(next(readings))
    busy = busy_cores(stat=stat, sleep=lambda _: stat.write_text(next(readings)))
    assert busy == (os.cpu_count() or 1) * 0.5


def test_busy_cores_is_none_without_proc_stat(tmp_path):
    assert busy_cores(stat=tmp_path / "missing", sleep=lambda _: None) is None

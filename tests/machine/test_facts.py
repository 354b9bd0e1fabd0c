"""Environment facts: how busy the CPU is, from two /proc/stat readings; the memory setup from /sys."""

import os

from benchctl.machine import facts as metadata
from benchctl.machine.facts import busy_cores, memory_setup


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


def test_memory_setup_reads_the_huge_page_mode_and_free_page_reporting(tmp_path):
    thp = tmp_path / "kernel" / "mm" / "transparent_hugepage"
    thp.mkdir(parents=True)
    (thp / "enabled").write_text("always [madvise] never\n")
    reporting = tmp_path / "module" / "page_reporting" / "parameters"
    reporting.mkdir(parents=True)
    (reporting / "page_reporting_order").write_text("9\n")
    assert memory_setup(tmp_path) == {"transparent_hugepage": "madvise",
                                      "free_page_reporting": "on, blocks of 2048 KiB and up"}


def test_memory_setup_without_the_files_says_none(tmp_path):
    assert memory_setup(tmp_path) == {"transparent_hugepage": None, "free_page_reporting": None}


def test_environment_names_the_tf32_setup(tf32):
    tf32(matmul=False, conv=True)
    assert metadata.details()["tf32"] == "matmul off, cudnn conv on"

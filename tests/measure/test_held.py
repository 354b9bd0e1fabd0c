import os
import threading

import pytest
import torch

from benchctl.measure import held
from benchctl.measure.result import PassResult


@pytest.fixture
def settings():
    given = held.read()
    yield given
    for name, value in given.items():
        held.SETTINGS[name][1](value)


def test_a_cell_whose_code_changed_torchs_settings_has_them_set_back_and_its_rows_say_so(settings):
    cell = held.Given()
    threads = settings["threads"]
    torch.set_num_threads(threads + 1)  # what the measured code did
    torch.set_float32_matmul_precision("medium")
    torch.set_default_dtype(torch.float64)
    (row,) = cell.judged([PassResult(status="ok", message="timed alone", threads=threads + 1)])
    assert held.read() == settings and row.threads == threads
    assert row.message == (f"timed alone; its code changed torch's settings for the process: threads {threads} -> "
                           f"{threads + 1}, float32 matmul precision highest -> medium, default dtype float32 -> "
                           "float64 (set back after the cell): its time is not comparable with the others'")


def test_settings_an_import_changed_since_the_worker_began_are_set_back_before_the_cell(settings):
    torch.autograd.set_detect_anomaly(True)  # an operator file's import, before the cell
    cell = held.Given(settings)
    assert held.read() == settings and cell.given == settings
    (row,) = cell.judged([PassResult(status="ok", message=None, threads=settings["threads"])])
    assert row.message == ("its operator's files changed torch's settings for the process: anomaly detection False "
                           "-> True as they were imported (set back)")
    assert held.Given(settings).imported == ""  # nothing changed since


def test_each_setting_is_read_and_set_back(settings):
    flipped = {"cuDNN TF32": not settings["cuDNN TF32"], "deterministic algorithms": True, "grad mode": False,
               "oneDNN": not settings["oneDNN"], "cuDNN": not settings["cuDNN"], "cuDNN benchmark": True,
               "cuDNN deterministic": True, "anomaly detection": True, "autocast on the CPU": True,
               "autocast on the GPU": True, "default device": "cpu"}
    if torch.set_flush_denormal(False):  # the CPU can flush denormals (x86 with SSE3)
        flipped["flush denormals"] = True
    cell = held.Given()
    for name, value in flipped.items():
        held.SETTINGS[name][1](value)
    assert {name: held.read()[name] for name in flipped} == flipped
    said = cell.restore()
    assert all(name in said for name in flipped) and held.read() == settings
    assert cell.restore() == ""  # nothing changed since


def test_a_pass_whose_calls_kept_more_cores_busy_than_given_says_so(settings):
    cell = held.Given()
    cell.given["threads"] = 2
    over, within, none = cell.judged([PassResult(status="ok", cpu_cores=2.6, threads=2),
                                      PassResult(status="ok", cpu_cores=2.4, threads=2), PassResult(status="unavailable")])
    assert over.message.startswith("its calls kept 2.60 CPU cores busy with torch given 2 threads")
    assert within.message is None and none.message is None  # 2.4 is within 2 x 1.25; nothing timed, nothing said
    assert [r.threads for r in (over, within, none)] == [2, 2, None]  # a row that never ran has no threads of its own


def test_a_setting_that_cannot_be_read_is_neither_judged_nor_set_back(settings):
    """Once code sets one of torch 2.9's per-backend precisions, the float32 matmul precision's getter raises."""
    cell = held.Given()
    torch.backends.mkldnn.matmul.fp32_precision = "bf16"
    try:
        assert held.read()["float32 matmul precision"] is held.UNREADABLE
        assert cell.restore() == ""  # the rest as given: nothing said, nothing raised
    finally:
        torch.backends.mkldnn.matmul.fp32_precision = "none"


def test_affinity_readings_compare_each_thread_and_a_thread_in_one_only_as_its_main_thread():
    pid, both, one = os.getpid(), frozenset({0, 1}), frozenset({0})
    given = held.Affinity({pid: both, 101: both})
    assert given == held.Affinity({pid: both, 102: both})  # 101 ended, 102 started with the main thread's CPUs
    assert given != held.Affinity({pid: both, 101: one})  # a thread pinned
    assert given != held.Affinity({pid: both, 101: both, 102: one})  # a thread started pinned
    assert given != held.Affinity({pid: one, 101: both})
    assert str(given) == "0-1" and held._cpus(frozenset({0, 1, 2, 3, 6, 8, 9})) == "0-3,6,8-9"
    assert str(held.Affinity({pid: both, 101: one, 102: one})) == "0 on 2 of 3 threads, 0-1 on 1 of 3 threads"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs a process that may run on 2 CPUs")
def test_threads_pinned_to_one_cpu_are_set_back_and_the_rows_say_so(settings):
    cell = held.Given()
    cpus = sorted(os.sched_getaffinity(0))
    first = cpus[0]
    for tid in os.listdir("/proc/self/task"):  # what the measured code did, to every thread it found
        os.sched_setaffinity(int(tid), {first})
    stop = threading.Event()
    started = threading.Thread(target=stop.wait)  # started pinned, as the main thread now is
    started.start()
    try:
        (row,) = cell.judged([PassResult(status="ok", threads=settings["threads"])])
        assert all(os.sched_getaffinity(int(tid)) == set(cpus) for tid in os.listdir("/proc/self/task"))
        assert row.message == (f"its code changed the process's settings: CPU affinity {held._cpus(frozenset(cpus))} "
                               f"-> {first} (set back after the cell): its time is not comparable with the others'")
    finally:
        stop.set()
        started.join()


def test_a_default_device_set_even_to_the_cpu_is_a_change_and_is_taken_away():
    """torch.set_default_device("cpu") leaves the device as it reads, but puts a mode before every torch function."""
    cell = held.Given()
    torch.set_default_device("cpu")
    assert torch.get_default_device() == torch.device("cpu") and held.read()["default device"] == "cpu"
    assert "default device unset -> cpu" in cell.restore()
    assert held.read()["default device"] == held.UNSET and torch.empty(1).device.type == "cpu"

import subprocess
import sys
import threading
import time

import pytest

from benchctl.measure import cores
from benchctl.measure.clocks import OsReader, OsUsage, TaskCount


def test_the_cores_kept_busy_are_the_calls_cpu_seconds_over_their_wall_time():
    usage = [OsUsage(0, 0.0, cpu_s=0.004, wall_s=0.002), OsUsage(0, 0.0, cpu_s=0.001, wall_s=0.003)]
    assert cores.busy(usage) == pytest.approx(1.0)  # 5 ms of CPU over 5 ms: one core, whatever each call read
    assert cores.busy([OsUsage(0, 0.0, cpu_s=0.006, wall_s=0.002)]) == pytest.approx(3.0)
    assert cores.busy([]) is None and cores.busy([OsUsage(0, 0.0)]) is None  # nothing timed: no figure


def test_calls_that_kept_more_cores_busy_than_given_say_so():
    assert cores.beyond(2.6, 2) == ("its calls kept 2.60 CPU cores busy with torch given 2 threads: it ran threads of "
                                    "its own, so its time is not comparable with the others'")
    assert cores.beyond(1.3, 1).startswith("its calls kept 1.30 CPU cores busy with torch given 1 thread:")
    assert cores.beyond(2.4, 2) == "" and cores.beyond(None, 2) == ""  # within 2 x 1.25; nothing timed



def test_threads_that_ended_within_the_calls_count_where_a_task_was_made_and_never_below_zero():
    made = [OsUsage(0, 0.0, cpu_s=0.001, wall_s=0.002, threads_s=0.001, process_s=0.003, tasks=2)]  # 2 ms unlisted
    quiet = [OsUsage(0, 0.0, cpu_s=0.002, wall_s=0.002, threads_s=0.002, process_s=0.0005, tasks=0)]  # ticks: no task
    assert cores.ended(made) == pytest.approx(0.002) and cores.busy(made) == pytest.approx(1.5)
    assert cores.ended(quiet) == 0.0 and cores.busy(quiet) == pytest.approx(1.0)  # no task made: its clock unread
    behind = [OsUsage(0, 0.0, cpu_s=0.002, wall_s=0.002, threads_s=0.002, process_s=0.001, tasks=1)]
    assert cores.ended(behind + made) == pytest.approx(0.001)  # summed over the pass: one call's lag offsets another's
    assert cores.ended(behind) == 0.0


def test_a_calls_cpu_time_counts_the_threads_that_ended_within_it_where_a_task_was_made_and_never_less():
    made, quiet, behind = (OsUsage(0, 0.0, cpu_s=0.001, wall_s=0.002, threads_s=0.001, process_s=0.003, tasks=2),
                           OsUsage(0, 0.0, cpu_s=0.002, wall_s=0.002, threads_s=0.002, process_s=0.0005, tasks=0),
                           OsUsage(0, 0.0, cpu_s=0.002, wall_s=0.002, threads_s=0.002, process_s=0.001, tasks=1))
    assert cores.call_cpu(made) == pytest.approx(0.003)  # 2 ms on a thread no listing saw
    assert cores.call_cpu(quiet) == 0.002 and cores.call_cpu(behind) == 0.002


def test_the_task_count_changes_when_a_thread_is_made_and_every_reading_differs_where_it_cannot_be_read(tmp_path):
    count = TaskCount()
    before = count()
    threading.Thread(target=lambda: None).start()
    assert count() != before
    unknown = TaskCount(str(tmp_path / "none"))
    assert len({unknown(), unknown(), unknown()}) == 3


def test_the_os_reader_counts_a_thread_started_and_ended_between_two_readings():
    """A pool made for one call and shut down before it returns: its thread spins 0.2 s while the caller waits."""
    read = OsReader()
    before = read()
    spinner = threading.Thread(target=_spin_for, args=(0.2, threading.Event(), _set()))
    spinner.start()
    spinner.join()
    used = read() - before
    assert used.cpu_s < 0.1 and used.tasks != 0  # its own clock never listed; the kernel made a task
    assert 0.3 < cores.busy([used]) < 1.3  # one core busy, the thread's; a neighbour may take part of it


def test_the_os_reader_lists_a_thread_started_after_it_was_made_once_a_task_was_made():
    started, go = threading.Event(), threading.Event()
    spinner = threading.Thread(target=_spin_for, args=(0.3, started, go))
    read = OsReader()
    spinner.start()
    started.wait()
    before = read()  # the kernel made a task since the last reading: the threads are listed again
    go.set()
    time.sleep(0.15)
    used = read() - before
    spinner.join()
    assert 0.3 < used.cpu_s / used.wall_s < 1.3  # read from its own clock, listed at the reading before


def _set() -> threading.Event:
    go = threading.Event()
    go.set()
    return go


def _spin_for(seconds: float, started: threading.Event, go: threading.Event) -> None:
    started.set()
    go.wait()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_the_os_reader_counts_the_cpu_of_threads_other_than_the_callers():
    """A thread listed when the reader was made spins while the caller sleeps 0.15 s: the CPU read is the other
    thread's (the caller's own is next to none); once it has ended, its last reading stands."""
    started, go = threading.Event(), threading.Event()
    spinner = threading.Thread(target=_spin_for, args=(0.3, started, go))
    spinner.start()
    started.wait()
    read = OsReader()
    before = read()
    go.set()
    time.sleep(0.15)
    used = read() - before
    spinner.join()
    assert 0.3 < used.cpu_s / used.wall_s < 1.3  # one core busy; a neighbour may take part of it, never add
    ended = read()
    assert read().cpu_s - ended.cpu_s < 0.01  # the ended thread adds nothing more


def test_without_a_thread_list_the_os_reader_takes_getrusage(tmp_path):
    read = OsReader(tasks=str(tmp_path / "none"))
    assert read.threads == {} and read().cpu_s > 0  # this process's user and system time so far


SPIN = ("import sys, time\nprint('ready', flush=True)\nsys.stdin.readline()\nend = time.perf_counter() + {}\n"
        "while time.perf_counter() < end: pass\n")


def test_the_os_reader_counts_the_cpu_of_a_child_process_listed_when_made_and_of_one_that_ended():
    """A child started before the reader was made (a pool a first call started) spins 0.3 s while the caller sleeps:
    its CPU is read from its own clock, and once it is waited for, from getrusage's count alone. A child started
    and waited for meanwhile counts once it has ended."""
    pool = subprocess.Popen([sys.executable, "-c", SPIN.format(0.3)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        pool.stdout.readline()  # started: its start-up is not what is read
        read = OsReader()
        before = read()
        pool.stdin.write("go\n")
        pool.stdin.flush()
        time.sleep(0.15)
        used = read() - before
        time.sleep(0.25)  # its spinning done
        spun = read()
    finally:
        pool.stdin.close()
        pool.wait()
    assert 0.3 < used.cpu_s / used.wall_s < 1.3  # one core busy, the child's; a neighbour may take part of it
    assert read().cpu_s - spun.cpu_s < 0.1  # waited for: getrusage counts it now, its own clock no more (not twice)
    before = read()
    subprocess.run([sys.executable, "-c", SPIN.format(0.2)], input="go\n", text=True, check=True, capture_output=True)
    assert read().cpu_s - before.cpu_s > 0.15  # its 0.2 s of spinning (and its start), once waited for

"""The load timeline: other processes' busy cores (ours left out) and steal, from a fake /proc."""

import os
import time

from benchctl.machine import load


def fake_proc(root, busy: int, steal: int, idle: int, ours: int):
    """A /proc with its stat line and two processes: this one (our CPU) and an unrelated one."""
    (root / "stat").write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 {steal} 0 0\ncpu0 0 0 0 0\n")
    for pid, ppid, ticks in ((os.getpid(), 1, ours), (999999, 1, 500)):
        (root / str(pid)).mkdir(exist_ok=True)
        (root / str(pid) / "stat").write_text(f"{pid} (py (x)) S {ppid} 0 0 0 0 0 0 0 0 0 {ticks} 0 0 0\n")


def test_other_processes_load_leaves_ours_out(tmp_path):
    fake_proc(tmp_path, busy=1000, steal=0, idle=1000, ours=200)
    before = load.machine_ticks(tmp_path) + (load.own_ticks(os.getpid(), tmp_path),)
    assert before == (1000, 0, 2000, 200)
    fake_proc(tmp_path, busy=1300, steal=100, idle=1600, ours=300)  # 1000 jiffies: 300 busy (100 ours), 100 steal
    after = load.machine_ticks(tmp_path) + (load.own_ticks(os.getpid(), tmp_path),)
    assert load.load_between(before, after, cores=2) == {"other_cores": 0.4, "steal_cores": 0.2}


def test_our_descendants_are_ours_and_another_process_is_not(tmp_path):
    fake_proc(tmp_path, busy=1000, steal=0, idle=1000, ours=200)
    for pid, ppid, ticks in ((900001, os.getpid(), 30), (900002, 900001, 7), (900003, 999999, 11)):
        (tmp_path / str(pid)).mkdir()  # a worker, its compile worker, and a child of the unrelated process
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (w) S {ppid} 0 0 0 0 0 0 0 0 0 {ticks} 0 0 0\n")
    assert load.own_ticks(os.getpid(), tmp_path) == 200 + 30 + 7


def test_a_descendant_that_ended_stays_ours_in_its_parent_s_count(tmp_path):
    fake_proc(tmp_path, busy=1000, steal=0, idle=1000, ours=200)
    worker = tmp_path / "900001"
    worker.mkdir()
    (worker / "stat").write_text(f"900001 (w) S {os.getpid()} 0 0 0 0 0 0 0 0 0 40 5 0 0\n")
    (tmp_path / "900002").mkdir()  # its compile worker, running: 300 jiffies
    (tmp_path / "900002" / "stat").write_text("900002 (c) S 900001 0 0 0 0 0 0 0 0 0 250 50 0 0\n")
    before = load.machine_ticks(tmp_path) + (load.own_ticks(os.getpid(), tmp_path),)
    assert before[3] == 200 + 45 + 300
    # the compile worker spun 100 jiffies more and ended; the worker waited for it (cutime, cstime)
    (tmp_path / "900002" / "stat").unlink()
    (tmp_path / "900002").rmdir()
    (worker / "stat").write_text(f"900001 (w) S {os.getpid()} 0 0 0 0 0 0 0 0 0 40 5 330 70\n")
    fake_proc(tmp_path, busy=1100, steal=0, idle=1100, ours=200)
    after = load.machine_ticks(tmp_path) + (load.own_ticks(os.getpid(), tmp_path),)
    assert load.load_between(before, after, cores=2) == {"other_cores": 0.0, "steal_cores": 0.0}


def test_the_timeline_samples_while_it_runs(tmp_path):
    fake_proc(tmp_path, busy=1000, steal=0, idle=1000, ours=0)
    with load.Timeline(interval=0.01, proc=tmp_path) as timeline:
        time.sleep(0.1)
    assert timeline.samples == []  # no time passed in the fake /proc: nothing to say
    fake_proc(tmp_path, busy=1000, steal=0, idle=1000, ours=0)
    with load.Timeline(interval=0.01, proc=tmp_path) as timeline:
        time.sleep(0.05)
        fake_proc(tmp_path, busy=2000, steal=0, idle=2000, ours=0)  # half the time busy, none of it ours
        time.sleep(0.1)
    assert any(s["other_cores"] == (os.cpu_count() or 1) * 0.5 for s in timeline.samples)
    assert [s["t"] for s in timeline.samples] == sorted(s["t"] for s in timeline.samples)


def test_without_proc_the_timeline_stays_empty(tmp_path):
    with load.Timeline(interval=0.01, proc=tmp_path / "missing") as timeline:
        time.sleep(0.03)
    assert timeline.samples == []


def test_a_stretch_of_other_work_is_its_median_busy_cores_and_its_share_of_the_run():
    quiet, busy = {"other_cores": 0.1}, [{"other_cores": c} for c in (0.9, 1.0, 1.2)]
    assert load.busy_stretch([quiet] * 7 + busy) == {"cores": 1.0, "share": 0.3}
    assert load.busy_stretch([quiet] * 28 + busy[:2]) is None  # under a tenth of the run
    assert load.busy_stretch([]) is None


def test_a_pass_reads_the_cores_other_processes_kept_busy_between_its_two_readings(tmp_path):
    fake_proc(tmp_path, busy=1000, steal=0, idle=1000, ours=200)
    before = load.ticks(proc=tmp_path)
    fake_proc(tmp_path, busy=1500, steal=0, idle=1500, ours=250)  # 1000 jiffies: 500 busy, 50 of them ours
    assert load.other_cores(before, load.ticks(proc=tmp_path)) == round(0.45 * (os.cpu_count() or 1), 3)
    assert load.ticks(proc=tmp_path / "missing") is None and load.other_cores(before, None) is None


def test_the_cores_others_keep_busy_over_a_second_leave_ours_out(tmp_path):
    fake_proc(tmp_path, busy=1000, steal=0, idle=1000, ours=200)
    found = load.others_busy(proc=tmp_path, sleep=lambda _: fake_proc(tmp_path, busy=1600, steal=0, idle=1400,
                                                                      ours=500))
    assert found == round(0.3 * (os.cpu_count() or 1), 3)  # 1000 jiffies: 600 busy, 300 of them ours
    assert load.others_busy(proc=tmp_path / "missing", sleep=lambda _: None) is None


def test_the_wait_for_quiet_stops_at_a_quiet_first_second_or_three_after_work_or_after_its_readings():
    """A loop of compiles read quiet for the second between two files: once work was seen, three seconds in a row."""
    readings, now = iter([1.2, 0.9, 0.3, 0.6, 0.3, 0.1, 0.2, 0.1]), iter(range(100))
    assert load.wait_for_quiet(10, read=lambda: next(readings), clock=lambda: float(next(now))) == (0.3, 1.0)
    assert next(readings) == 0.1  # seven read
    gap = iter([1.0, 1.1, 1.0, 0.3])  # the budget ends in a compile loop's gap: still busy
    assert load.wait_for_quiet(4, read=lambda: next(gap), clock=lambda: 0.0) == (1.1, 0.0)
    assert load.wait_for_quiet(10, read=lambda: 0.1, clock=lambda: 0.0) == (0.1, 0.0)
    busy = iter([1.0] * 5)
    assert load.wait_for_quiet(3, read=lambda: next(busy), clock=lambda: 0.0) == (1.0, 0.0)
    assert next(busy) == 1.0 and next(busy) == 1.0  # three read: the last two left
    reads: list[int] = []
    assert load.wait_for_quiet(0, read=lambda: reads.append(1), clock=lambda: 0.0) == (None, 0.0) and reads == [1]

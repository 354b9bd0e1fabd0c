"""The cgroup's OOM-killer counter: found for cgroup v1 and v2, read, and None where it cannot be."""

from benchctl.machine import oom


def test_the_counter_of_a_v2_cgroup(tmp_path):
    (tmp_path / "proc").write_text("0::/user.slice/run-1.scope\n")
    folder = tmp_path / "cg" / "user.slice" / "run-1.scope"
    folder.mkdir(parents=True)
    (folder / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n")
    path = oom.counter_file(tmp_path / "proc", tmp_path / "cg")
    assert path == folder / "memory.events" and oom.kills(path) == 2


def test_the_counter_of_a_v1_memory_cgroup(tmp_path):
    (tmp_path / "proc").write_text("5:devices:/\n4:memory:/jobs/a1\n0::/\n")
    folder = tmp_path / "cg" / "memory" / "jobs" / "a1"
    folder.mkdir(parents=True)
    (folder / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 7\n")
    assert oom.kills(oom.counter_file(tmp_path / "proc", tmp_path / "cg")) == 7


def test_no_counter_is_none_not_an_error(tmp_path):
    assert oom.counter_file(tmp_path / "absent", tmp_path) is None
    (tmp_path / "proc").write_text("0::/\n")
    assert oom.counter_file(tmp_path / "proc", tmp_path / "cg") is None
    assert oom.kills(None) is None
    (tmp_path / "events").write_text("oom_kill many\n")
    assert oom.kills(tmp_path / "events") is None

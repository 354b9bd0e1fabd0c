"""The ray executor on a real local Ray cluster (ray.cluster_utils.Cluster, nodes of one CPU each, on
127.0.0.1): a sweep spread over the nodes lands in one run, a hostile implementation ends only its cell,
a node removed mid-sweep loses nothing, Ctrl-C keeps finished rows, and bad input is one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from benchctl.errors import UsageError  # noqa: E402
from benchctl.measure.execute import Settings  # noqa: E402
from benchctl.measure.timing import Policy  # noqa: E402
from benchctl.ops.cells import Cell  # noqa: E402
from benchctl.results import storage  # noqa: E402
from benchctl.sweep import cluster as cluster_mod  # noqa: E402
from benchctl.sweep.cluster import RayCluster  # noqa: E402
from benchctl.sweep.plan import Plan  # noqa: E402
from benchctl.sweep.series import SeriesJob, group  # noqa: E402
from benchctl.sweep.session import Session  # noqa: E402
from benchctl.sweep.worker_spec import WorkerSpec

DRIVER = Path(__file__).resolve().parent.parent / "fixtures" / "ray_driver.py"
FAST = Settings(policy=Policy(warmup=0, warmup_time=0, min_samples=2, max_samples=3, min_time=0, max_time=1),
                probe_bandwidth=False)


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"fake_gpu": 1}})
    c.add_node(num_cpus=1, resources={"fake_gpu": 1})
    c.wait_for_nodes()
    yield c
    if ray.is_initialized():
        ray.shutdown()
    c.shutdown()


def cells(impl: str, sizes=(2, 4), passes=("forward",)) -> list[Cell]:
    return [Cell.make("faulty", "op", impl, "cpu", "float32", {"batch_size": b, "dim": 8}, passes) for b in sizes]


def run(tmp_path, cluster, fixture_ops_dir, cell_list, **kw) -> tuple[Session, object]:
    plan = Plan(cell_list, ops_dirs=(str(fixture_ops_dir),), executor="ray", address=cluster.address, timeout=60)
    fanout = RayCluster(SeriesJob((), WorkerSpec(FAST, (str(fixture_ops_dir),), timeout=60)), cluster.address, **kw)
    fanout.start(group(cell_list))
    session = Session.open(plan, tmp_path, fanout=fanout)
    return session, storage


def test_series_spread_over_the_nodes_land_in_one_run(tmp_path, cluster, fixture_ops, fixture_ops_dir,
                                                      monkeypatch):
    monkeypatch.setenv("BENCHCTL_TEST_MARKS", str(tmp_path))
    monkeypatch.setenv("BENCHCTL_TEST_SLOW", "1")
    four_series = [Cell.make("faulty", "op", "slow", "cpu", "float32", {"batch_size": 2, "dim": d}, ("forward",))
                   for d in (3, 5, 7, 9)]
    session, _ = run(tmp_path / "out", cluster, fixture_ops_dir, four_series)
    session.run()
    df = storage.load_run(session.writer.dir)
    assert len(df) == 4 and set(df["status"]) == {"ok"}
    assert df["node_id"].nunique() == 2  # one CPU a node, series of a second each: both nodes worked
    assert storage.run_meta(session.writer.dir)["state"] == "complete"
    assert [p.name for p in session.writer.dir.glob("part-*")] == ["part-00000.parquet"]  # compacted


def test_a_hostile_implementation_ends_only_its_own_cell(tmp_path, cluster, fixture_ops, fixture_ops_dir):
    session, _ = run(tmp_path, cluster, fixture_ops_dir, cells("segfault", (4, 8)) + cells("py", (4, 8)))
    session.run()
    got = {(r.impl, r.batch_size): r.status for r in storage.load_run(session.writer.dir).itertuples()}
    assert got == {("segfault", 4): "ok", ("segfault", 8): "crashed", ("py", 4): "ok", ("py", 8): "ok"}


def test_gpu_requests_go_to_nodes_with_that_resource(tmp_path, cluster, fixture_ops, fixture_ops_dir):
    """Custom resources stand in for GPUs: a series asking for one fake GPU runs once per request."""
    two_kinds = lambda self, s: [{"num_cpus": 0, "resources": {"fake_gpu": 1}}] * 2  # noqa: E731
    session, _ = run(tmp_path, cluster, fixture_ops_dir, cells("py", (2,)), requests=two_kinds)
    session.run()
    df = storage.load_run(session.writer.dir)
    assert len(df) == 2 and set(df["status"]) == {"ok"}


def test_a_node_removed_mid_sweep_loses_nothing(tmp_path, cluster, fixture_ops_dir):
    """The series runs in a driver of its own (tests/fixtures/ray_driver.py): Ray fixes a driver's
    BENCHCTL_* settings when it first connects, and this process connected in an earlier test."""
    marks = tmp_path / "marks"
    marks.mkdir()
    victim = cluster.add_node(num_cpus=1, resources={"victim": 1})
    cluster.wait_for_nodes()
    env = {**os.environ, "BENCHCTL_TEST_MARKS": str(marks), "BENCHCTL_TEST_SLOW": "20"}
    driver = subprocess.Popen([sys.executable, str(DRIVER), cluster.address, victim.node_id, str(fixture_ops_dir),
                               str(tmp_path / "out")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    deadline = time.monotonic() + 120
    while not any(marks.iterdir()) and time.monotonic() < deadline and driver.poll() is None:
        time.sleep(0.2)
    assert any(marks.iterdir()) and driver.poll() is None, driver.communicate()  # the series is running
    cluster.remove_node(victim)
    _, err = driver.communicate(timeout=300)
    assert driver.returncode == 0, err
    df = storage.load_run(storage.latest_run(tmp_path / "out"))
    assert len(df) == 1, df  # retried on a live node (ok), or recorded lost: never missing
    row = df.iloc[0]
    if row["status"] == "ok":  # its first call began again in a new worker: the retry, on a live node
        assert len(list(marks.iterdir())) == 2 and row["node_id"] != victim.node_id[:12], row
    else:
        assert row["status"] == "lost" and row["message"].startswith(f"lost on node {victim.node_id[:12]}"), row


def test_bad_input_is_one_line_and_runs_nothing(tmp_path, cluster, fixture_ops, fixture_ops_dir):
    gpu = [Cell.make("faulty", "op", "py", "cuda", "float32", {"batch_size": 2, "dim": 8}, ("forward",))]
    with pytest.raises(UsageError, match="no GPU"):
        RayCluster(SeriesJob((), WorkerSpec(FAST)), cluster.address).start(group(gpu))
    proc = subprocess.run([sys.executable, "-m", "benchctl", "run", "py", "cpu", "--op", "faulty", "--ops-dir",
                           str(fixture_ops_dir), "--executor", "ray", "--address", "127.0.0.1:1",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "no Ray cluster at 127.0.0.1:1" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 3 and "Traceback" not in proc.stderr
    assert not list(tmp_path.iterdir())


def test_ctrl_c_keeps_the_finished_series(tmp_path, cluster, fixture_ops_dir):
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "BENCHCTL_TEST_MARKS": str(marks), "BENCHCTL_TEST_SLOW": "60"}
    cmd = [sys.executable, "-m", "benchctl", "run", "py,slow", "cpu", "--op", "faulty", "--ops-dir",
           str(fixture_ops_dir), "--batch-sizes", "2", "--passes", "forward", "--min-time", "0",
           "--warmup-time", "0", "--executor", "ray", "--address", cluster.address, "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not (any(marks.iterdir()) and list((tmp_path / "out").glob("*/part-*"))):
        time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    run_dir = storage.latest_run(tmp_path / "out")
    assert storage.run_meta(run_dir)["state"] == "interrupted"
    df = storage.load_run(run_dir)
    assert list(df["impl"]) == ["py"] and list(df["status"]) == ["ok"]


def test_a_lost_series_names_the_nodes_it_ran_on():
    error = RuntimeError("The worker died unexpectedly while executing this task.\nmore")
    assert cluster_mod.lost_message(error, ["aaaaaaaaaaaa", "bbbbbbbbbbbb"]) == (
        "lost on node aaaaaaaaaaaa, then bbbbbbbbbbbb: The worker died unexpectedly while executing this task.")
    assert cluster_mod.lost_message(error, []).startswith("lost before it reached a node: ")

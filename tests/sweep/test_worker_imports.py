"""The worker imports exactly its parent's benchctl, wherever the run was started from, and runs
operators whose C++ libraries open one TORCH_LIBRARY namespace in separate processes."""

import json
import subprocess
from pathlib import Path

from benchctl import interpreter
from benchctl.measure.execute import Settings
from benchctl.measure.timing import Policy
from benchctl.ops.cells import Cell
from benchctl.sweep.executors import WorkerProcess
from benchctl.sweep.worker_spec import WorkerSpec

FAST = Settings(policy=Policy(warmup=0, warmup_time=0.0, min_samples=2, min_time=0.0, max_time=0.5),
                measure_memory=False, probe_bandwidth=False)
PARENT = Path(interpreter.__file__).resolve().parent


def other_benchctl(folder: Path) -> None:
    """A second checkout's benchctl/ in `folder`, which refuses to be imported."""
    (folder / "benchctl" / "sweep").mkdir(parents=True)
    (folder / "benchctl" / "__init__.py").write_text("raise ImportError('imported the other benchctl')\n")
    (folder / "benchctl" / "sweep" / "__init__.py").write_text("")


def test_a_worker_started_beside_another_benchctl_imports_the_parents(tmp_path, monkeypatch, fixture_ops_dir):
    other_benchctl(tmp_path)
    monkeypatch.chdir(tmp_path)
    worker = WorkerProcess(WorkerSpec(FAST, [str(fixture_ops_dir)]))
    try:
        rows = worker.run(Cell.make("axpy", "op", "py", "cpu", "float32", {"batch_size": 2, "dim": 3, "alpha": 0.5}))
    finally:
        worker.close()
    assert {r["status"] for r in rows} == {"ok"} and len(rows) == 3


def test_a_child_imports_the_parents_benchctl_from_any_folder(tmp_path):
    other_benchctl(tmp_path)
    code = "import benchctl, json; print(json.dumps(benchctl.__file__))"
    proc = subprocess.run(interpreter.command("-c", code), cwd=tmp_path,
                          capture_output=True, text=True, env=interpreter.child_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert Path(json.loads(proc.stdout)).resolve().parent == PARENT


def test_operators_whose_libraries_clash_never_share_a_worker(monkeypatch):
    from benchctl.ops import namespaces

    monkeypatch.setattr(namespaces, "declared_clashes", lambda: ["clash"])
    monkeypatch.setattr(namespaces, "apart", lambda clashes: {frozenset({"muladd", "lltm"})})
    worker = WorkerProcess(WorkerSpec(FAST))
    worker._ops = {"muladd"}
    assert worker._may_share("muladd") and worker._may_share("other")
    assert not worker._may_share("lltm")

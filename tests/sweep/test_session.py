"""A session notes in the run's metadata what each round of a cell took (time_left.py reads it next time)."""

from types import SimpleNamespace

from benchctl.ops.cells import Cell
from benchctl.sweep import session as session_module
from benchctl.sweep.session import Session
from benchctl.sweep.time_left import CELL_SECONDS


def test_each_round_of_a_cell_is_noted_from_its_start_to_its_end(monkeypatch):
    now = iter([10.0, 12.5, 20.0, 27.5, 30.0, 30.25, 40.0])
    monkeypatch.setattr(session_module.time, "monotonic", lambda: next(now))
    session = Session(SimpleNamespace(), SimpleNamespace(meta={}))
    heard = []
    start, done = session._timed(lambda cell: heard.append(("start", cell.impl)),
                                 lambda cell, rows: heard.append(("done", cell.impl, rows)))
    py, cpp = (Cell("hoconv2d", "filter", impl, "cpu", "float32", {"batch_size": 1}) for impl in ("py", "cpp"))
    start(py), done(py, ["row"])
    start(cpp), done(cpp, [])
    start(py), done(py, [])
    start(cpp)  # a re-measurement: started, never done
    assert session.writer.meta[CELL_SECONDS] == {py.label(): [2.5, 0.25], cpp.label(): [7.5]}
    assert heard[:2] == [("start", "py"), ("done", "py", ["row"])] and len(heard) == 7
    done(py, [])  # a round a failed cell skips: done, never started
    assert session.writer.meta[CELL_SECONDS][py.label()] == [2.5, 0.25]


def test_the_run_s_metadata_records_the_threads_its_cells_ran_on(tmp_path):
    """A `--threads 1` run's metadata said 2 (this process's count), and a report fell back on it."""
    import torch

    from benchctl.results import storage
    from benchctl.sweep.plan import Plan

    one = Session.open(Plan([], threads=1), tmp_path)
    assert one.writer.meta["environment"]["threads"] == 1
    assert storage.meta_fact(one.writer.meta, "threads") == 1
    default = Session.open(Plan([]), tmp_path)
    assert default.writer.meta["environment"]["threads"] == torch.get_num_threads()

"""What `benchctl run` shows as its sweep runs (cli/progress.py): a log's lines, the waits, what went wrong."""

from types import SimpleNamespace

import pytest

from benchctl import console
from benchctl.cli import progress
from benchctl.ops.cells import Cell
from benchctl.sweep.session import Settled
from benchctl.sweep.time_left import TimeLeft


def test_a_sweep_waiting_for_the_machine_prints_a_line_in_a_log_not_one_a_reading(capsys):
    def run(on_start, on_done, on_wait, on_settled):
        for ratio in (1.4, 1.38, 1.35) * 10:  # thirty slow readings, within one WAIT_LINE_S
            on_wait(ratio)
        on_settled(Settled(8.4, 1.04, 0.1))
        on_settled(Settled(3.0, 0.98, 0.0))  # at speed in its first readings: no waiting line before, none after
    session = SimpleNamespace(plan=SimpleNamespace(cells=[None], total_rounds=1), run=run)
    progress.progress_run(session, TimeLeft([]))
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith(("waiting", "the machine"))]
    assert said == ["waiting for the machine: its canary reads 1.40x its calibrated time",
                    "the machine read quiet and at speed after 8 s (its canary 1.04x calibrated)"]


def test_a_canary_far_faster_than_calibrated_is_said_once_a_run_as_it_starts(capsys):
    def run(on_start, on_done, on_wait, on_settled):
        on_settled(Settled(0.0, 0.80, 0.0))  # before the first cell: the calibration ran in a slow phase
        on_settled(Settled(0.0, 0.78, 0.0))  # before a re-measurement: said already
        on_settled(Settled(0.0, 0.90, 0.0))  # within 15%: nothing to say
    session = SimpleNamespace(plan=SimpleNamespace(cells=[None], total_rounds=1), run=run)
    progress.progress_run(session, TimeLeft([]))
    said = [" ".join(part.split()).split(" cells ")[0] for part in capsys.readouterr().err.split("warning: ")[1:]]
    assert said == ["the canary reads 0.80x its calibrated time: `benchctl env --calibrate` ran while the machine was "
                    "slow, so no pass of this run can read slow against it; stop and calibrate again to have slow "
                    "passes marked"]
    assert Settled(0.0, 0.86, None).fast and not Settled(0.0, 0.87, None).fast and not Settled(0.0, None, None).fast


@pytest.mark.parametrize("wait, said", [
    (Settled(60.2, 1.23, 0.0), "went on after waiting 60 s for the machine (--settle), its canary 1.23x calibrated: "
                               "passes timed while it reads over 1.15x are marked slow"),
    (Settled(61.0, 1.02, 1.1), "went on after waiting 61 s for the machine (--settle), other processes keeping 1.1 "
                               "cores busy"),
    (Settled(3.0, None, 0.2), "the machine read quiet and at speed after 3 s"),  # no calibration: quiet is all it knows
])
def test_a_wait_says_how_it_ended(wait, said):
    assert progress.settled_text(wait) == said


@pytest.mark.parametrize("status, message, again", [
    ("incorrect", "its 2 timed calls on data never given to it before took 3.3-6.8x as long as ...", True),
    ("below_floor", "below the floor: 0.001 ms against 0.2 ms", True),
    ("incorrect", "timed call 3 of 9: output 0: error 0.98 > 0.01", False),  # wrong outputs are not re-checked
    ("error", "RuntimeError: boom", False),
])
def test_a_pass_that_went_wrong_says_as_it_ends_whether_the_end_of_the_sweep_checks_it_again(status, message, again):
    cell = Cell("naflex_posembed", "add", "loop", "cpu", "float32", {"batch_size": 16})
    line = progress._bad_line(cell, {"status": status, "message": message}).plain
    assert line.startswith(f"{cell.label()}: {status} {message}")
    assert line.endswith("(re-checked at the end of the sweep: the tables have the verdict)") is again


def test_a_log_says_each_cell_measured_again_after_the_planned_ones(capsys, builtin_ops):
    cells = [Cell("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": b}) for b in (1, 2)]

    def run(on_start, on_done, on_wait, on_settled):
        for cell in cells:
            on_start(cell)
            on_done(cell, [])
        on_start(cells[1])  # re-measured at the end: a start without a planned done
    session = SimpleNamespace(plan=SimpleNamespace(cells=cells, total_rounds=1), run=run)
    progress.progress_run(session, TimeLeft(cells))
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith(("cell ", "measuring again"))]
    assert [line.split(" (")[0] for line in said] == [
        f"cell 1/2 {cells[0].label()}", f"cell 2/2 {cells[1].label()}", f"measuring again at the end: {cells[1].label()}"]


def test_the_wait_for_the_machine_before_the_first_cell_is_not_that_cells_time(capsys, monkeypatch, builtin_ops):
    """The sweep waits for the machine before its first cell (up to --settle): a log that counted the wait
    as the cell's time said 65 s for a 5 s cell, and the time left (87 min) from it."""
    now = [0.0]
    monkeypatch.setattr(console.time, "monotonic", lambda: now[0])
    cells = [Cell("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": b}) for b in (1, 2)]

    def run(on_start, on_done, on_wait, on_settled):
        now[0] += 60.0  # the wait before the first cell
        for cell in cells:
            on_start(cell)
            now[0] += 5.0
            on_done(cell, [])
    session = SimpleNamespace(plan=SimpleNamespace(cells=cells, total_rounds=1), run=run)
    progress.progress_run(session, TimeLeft(cells))
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("cell ")]
    assert said == [f"cell 1/2 {cells[0].label()} (5.0 s, under a minute left)", f"cell 2/2 {cells[1].label()} (5.0 s)"]


def test_a_log_has_no_line_for_a_cell_that_cannot_run_here(capsys, builtin_ops):
    """The run names those before its sweep, a line a reason: 92 lines of `(0.0 s, ...)` for the main job's
    CUDA and Triton cells on a machine without a GPU said nothing the warnings had not."""
    cells = [Cell("hoconv2d", "filter", impl, device, "float32", {"batch_size": 1})
             for impl, device in (("py", "cpu"), ("cuda", "cuda"), ("cpp", "cpu"))]

    def run(on_start, on_done, on_wait, on_settled):
        for cell in cells:
            on_start(cell)
            on_done(cell, [{"status": "unavailable" if cell.device == "cuda" else "ok"}])
    session = SimpleNamespace(plan=SimpleNamespace(cells=cells, total_rounds=1), run=run)
    progress.progress_run(session, TimeLeft(cells))
    said = [line.split(" (")[0] for line in capsys.readouterr().err.splitlines() if line.startswith("cell ")]
    assert said == [f"cell 1/3 {cells[0].label()}", f"cell 3/3 {cells[2].label()}"]

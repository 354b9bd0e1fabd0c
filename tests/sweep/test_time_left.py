import pytest

from benchctl.ops.cells import Cell
from benchctl.results import storage
from benchctl.sweep.time_left import CELL_SECONDS, TimeLeft, taken_before


@pytest.fixture(autouse=True)
def operators(builtin_ops):  # a cell's series and axis are its operator's
    return builtin_ops


def cell(op="hoconv2d", impl="py", device="cpu", batch_size=1):
    return Cell(op, "filter", impl, device, "float32", {"batch_size": batch_size})


def test_nothing_is_known_before_a_cell_that_runs_has_finished():
    cuda = cell(device="cuda")
    left = TimeLeft([cuda, cell()], runnable={cell()})
    left.finished(cuda, 0.01)  # cannot run here: finished at once, and says nothing of the others
    assert left.seconds() is None and left.text() == ""


def test_cells_that_cannot_run_here_take_no_time():
    planned = [cell(batch_size=1), cell(batch_size=2), cell(device="cuda", batch_size=1), cell(device="cuda", batch_size=2)]
    left = TimeLeft(planned, runnable=set(planned[:2]))
    left.finished(planned[0], 6.0)
    assert left.seconds() == 6.0


def test_a_series_grows_by_the_power_of_the_axis_its_last_two_cells_grew_by():
    planned = [cell(batch_size=b) for b in (1, 2, 4, 8)]
    left = TimeLeft(planned)
    left.finished(planned[0], 5.0)
    assert left.seconds() == 15.0  # one cell done: the others as long
    left.finished(planned[1], 10.0)  # twice the time at twice the size: linear, and it said 5 of the 10 s
    assert left.seconds() == pytest.approx((20.0 + 40.0) * 2.0)


def test_a_series_is_never_taken_to_shrink_or_to_grow_past_the_square():
    planned = [cell(batch_size=b) for b in (1, 2, 4)]
    shrinking, exploding = TimeLeft(planned), TimeLeft(planned)
    for left, second in ((shrinking, 4.0), (exploding, 80.0)):
        left.finished(planned[0], 5.0)
        left.finished(planned[1], second)
    assert shrinking.seconds() == pytest.approx(4.0 * 0.8)  # as the last, scaled by 4 s taken of 5 said
    assert exploding.seconds() == pytest.approx(80.0 * 4 * 16)  # at most the square, scaled by 80 of 5


def test_another_series_takes_its_operators_mean_on_that_device_else_the_mean_of_all():
    planned = [cell(impl="py"), cell(impl="cpp"), cell(impl="cpp", batch_size=2), cell(op="lstm_cell")]
    left = TimeLeft(planned)
    left.finished(planned[0], 4.0)
    assert left.seconds() == 12.0
    left.finished(planned[1], 8.0)  # said 4 (hoconv2d's mean on cpu), took 8
    # cpp at 2: its series' last, 8 s; lstm_cell: the mean of all, 6 s; both scaled by 8 / 4
    assert left.seconds() == pytest.approx((8.0 + 6.0) * 2.0)


def test_what_cells_took_before_is_known_from_the_start_and_scaled_by_how_this_run_compares():
    planned = [cell(batch_size=b) for b in (1, 2, 4)]
    before = {planned[0].label(): 2.0, planned[1].label(): 3.0, planned[2].label(): 5.0}
    left = TimeLeft(planned, before=before)
    assert left.seconds() == 10.0
    left.finished(planned[0], 3.0)  # 1.5x what it took before: so are the others
    assert left.seconds() == pytest.approx(8.0 * 1.5)


def test_each_round_of_a_cell_is_counted_and_an_unplanned_one_ignored():
    one = cell()
    left = TimeLeft([one] * 3)
    left.finished(one, 2.0)
    assert left.seconds() == 4.0
    left.finished(one, 2.0)
    left.finished(one, 2.0)
    left.finished(one, 9.0)  # not planned (a re-measurement): nothing changes
    assert left.seconds() == 0 and left.text() == ""


def test_the_text_rounds_to_what_a_reader_needs():
    assert TimeLeft([cell()], before={cell().label(): 59.0}).text() == "under a minute left"
    assert TimeLeft([cell()], before={cell().label(): 2985.0}).text() == "about 50 min left"
    assert TimeLeft([cell()], before={cell().label(): 7920.0}).text() == "about 2.2 h left"


def test_what_cells_took_is_read_from_the_newest_runs_that_have_them(tmp_path):
    a, b = cell(batch_size=1).label(), cell(batch_size=2).label()
    for run_id, took in (("20240101-000000-aaaaaa", {a: [4.0, 6.0, 9.0], b: [3.0]}),
                         ("20240102-000000-bbbbbb", {a: [1.0]}),
                         ("20240103-000000-cccccc", {})):  # a run of nothing this sweep has
        storage.RunWriter(tmp_path, run_id, {CELL_SECONDS: took}).finish()
    assert taken_before(tmp_path) == {a: 1.0, b: 3.0}
    assert taken_before(tmp_path / "none") == {}


@pytest.mark.parametrize("damaged", ["{not json", "[]", '{"cell_s": [1, 2]}'])
def test_a_run_whose_metadata_is_damaged_tells_nothing_and_the_others_still_do(tmp_path, damaged):
    a = cell().label()
    storage.RunWriter(tmp_path, "20240101-000000-aaaaaa", {CELL_SECONDS: {a: [2.0]}}).finish()
    storage.RunWriter(tmp_path, "20240102-000000-bbbbbb", {}).finish()
    (tmp_path / "20240102-000000-bbbbbb" / storage.RUN_FILE).write_text(damaged)
    assert taken_before(tmp_path) == {a: 2.0}  # a sweep into this folder goes on

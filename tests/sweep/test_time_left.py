from benchctl.ops.cells import Cell
from benchctl.sweep.time_left import TimeLeft


def cell(op="hoconv2d", impl="py", device="cpu", batch_size=1):
    return Cell(op, "op", impl, device, "float32", {"batch_size": batch_size})


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


def test_a_series_takes_what_its_last_cell_took():
    planned = [cell(batch_size=b) for b in (1, 2, 4, 8)]
    left = TimeLeft(planned)
    left.finished(planned[0], 5.0)
    left.finished(planned[1], 7.0)
    assert left.seconds() == 14.0  # two cells left, each as long as the nearest size


def test_another_series_takes_its_operators_mean_on_that_device_else_the_mean_of_all():
    planned = [cell(impl="py"), cell(impl="py", batch_size=2), cell(impl="cpp"), cell(op="lstm_cell"),
               cell(impl="cpp", device="cuda")]
    left = TimeLeft(planned)
    left.finished(planned[0], 4.0)
    left.finished(planned[1], 8.0)
    # cpp on cpu: hoconv2d's mean on cpu (6); lstm_cell and cuda cells: the mean of all finished (6)
    assert left.seconds() == 18.0
    left.finished(planned[3], 2.0)
    assert left.seconds() == 6.0 + 14.0 / 3


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
    planned = [cell(batch_size=b) for b in range(1, 202)]
    left = TimeLeft(planned)
    left.finished(planned[0], 0.25)
    assert left.text() == "under a minute left"  # 200 x 0.25 s
    left.finished(planned[1], 15.0)
    assert left.text() == "about 50 min left"  # 199 x 15 s
    left.finished(planned[2], 40.0)
    assert left.text() == "about 2.2 h left"  # 198 x 40 s

import pytest
import torch

from benchctl.measure import cores
from benchctl.measure.clocks import OsUsage
from benchctl.measure.result import PassResult


def test_the_cores_kept_busy_are_the_calls_cpu_seconds_over_their_wall_time():
    usage = [OsUsage(0, 0.0, cpu_s=0.004, wall_s=0.002), OsUsage(0, 0.0, cpu_s=0.001, wall_s=0.003)]
    assert cores.busy(usage) == pytest.approx(1.0)  # 5 ms of CPU over 5 ms: one core, whatever each call read
    assert cores.busy([OsUsage(0, 0.0, cpu_s=0.006, wall_s=0.002)]) == pytest.approx(3.0)
    assert cores.busy([]) is None and cores.busy([OsUsage(0, 0.0)]) is None  # nothing timed: no figure


@pytest.fixture
def threads():
    given = torch.get_num_threads()
    yield given
    torch.set_num_threads(given)


def test_a_cell_that_set_torchs_threads_has_them_set_back_and_its_rows_say_so(threads):
    held = cores.Held()
    torch.set_num_threads(threads + 1)  # what the measured code did
    (row,) = held.judged([PassResult(status="ok", message="timed alone", threads=threads + 1)])
    assert torch.get_num_threads() == threads and row.threads == threads
    assert row.message == (f"timed alone; its code set torch's threads to {threads + 1} (given {threads}; set back "
                           "after the cell): its time is not comparable with the others'")


def test_a_pass_whose_calls_kept_more_cores_busy_than_given_says_so(threads):
    held = cores.Held()
    held.given = 2
    over, within, none = held.judged([PassResult(status="ok", cpu_cores=2.6, threads=2),
                                      PassResult(status="ok", cpu_cores=2.4, threads=2), PassResult(status="unavailable")])
    assert over.message == ("its calls kept 2.60 CPU cores busy with torch given 2 threads: it ran threads of its own, "
                            "so its time is not comparable with the others'")
    assert within.message is None and none.message is None  # 2.4 is within 2 x 1.25; nothing timed, nothing said
    assert [r.threads for r in (over, within, none)] == [2, 2, None]  # a row that never ran has no threads of its own

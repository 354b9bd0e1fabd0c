"""Waiting for the machine to return to speed, on a fake canary and a fake clock."""

import pytest

from benchctl.machine import canary


class Machine:
    """A canary that reads `readings` in turn (seconds), on a clock that moves only when slept."""

    def __init__(self, readings: list[float]):
        self.readings = list(readings)
        self.now = 0.0
        self.slept: list[float] = []

    def read(self) -> float:
        return self.readings.pop(0)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def wait(machine: Machine, limit_s: float, heard: list[float]) -> tuple[float, float]:
    return canary.wait_for_speed(1e-3, limit_s, heard.append, read=machine.read, sleep=machine.sleep,
                                 clock=lambda: machine.now)


def test_a_machine_back_at_speed_ends_the_wait_and_each_slow_median_is_heard():
    machine, heard = Machine([1.5e-3, 1.45e-3, 1.08e-3, 1.1e-3, 9e-3]), []
    ratio, waited = wait(machine, 60.0, heard)
    assert (ratio, waited) == (1.1, 3.0) and heard == [1.5, 1.475, 1.45]
    assert machine.slept == [canary.POLL_S] * 3 and machine.readings == [9e-3]


def test_one_reading_at_speed_among_slow_ones_does_not_end_the_wait():
    machine, heard = Machine([1.5e-3, 1.1e-3, 1.5e-3, 1.1e-3, 2e-3]), []
    ratio, waited = wait(machine, 60.0, heard)
    assert ratio == pytest.approx(1.1) and waited == 3.0 and heard == pytest.approx([1.5, 1.3, 1.5])
    assert machine.readings == [2e-3]


def test_a_machine_at_speed_is_waited_for_only_as_long_as_its_readings_take():
    machine, heard = Machine([1.14e-3, 1.0e-3, 1.05e-3]), []
    ratio, waited = wait(machine, 60.0, heard)
    assert ratio == pytest.approx(1.05) and waited == 2.0 and heard == [] and machine.slept == [canary.POLL_S] * 2


def test_the_wait_ends_at_its_limit_with_the_last_median():
    machine, heard = Machine([1.5e-3] * 10), []
    ratio, waited = wait(machine, 2.5, heard)
    assert ratio == 1.5 and waited == 2.5 and machine.slept == [1.0, 1.0, 0.5] and len(heard) == 3


def test_the_calibrated_time_is_the_one_of_the_pass_threads_and_an_old_calibration_has_only_its_own():
    peaks = {"canary_s": 3e-4, "threads": 2, "canary_s_by_threads": {"1": 4e-4, "2": 3e-4}}
    assert canary.calibrated_s(peaks, 1) == 4e-4 and canary.calibrated_s(peaks, 2) == 3e-4
    assert canary.calibrated_s(peaks, 8) is None
    old = {"canary_s": 3e-4, "threads": 2}  # calibrated before each thread count was
    assert canary.calibrated_s(old, 2) == 3e-4 and canary.calibrated_s(old, 1) is None
    assert canary.calibrated_s({}, 2) is None


def test_a_calibration_whose_canary_reads_far_slower_than_the_one_it_replaced_says_what_that_leaves():
    before = {"canary_s_by_threads": {"1": 4.0e-4, "2": 2.49e-4}}
    line = canary.slower_than_before(before, {"canary_s_by_threads": {"1": 4.01e-4, "2": 3.18e-4}})
    assert line is not None and line.startswith("the canary calibrated at 318 us on 2 threads, 1.28x the calibration "
                                                "it replaced (249 us)")
    assert canary.slower_than_before(before, {"canary_s_by_threads": {"1": 4.5e-4, "2": 2.2e-4}}) is None  # 1.125x
    assert canary.slower_than_before({}, {"canary_s_by_threads": {"2": 3.18e-4}}) is None  # the first calibration
    assert canary.slower_than_before(before, {"canary_s_by_threads": {"4": 9e-4}}) is None  # no count in common

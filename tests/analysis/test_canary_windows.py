"""What a calibration's canary windows say: their spread on each thread count, and whether the machine's speed
moved on several threads while one thread's held (benchctl.analysis.canary_windows)."""

import pytest

from benchctl.analysis import canary_windows

# the 2-core VM's calibration of 2026-12-05: one thread steady, two threads in two states
VM = {"threads": 2, "canary_windows_by_threads": {"1": [3.96e-4, 3.97e-4, 4.0e-4, 3.96e-4],
                                                  "2": [2.59e-4, 2.73e-4, 4.48e-4, 2.6e-4]}}


def test_the_spread_is_the_slowest_window_over_the_fastest_on_each_thread_count():
    assert canary_windows.spread(VM, 2) == pytest.approx(4.48 / 2.59)
    assert canary_windows.spread(VM, 1) == pytest.approx(4.0 / 3.96)
    assert canary_windows.spread(VM, 4) is None  # a count the calibration did not read
    assert canary_windows.spread({}, 2) is None


def test_a_calibration_from_before_each_count_was_kept_has_the_windows_of_the_threads_it_ran_at():
    old = {"threads": 2, "canary_windows_s": [3.1e-4, 2.48e-4, 3.2e-4, 2.6e-4]}
    assert canary_windows.windows(old, 2) == [3.1e-4, 2.48e-4, 3.2e-4, 2.6e-4]
    assert canary_windows.windows(old, 1) == []
    assert not canary_windows.only_threads_move(old, 2)  # one thread's spread is unknown: nothing said


def test_only_a_machine_whose_threads_moved_together_while_one_held_is_said_to_move_on_them():
    assert canary_windows.only_threads_move(VM, 2)
    assert not canary_windows.only_threads_move(VM, 1)  # one thread is the steady part, not a moving one
    both = {"canary_windows_by_threads": {**VM["canary_windows_by_threads"], "1": [3.96e-4, 4.8e-4]}}
    assert not canary_windows.only_threads_move(both, 2)  # one thread moved too (1.21x): the whole machine's speed
    steady = {"canary_windows_by_threads": {**VM["canary_windows_by_threads"], "2": [2.59e-4, 2.9e-4]}}
    assert not canary_windows.only_threads_move(steady, 2)  # two threads within 15% (1.12x)

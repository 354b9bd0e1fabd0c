"""The line that says which of a history's steps its code made: a step counts as the code's where the
implementation's digest differs on its two sides, as the machine's where it is the same."""

from __future__ import annotations

from dataclasses import replace

from benchctl.analysis import steps
from tests.analysis.test_sides import RUNS, run_row, series


def test_the_summary_counts_the_steps_the_code_made_by_verdict_and_the_others_apart():
    (made,) = steps.steps(series([run_row(i) for i in range(RUNS)]))  # the digest changes at the step
    (machine,) = steps.steps(series([{**run_row(i), "impl_code": "a" * 12} for i in range(RUNS)]))
    unknown = replace(machine, change=replace(machine.change, code_changed=None))
    assert made.change.code_changed and machine.code_unchanged and made.change.verdict == "slower"
    assert steps.summary([made, machine, machine]) == (
        "3 step(s): 1 where the cell's code changed (1 slower), 2 at commits that did not touch it")
    assert steps.summary([machine, unknown]) == (
        "2 step(s): 0 where the cell's code changed, 1 at commits that did not touch it, 1 where a side does not "
        "record its code")

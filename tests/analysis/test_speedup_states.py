"""Paired speedups that read apart at speed and in a slow phase (benchctl.analysis.speedup_states)."""

import sys
from pathlib import Path

import pandas as pd
import pytest

from benchctl.analysis.at_speed import with_earlier
from benchctl.analysis.run_notes import notes
from benchctl.analysis.speedup_states import states_apart, states_line

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_repeat import paired  # noqa: E402

# lstm_cell's cpp forward at B=256 over py on the 2-core VM: ~2.04x at speed, ~3.0x in a slow phase
AT_SPEED = [(2.05, 1.01), (2.02, 0.93), (2.07, 0.98)]
SLOW = [(3.0, 1.51), (3.1, 1.17)]


def earlier(readings: list[tuple[float, float]]) -> pd.DataFrame:
    return pd.concat([paired(f"r{i}", [s], canary_ratio=[c]) for i, (s, c) in enumerate(readings)])


def test_a_speedup_that_reads_apart_in_the_two_states_gives_slow_over_at_speed() -> None:
    rows = with_earlier(paired("r9", [2.89], canary_ratio=[1.2]), earlier(AT_SPEED + SLOW))
    assert states_apart(rows.iloc[0].to_dict()) == pytest.approx(3.0 / 2.05)  # medians (2.89, 3.0, 3.1) / (2.02 ...)
    at_speed = with_earlier(paired("r9", [2.04], canary_ratio=[0.99]), earlier(AT_SPEED + SLOW))
    assert states_apart(at_speed.iloc[0].to_dict()) == pytest.approx(3.05 / 2.045)  # still slow over at speed


@pytest.mark.parametrize("now, readings", [
    (2.03, [(2.05, 1.01), (2.02, 0.93), (2.5, 1.3), (3.1, 1.17)]),  # this slow run lies in the range at speed
    (2.15, [(2.05, 1.01), (2.02, 0.93), (2.2, 1.3), (2.25, 1.17)]),  # beyond the range at speed, but within 15%
])
def test_states_whose_runs_overlap_or_lie_within_fifteen_percent_do_not_read_apart(now, readings) -> None:
    rows = with_earlier(paired("r9", [now], canary_ratio=[1.2]), earlier(readings))
    assert states_apart(rows.iloc[0].to_dict()) == 1.0


def test_a_speedup_held_in_one_state_or_in_one_run_of_the_other_is_not_judged() -> None:
    rows = with_earlier(paired("r9", [2.0], canary_ratio=[0.99]), earlier(AT_SPEED))
    assert states_apart(rows.iloc[0].to_dict()) is None  # at speed, as every earlier run
    rows = with_earlier(paired("r9", [2.0], canary_ratio=[0.99]), earlier(AT_SPEED + SLOW[:1]))
    assert states_apart(rows.iloc[0].to_dict()) is None  # one slow run: too few to say what slow reads
    assert states_line(paired("r9", [2.0], canary_ratio=[0.99]), earlier(AT_SPEED)) is None


def test_the_line_counts_the_speedups_apart_and_names_the_furthest() -> None:
    now = paired("r9", [2.89, 1.5], canary_ratio=[1.2, 1.2])
    before = pd.concat([paired(f"r{i}", [s, 1.5], canary_ratio=[c, c]) for i, (s, c) in enumerate(AT_SPEED + SLOW)])
    assert states_line(now, before) == (
        "1 of 2 paired speedups that this run and earlier runs of the same code timed both in a slow phase and at speed "
        "read apart between the two states (every run in one state beyond every run in the other, their medians over "
        "15% apart); the furthest, silu/op fused forward at batch_size=8: 3.00x in a slow phase (this run's 2.89x and 2 "
        "earlier), 2.05x at speed (3 earlier runs). Such a speedup depends on the machine's state")
    assert states_line(with_earlier(now, before), None) == states_line(now, before)  # rows given them already


def test_run_notes_carry_the_line() -> None:
    lines = notes(paired("r9", [2.89], canary_ratio=[1.2]), [{"run_id": "r9"}], 2, earlier=earlier(AT_SPEED + SLOW))
    assert any(n.text.startswith("1 of 1 paired speedups that this run and earlier runs") for n in lines)

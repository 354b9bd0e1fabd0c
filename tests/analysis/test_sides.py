"""A history of a cell timed in alternation with its partner: with the partner's code the same throughout,
its steps are searched for in its time against the partner and judged by its pairs, so a machine that
slowed down at one commit makes no step and the code's own 25% at another is found and called slower."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from benchctl.analysis import history, sides, steps
from benchctl.analysis.pairs import block_interval, pair_ratios
from benchctl.measure.stats import summarize
from benchctl.vocab import Verdict

RUNS = 10
MACHINE_SLOWS_AT = 4  # the machine runs 1.4x slower from this run on (a slow phase): own times and the partner's
CODE_SLOWS_AT = 7  # cpp takes 1.25x longer against py from this run on (its code changed)
PAIRS = 120


def run_row(i: int, partner_code: str = "p" * 12) -> dict:
    rng = np.random.default_rng(i)
    machine = 1.4 if i >= MACHINE_SLOWS_AT else 1.0
    drift = machine * rng.lognormal(0, 0.02, PAIRS).cumprod() ** 0.1  # slow drift within the run, shared
    own = 1e-3 * (1.25 if i >= CODE_SLOWS_AT else 1.0) * drift * rng.lognormal(0, 0.02, PAIRS)
    partner = 2e-3 * drift * rng.lognormal(0, 0.02, PAIRS)
    ratios, clean = pair_ratios(list(own), list(partner))
    low, high = block_interval(ratios[clean])
    return {"op": "hoconv2d", "target": "module", "impl": "cpp", "device": "cpu", "dtype": "float32",
            "params": json.dumps({"batch_size": 8}), "pass": "forward", "status": "ok", "host": "box",
            "threads": 2, **summarize(list(own)), "samples_s": list(own), "stop": "converged", "noisy": False,
            "processes": None, "paired_with": "py", "partner_samples_s": list(partner), "partner_code": partner_code,
            "paired_speedup": float(np.median(ratios)), "paired_ci_lo": low, "paired_ci_hi": high,
            "impl_code": "a" * 12 if i < CODE_SLOWS_AT else "b" * 12}


def series(rows: list[dict]) -> history.Series:
    points = [history.Point(f"run{i}", f"{i + 1:08x}" + "0" * 32, False, f"2026-01-{i + 1:02d}", r["median_s"],
                            r["ci_lo_s"], r["ci_hi_s"], pd.Series(r)) for i, r in enumerate(rows)]
    return history.Series(("hoconv2d", "module", "cpp", "cpu", "float32", "{}", "forward"), "cpu", tuple(points))


def test_steps_in_the_time_against_an_unchanged_partner_are_the_codes_not_the_machines():
    s = series([run_row(i) for i in range(RUNS)])
    assert sides.partner([p.row for p in s.points]) == "py"
    assert steps.change_points(s.points) == [CODE_SLOWS_AT]
    (step,) = steps.steps(s)
    c = step.change
    assert (c.verdict, c.by_pairs, c.partner, c.code_changed) == (Verdict.SLOWER, True, "py", True)
    assert c.relative == pytest.approx(1.25, rel=0.03) and 1.15 < c.relative_low <= c.relative_high < 1.35


def test_a_step_where_a_slow_phase_of_the_machine_starts_is_not_judged_by_the_pairs():
    """The same runs, the canary reading a slow phase from the code's step on: the step is where the search
    would also put a phase's flip, which moved a pass's time against its partner by up to 42% in nine main-job
    runs of unchanged code (benchmarks/README.md, "Which passes the slow state moves"), so it stays unsure."""
    s = series([{**run_row(i), "canary_ratio": 1.4 if i >= CODE_SLOWS_AT else 1.0} for i in range(RUNS)])
    (step,) = steps.steps(s)
    c = step.change
    assert (c.verdict, c.by_pairs, c.phases_apart) == (Verdict.UNSURE, False, True)
    assert c.relative == pytest.approx(1.25, rel=0.03)  # shown, not judged


def test_own_times_see_the_machine_step_too():
    """The same runs with the partner's code unknown: their own medians, which the machine moved 1.4x."""
    s = series([{**run_row(i), "partner_code": None} for i in range(RUNS)])
    assert sides.partner([p.row for p in s.points]) is None
    assert MACHINE_SLOWS_AT in steps.change_points(s.points)


def test_a_partner_whose_code_changed_within_the_history_leaves_the_own_times():
    rows = [run_row(i, "p" * 12 if i < 3 else "q" * 12) for i in range(RUNS)]
    s = series(rows)
    assert sides.partner([p.row for p in s.points]) is None
    assert np.allclose(sides.levels(s.points)[:, 0], [r["median_s"] for r in rows])


def test_a_pooled_side_keeps_each_runs_pairs_in_turn_and_each_run_as_a_process():
    rows = [run_row(i) for i in (7, 8, 9)]
    pooled = sides.pooled(series(rows).points)
    assert pooled["samples_s"] == [s for r in rows for s in r["samples_s"]]
    assert pooled["partner_samples_s"] == [s for r in rows for s in r["partner_samples_s"]]
    assert pooled["process_paired_speedups"] == [r["paired_speedup"] for r in rows]
    assert pooled["paired_speedup"] == pytest.approx(2 / 1.25, rel=0.02) and pooled["partner_code"] == "p" * 12
    assert pooled["paired_ci_lo"] <= pooled["paired_speedup"] <= pooled["paired_ci_hi"]


def test_pooling_keeps_each_runs_set_aside_samples_aside():
    a, b = run_row(0), run_row(1)
    a["disturbed"] = [True] + [False] * (PAIRS - 1)
    b["disturbed"] = [True] * PAIRS  # all set aside: as clean_samples does, all of them count
    pooled = sides.pooled(series([a, b]).points)
    assert pooled["disturbed"] == [True] + [False] * (2 * PAIRS - 1)
    assert pooled["median_s"] == pytest.approx(float(np.median(a["samples_s"][1:] + b["samples_s"])))


def test_pooling_leaves_each_runs_probes_out_of_the_median_and_the_pairs():
    a, b = run_row(0), run_row(1)
    a["probe"] = [i < 20 for i in range(PAIRS)]  # the audit's calls, read 3x slow: caches left cold
    a["samples_s"] = [s * 3 if i < 20 else s for i, s in enumerate(a["samples_s"])]
    pooled = sides.pooled(series([a, b]).points)
    assert pooled["probe"] == a["probe"] + [False] * PAIRS
    assert pooled["median_s"] == pytest.approx(float(np.median(a["samples_s"][20:] + b["samples_s"])))
    ratios, _ = pair_ratios(a["samples_s"] + b["samples_s"], a["partner_samples_s"] + b["partner_samples_s"])
    assert pooled["paired_speedup"] == pytest.approx(float(np.median(ratios[20:])))  # the probes' pairs left out
    assert pooled["paired_speedup"] > float(np.median(ratios)) * 1.001


def test_a_run_stopped_disturbed_is_left_out_of_the_search():
    """A busy neighbour held one run 350x slower with an interval of +-0.01% and no clean pairs. Read as a
    level it makes steps of its own (and takes the pairs from the whole series; in a real history of five
    runs its scatter hid every step); left out, the code's step is found, by the pairs."""
    rows = [run_row(i) for i in range(RUNS)]
    held = rows[2]
    held.update(stop="disturbed", median_s=held["median_s"] * 350, ci_lo_s=held["median_s"] * 349.97,
                ci_hi_s=held["median_s"] * 350.03, paired_speedup=None, paired_ci_lo=None, paired_ci_hi=None)
    s = series(rows)
    assert steps.searched(s.points) == [i for i in range(RUNS) if i != 2]
    assert steps.change_points(s.points) == [CODE_SLOWS_AT]
    (step,) = steps.steps(s)
    assert (step.change.verdict, step.change.by_pairs) == (Verdict.SLOWER, True)
    assert {2, 3} <= set(steps._change_points(s.points))  # read as a level: a step into it and out of it


def test_a_run_timed_beside_other_work_is_left_out_of_the_search():
    rows = [run_row(i) for i in range(RUNS)]
    rows[1]["other_cores"], rows[4]["other_cores"] = 1.0, 0.1  # a neighbour through the second run, a shell the fifth
    assert steps.searched(series(rows).points) == [i for i in range(RUNS) if i != 1]


def test_a_side_of_noisy_runs_and_a_disturbed_one_pools_the_noisy_ones():
    """Noisy runs (own times wider than +-1%, as on a VM in a slow phase) still hold their pairs; a run stopped
    disturbed holds none: pooled with them, it would cost the side its pairs."""
    rows = [{**run_row(i), "noisy": True} for i in range(3)]
    rows[1].update(stop="disturbed", paired_ci_lo=None, paired_ci_hi=None)
    pooled = sides.pooled(series(rows).points)
    assert pooled["paired_with"] == "py" and pooled["processes"] == 2
    assert pooled["samples_s"] == rows[0]["samples_s"] + rows[2]["samples_s"]

"""History across commits from runs on disk: series in git order, the step found at the commit that made
it and judged slower, the noisy run making none, machine kinds kept apart."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from benchctl.analysis import history, sides, steps

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from history_runs import COMMITS, NOISY_AT, STEP_AT  # noqa: E402 (the `written` fixture: conftest.py)


def test_one_series_per_cell_in_git_order(written):
    root, shas = written
    found = history.series(history.load(root=root))
    assert len(found) == 1
    s = found[0]
    assert s.git_ordered and [p.sha for p in s.points] == shas
    assert s.machine == "Xeon Gold" and s.cell["impl"] == "py" and len(s.points) == COMMITS


def test_the_step_is_found_at_its_commit_and_the_noisy_run_makes_none(written):
    root, shas = written
    (s,) = history.series(history.load(root=root))
    assert steps.change_points(s.points) == [STEP_AT]
    (step,) = steps.steps(s)
    assert (step.before.sha, step.after.sha) == (shas[STEP_AT - 1], shas[STEP_AT])
    assert step.change.verdict == "slower"
    assert step.change.ratio_low > 1.8 and step.change.ratio_high < 2.2  # the planted factor, 2


def test_the_noisy_run_alone_would_be_a_step_without_its_interval(written):
    root, _ = written
    (s,) = history.series(history.load(root=root))
    assert s.points[NOISY_AT].row["noisy"]
    narrowed = [history.Point(p.run_id, p.sha, p.dirty, p.time, p.median_s, p.median_s, p.median_s, p.row)
                for p in s.points]
    assert NOISY_AT in steps.change_points(narrowed)


def test_commit_order_falls_back_to_dates_without_the_repository(written, tmp_path):
    root, shas = written
    rows = history.load(root=root).assign(code_repo=str(tmp_path / "gone"))
    (s,) = history.series(rows)
    assert not s.git_ordered and [p.sha for p in s.points] == shas


def test_machine_kinds_are_separate_series_and_filters_apply(written):
    root, _ = written
    rows = history.load(root=root)
    other = rows.assign(cpu_name="EPYC", run_id=rows["run_id"] + "-b")
    both = history.series(history.select(storage_concat(rows, other), op=["silu"], device=["cpu"]))
    assert sorted(s.machine for s in both) == ["EPYC", "Xeon Gold"]
    assert history.select(rows, impl=["cpp"]).empty


def test_a_filter_that_matches_nothing_is_named_with_what_it_could_match(written):
    root, _ = written
    rows = history.load(root=root)
    assert history.unmatched(rows, op=["silu"], impl=["py"]) == ""
    assert history.unmatched(rows, op=["gelu"]) == "no timed cell has --op 'gelu' (it could match silu)"
    assert history.unmatched(rows, op=["silu"], pass_name=["backward", "nope"]) == (
        "no timed cell has --pass 'backward,nope' (it could match forward)")
    assert history.unmatched(rows.assign(status="error")) == "these runs hold no timed cells"


def test_a_cpu_cell_given_other_counts_of_torchs_threads_is_a_series_per_count(written):
    """On 1 thread a call reads about twice as long as on 2: a step no commit made. A cell given one count
    throughout keeps its plain name."""
    root, _ = written
    rows = history.load(root=root).assign(threads=2)
    one = rows.assign(threads=1, run_id=rows["run_id"] + "-1", median_s=rows["median_s"] * 2)
    assert [s.machine for s in history.series(rows)] == ["Xeon Gold"]
    found = history.series(storage_concat(rows, one))
    assert sorted(s.machine for s in found) == ["Xeon Gold (1 thread)", "Xeon Gold (2 threads)"]
    assert all(len(s.points) == COMMITS for s in found)


def test_each_way_of_timing_is_a_series_of_its_own(written):
    """CUDA-graph replays leave out the host's issue time (8x on an H100 for hoconv2d's cuda forward at B=4):
    a history mixing them with eager rows would show a step no commit made."""
    root, _ = written
    rows = history.load(root=root).assign(device="cuda", gpu_name="H100", timing_mode="eager", flush_l2=False)
    graph = rows.assign(timing_mode="cuda_graph", run_id=rows["run_id"] + "-g", median_s=rows["median_s"] / 8)
    flushed = rows.assign(flush_l2=True, run_id=rows["run_id"] + "-f")
    found = history.series(storage_concat(rows, graph, flushed))
    assert sorted(s.machine for s in found) == ["H100", "H100 (cuda_graph)", "H100 (eager, L2 flushed)"]
    assert all(len(s.points) == COMMITS for s in found)


def test_a_run_that_measured_a_cell_twice_gives_the_row_it_wrote_last(written):
    root, _ = written
    rows = history.load(root=root)
    (before,) = history.series(rows)
    run, median = before.points[STEP_AT].run_id, before.points[STEP_AT].median_s
    again = rows[rows["run_id"] == run].assign(median_s=3 * median)  # written after the first
    (s,) = history.series(storage_concat(rows, again))
    assert len(s.points) == COMMITS and s.points[STEP_AT].median_s == pytest.approx(3 * median)


def test_commit_messages_come_from_the_repository(written):
    root, shas = written
    said = history.messages(history.series(history.load(root=root)))
    assert said[shas[STEP_AT]].subject == f"change {STEP_AT}"


def storage_concat(*frames):
    import pandas as pd

    return pd.concat(frames, ignore_index=True)


def test_runs_pooled_for_a_step_keep_no_pairs_with_a_partner_whose_code_is_unknown():
    """Without the partner's code digest, the runs may have been paired with different code: compare must
    not read their pairs (tests/analysis/test_sides.py: with it, they are kept)."""
    import pandas as pd

    paired = {"samples_s": [1.0, 1.1], "partner_samples_s": [2.0, 2.2], "paired_with": "py", "paired_speedup": 2.0,
              "median_s": 1.05}
    points = [history.Point(f"r{i}", None, False, "", 1.05, 1.0, 1.1, pd.Series(paired)) for i in range(2)]
    row = sides.pooled(points)
    assert row["samples_s"] == [1.0, 1.1, 1.0, 1.1] and row["processes"] == 2
    assert row["paired_with"] is None and row["partner_samples_s"] is None and row["paired_speedup"] is None


def test_a_series_latest_code_is_its_runs_with_the_last_run_s_digest():
    from benchctl.analysis.history import Point, Series

    def point(i, code):
        return Point(f"r{i}", None, False, f"2026-01-0{i + 1}", 1e-3 * (i + 1), 0, 0, pd.Series({"impl_code": code}))

    s = Series(("silu",), "EPYC", (point(0, "a"), point(1, "b"), point(2, "a"), point(3, "a")))
    assert [p.run_id for p in s.latest_code()] == ["r0", "r2", "r3"]  # r1 ran other code
    unknown = Series(("silu",), "EPYC", (point(0, "a"), point(1, None)))
    assert [p.run_id for p in unknown.latest_code()] == ["r1"]  # no digest: the last run alone


def test_series_come_in_the_order_people_read_them(written):
    """Params by value (batch_size 16, 64, 256: as text 256 came before 64), CPU before CUDA, forward first; an unset
    param left out of the name."""
    import json

    root, _ = written
    rows = history.load(root=root)
    params = json.loads(rows["params"].iloc[0])
    sized = [rows.assign(params=json.dumps({**params, "batch_size": n, "I": None}), **{"pass": p, "device": d},
                         run_id=rows["run_id"] + f"-{n}{p}{d}")
             for n in (256, 16, 64) for p in ("backward", "forward") for d in ("cuda", "cpu")]
    found = [(s.cell["device"], json.loads(s.cell["params"])["batch_size"], s.cell["pass"])
             for s in history.series(storage_concat(*sized))]
    assert found == [(d, n, p) for d in ("cpu", "cuda") for n in (16, 64, 256) for p in ("forward", "backward")]
    assert "I=" not in history.series(sized[0])[0].name()

"""Drawing a batch of figures: in this process for a small batch, in worker processes for a large one, each job's
files where its stem says and in the jobs' order either way."""

from __future__ import annotations

import pytest

from benchctl.report import charts, machine_chart, page
from benchctl.report.drawing import MIN_JOBS, Drawer, Job
from tests.report.test_page import row, write_run


def jobs(tmp_path, count: int) -> list[Job]:
    """`count` time charts of one operator, each from a batch size more, and one figure with nothing to draw."""
    rows = [row(i, "cpu", "forward", b) for i in ("py", "cpp") for b in range(8, 9 + count)]
    loaded = page.load_results([write_run(tmp_path, "20240101-000000-dddddd", rows)]).rows
    drawn = [Job(charts.timing_figure, (loaded[loaded["batch_size"] <= 8 + n], f"chart {n}"), tmp_path / f"c{n}")
             for n in range(count)]
    return drawn + [Job(machine_chart.bandwidth_figure, (loaded,), tmp_path / "m")]


@pytest.mark.parametrize("processes", [0, 2])
def test_a_batch_draws_every_figure_in_the_jobs_order(tmp_path, processes):
    told: list[tuple[int, int]] = []
    batch = jobs(tmp_path, MIN_JOBS)
    with Drawer(processes) as drawer:
        paths = drawer.draw(batch, lambda done, total: told.append((done, total)))
        assert (drawer._pool is not None) is (processes == 2)  # a large batch goes to the workers
    assert paths[:-1] == [[tmp_path / f"c{n}.png", tmp_path / f"c{n}.svg"] for n in range(MIN_JOBS)]
    assert paths[-1] == []  # no bandwidth probes: nothing to draw, no file
    assert all(p.stat().st_size > 1000 for some in paths for p in some)
    assert told == [(done, MIN_JOBS + 1) for done in range(MIN_JOBS + 2)]  # before the first, then as each is saved
    assert not (tmp_path / "m.png").exists()


def test_a_small_batch_draws_here_without_starting_workers(tmp_path):
    with Drawer(2) as drawer:
        paths = drawer.draw(jobs(tmp_path, 2))
        assert drawer._pool is None
    assert [len(p) for p in paths] == [2, 2, 0]

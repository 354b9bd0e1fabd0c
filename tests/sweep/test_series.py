"""Series: grouping cells along the swept axis, and a build that fails on the node that runs a series."""

from __future__ import annotations

import pytest

from benchctl.measure.execute import Settings
from benchctl.ops import registry
from benchctl.ops.build import BuildError
from benchctl.ops.cells import Cell
from benchctl.ops.registry import Case, Operator, Target, randn
from benchctl.sweep.series import SeriesJob, group, run_series
from benchctl.sweep.worker_spec import WorkerSpec


@pytest.fixture(scope="module")
def toy() -> Operator:
    def inputs(case: Case):
        return {"x": randn(case, case.generator(), case.params["batch_size"], 3)}

    def broken(device: str) -> float:
        raise BuildError("building series_toy failed (1 error lines)", "x.cpp:1: error: nope", None)

    op = Operator("series_toy", "d", {"batch_size": 2, "width": 3}, (Target("op", inputs),))
    op.implementation("ext", devices=("cpu",), build=broken)(lambda x: x * 2)
    op.implementation("py")(lambda x: x * 2)
    return registry.register(op)


def cell(impl: str, batch: int, width: int = 3) -> Cell:
    return Cell.make("series_toy", "op", impl, "cpu", "float32", {"batch_size": batch, "width": width})


def test_cells_group_into_series_ascending_along_the_axis(toy):
    series = group([cell("py", 8), cell("ext", 2), cell("py", 2), cell("py", 4, width=5), cell("py", 4)])
    assert [[(c.impl, c.params["batch_size"], c.params["width"]) for c in s] for s in series] == [
        [("py", 2, 3), ("py", 4, 3), ("py", 8, 3)], [("ext", 2, 3)], [("py", 4, 5)]]


def test_with_rounds_a_job_holds_every_implementation_of_its_points_and_their_rounds_alternate(toy):
    from benchctl.measure.result import PassResult
    from benchctl.sweep.driver import Sweep
    from benchctl.sweep.series import Collected

    cells = [cell("py", 2), cell("py", 4), cell("ext", 2), cell("ext", 4), cell("py", 4, width=5)]
    jobs = group(cells, by_point=True)
    assert [[(c.impl, c.params["batch_size"]) for c in job] for job in jobs] == [
        [("py", 2), ("ext", 2), ("py", 4), ("ext", 4)], [("py", 4)]]

    class Recording:  # what a node's worker is asked, in order
        def __init__(self):
            self.asked = []

        def run(self, c):
            self.asked.append((c.impl, c.params["batch_size"]))
            return [PassResult(impl=c.impl, pass_=p, status="ok", median_s=1.0, samples_s=[1.0]) for p in c.passes]

    worker = Recording()
    Sweep(jobs[0], worker, Collected(), {}, rounds=2).run()
    one_round = [("py", 2), ("ext", 2), ("py", 4), ("ext", 4)]
    assert worker.asked == one_round * 2  # the two implementations' rounds alternate, point by point


def test_a_build_that_fails_on_the_node_gives_unavailable_rows_naming_it(toy):
    rows = run_series(SeriesJob((cell("ext", 2), cell("ext", 4)), WorkerSpec(Settings()), node_id="node-7"))
    assert [r["status"] for r in rows] == ["unavailable"] * 6  # two cells, three passes
    assert all("building series_toy failed" in r["message"] and "(on node node-7)" in r["message"] for r in rows)
    assert {r["node_id"] for r in rows} == {"node-7"}

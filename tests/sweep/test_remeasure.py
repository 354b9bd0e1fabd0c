"""A noisy cell is measured again at the end of the sweep and keeps its flag only if it never settles
(a scripted executor stands in for the worker)."""

import pytest

from benchctl.measure.result import PassResult
from benchctl.ops.cells import Cell
from benchctl.results import storage
from benchctl.sweep.driver import Sweep
from benchctl.sweep.series import Collected  # the in-memory writer of series jobs


class Scripted:
    """Answers each cell with the next of its scripted measurements: (noisy, CI half-width)."""

    def __init__(self, script: dict[int, list[tuple[bool, float]]]):
        self.script = {b: list(m) for b, m in script.items()}
        self.calls: list[int] = []

    def run(self, cell: Cell) -> list[PassResult]:
        batch = cell.params["batch_size"]
        self.calls.append(batch)
        noisy, half = self.script[batch].pop(0)
        return [PassResult(op=cell.op, impl=cell.impl, batch_size=batch, pass_="forward", status="ok",
                           median_s=1.0, ci_lo_s=1.0 - half, ci_hi_s=1.0 + half, noisy=noisy,
                           message="noisy: ..." if noisy else "")]




def sweep(script, remeasure=2, rounds=1):
    cells = [Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": b}) for b in script]
    executor, out = Scripted(script), Collected()
    Sweep(cells, executor, out, {"host": "h"}, remeasure=remeasure, rounds=rounds).run()
    return executor.calls, {r["batch_size"]: r for r in out.rows}


def test_a_noisy_cell_that_settles_later_is_kept_clean(builtin_ops):
    calls, rows = sweep({1: [(False, 0.005)], 2: [(True, 0.08), (False, 0.006)]})
    assert calls == [1, 2, 2]  # measured again after the whole sweep, not at once
    assert rows[2]["noisy"] is False and rows[2]["remeasured"] == 1 and rows[1].get("remeasured") is None
    assert rows[2]["rounds"] == rows[1]["rounds"] == 1


def test_a_cell_that_never_settles_keeps_its_best_measurement_and_says_so(builtin_ops):
    calls, rows = sweep({4: [(True, 0.08), (True, 0.03), (True, 0.05)]})
    assert calls == [4, 4, 4]
    assert rows[4]["noisy"] and rows[4]["ci_hi_s"] == 1.03 and rows[4]["remeasured"] == 2
    assert rows[4]["message"].endswith("measured again 2 time(s) late in the sweep, never settled")


def test_no_remeasure_writes_the_noisy_cell_as_it_came(builtin_ops):
    calls, rows = sweep({4: [(True, 0.08)]}, remeasure=0)
    assert calls == [4] and rows[4]["noisy"] and "remeasured" not in rows[4]


class PerPass:
    """Forward settles at once; backward is noisy the first time it is measured, settled after."""

    def __init__(self):
        self.asked: list[tuple[str, ...]] = []

    def run(self, cell: Cell) -> list[PassResult]:
        self.asked.append(cell.passes)
        again = len(self.asked) > 1
        median = 2.0 if again else 1.0
        return [PassResult(op=cell.op, impl=cell.impl, batch_size=1, pass_=p, status="ok", median_s=median,
                           ci_lo_s=median * 0.99, ci_hi_s=median * (1.01 if p == "forward" or again else 1.2),
                           noisy=p == "backward" and not again) for p in cell.passes]


def test_only_the_passes_that_did_not_settle_are_measured_again(builtin_ops):
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": 1}, passes=("forward", "backward"))
    executor, out = PerPass(), Collected()
    Sweep([cell], executor, out, {"host": "h"}, remeasure=2).run()
    assert executor.asked == [("forward", "backward"), ("backward",)]
    rows = {r["pass"]: r for r in out.rows}
    assert rows["forward"]["median_s"] == 1.0 and rows["forward"]["remeasured"] == 0  # the first measurement
    # ... with the time it was measured, before the backward's second measurement, though written with it
    assert rows["forward"]["timestamp"] < rows["backward"]["timestamp"]
    assert rows["backward"]["median_s"] == 2.0 and rows["backward"]["remeasured"] == 1
    assert not rows["backward"]["noisy"] and len(out.rows) == 2


class Gated(PerPass):
    """PerPass whose first measurement carries the gate's findings, as a worker's rows do."""

    def __init__(self):
        super().__init__()
        self.checked: list[bool] = []

    def run(self, cell: Cell) -> list[PassResult]:
        self.checked.append(cell.checked)
        gate = {} if cell.checked else {"correct": True, "max_abs_err": 3e-7, "tolerance": 1e-5}
        return [result.with_(**gate) for result in super().run(cell)]


def test_a_remeasure_skips_the_gate_and_keeps_its_findings(builtin_ops):
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": 1}, passes=("forward", "backward"))
    executor, out = Gated(), Collected()
    Sweep([cell], executor, out, {"host": "h"}, remeasure=1).run()
    assert executor.checked == [False, True]
    backward = next(r for r in out.rows if r["pass"] == "backward")
    assert backward["median_s"] == 2.0 and backward["correct"] is True and backward["max_abs_err"] == 3e-7


def test_a_noisy_cell_is_on_disk_before_it_is_measured_again_and_replaced_after(builtin_ops, tmp_path):
    writer = storage.RunWriter(tmp_path, "run", {})
    on_disk = []

    class Watching(Scripted):
        def run(self, cell):
            on_disk.append(len(storage.load(root=tmp_path)))  # what a kill -9 now would leave
            return super().run(cell)

    executor = Watching({2: [(True, 0.08), (False, 0.006)]})
    cells = [Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": 2})]
    Sweep(cells, executor, writer, {"host": "h"}, remeasure=1).run()
    assert on_disk == [0, 1]  # the first measurement was written before the re-measure began
    assert writer.parts == 1 and [p.name for p in (tmp_path / "run").glob("part-*")] == ["part-00002.parquet"]
    (row,) = storage.load(root=tmp_path).to_dict("records")
    assert row["noisy"] == False and row["remeasured"] == 1 and row["ci_hi_s"] == 1.006  # noqa: E712


class Stops:
    """Answers each cell with the next scripted (stop, canary_ratio, process[, other_cores]) of its one pass; a
    settled median, its samples all set aside where it stopped disturbed."""

    def __init__(self, script):
        self.script = {b: list(m) for b, m in script.items()}
        self.calls: list[int] = []

    def run(self, cell: Cell) -> list[PassResult]:
        batch = cell.params["batch_size"]
        self.calls.append(batch)
        stop, canary, process, *busy = self.script[batch].pop(0)
        return [PassResult(op=cell.op, impl=cell.impl, batch_size=batch, pass_="forward", status="ok",
                           median_s=1.0, ci_lo_s=0.995, ci_hi_s=1.005, noisy=False, stop=stop,
                           samples_s=[1.0] * 12, disturbed=[stop == "disturbed"] * 12, canary_ratio=canary,
                           process=process, other_cores=(busy or [None])[0], message="")]


def test_disturbed_and_slow_machine_cells_are_measured_again_and_the_clean_measurement_kept(builtin_ops):
    script = {1: [("converged", 1.0, 0)],
              2: [("disturbed", 1.0, 0), ("converged", 1.0, 0)],
              4: [("converged", 1.3, 0), ("converged", 1.01, 0)]}
    cells = [Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": b}) for b in script]
    executor, out = Stops(script), Collected()
    Sweep(cells, executor, out, {"host": "h"}, remeasure=1).run()
    rows = {r["batch_size"]: r for r in out.rows}
    assert executor.calls == [1, 2, 4, 2, 4]
    assert rows[2]["stop"] == "converged" and rows[2]["remeasured"] == 1
    assert rows[4]["canary_ratio"] == 1.01 and rows[4]["remeasured"] == 1 and "remeasured" not in rows[1]


def test_a_cell_timed_beside_other_work_waits_for_quiet_and_keeps_the_quiet_measurement(builtin_ops):
    """Its threads never waited and its canary read at speed, but another process kept a core busy meanwhile."""
    script = {1: [("converged", 1.0, 0, 0.1)], 2: [("converged", 1.0, 0, 1.0), ("converged", 1.0, 0, 0.05)],
              4: [("converged", 1.0, 0, 1.1), ("converged", 1.0, 0, 0.9)]}
    cells = [Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": b}) for b in script]
    executor, out, settled = Stops(script), Collected(), []
    Sweep(cells, executor, out, {"host": "h"}, remeasure=1, settle=lambda: settled.append(len(executor.calls))).run()
    rows = {r["batch_size"]: r for r in out.rows}
    assert executor.calls == [1, 2, 4, 2, 4] and settled == [3, 4]  # a wait before each re-measurement
    assert rows[2]["other_cores"] == 0.05 and rows[2]["remeasured"] == 1
    assert rows[4]["other_cores"] == 1.1 and rows[4]["message"].endswith("measured again 1 time(s) late in the "
                                                                        "sweep, never settled")


def test_with_processes_a_re_measurement_asks_every_process_and_keeps_their_medians(builtin_ops):
    script = {2: [("converged", 1.3, 0), ("converged", 1.3, 1), ("converged", 1.0, 2),  # a slow machine
                  ("converged", 1.0, 0), ("converged", 1.0, 1), ("converged", 1.0, 2)]}
    cells = [Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": 2})]
    executor, out = Stops(script), Collected()
    Sweep(cells, executor, out, {"host": "h"}, remeasure=1, rounds=3, processes=3).run()
    (row,) = out.rows
    assert executor.calls == [2] * 6  # three rounds, then the re-measurement in each of three processes
    assert row["remeasured"] == 1 and row["processes"] == 3 and row["process_medians_s"] == [1.0, 1.0, 1.0]
    assert "process" not in row


def test_a_remeasure_keeps_what_the_first_call_compiled(builtin_ops):
    class Compiling(Scripted):
        """The first measurement recompiled (a new size); the second found the code compiled."""

        def run(self, cell):
            first = not self.calls
            rows = super().run(cell)
            return [r.with_(compile_s=4.0 if first else 0.01, recompiles=1 if first else 0, recompiles_total=3)
                    for r in rows]

    cells = [Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": 2})]
    executor, out = Compiling({2: [(True, 0.08), (False, 0.006)]}), Collected()
    Sweep(cells, executor, out, {"host": "h"}, remeasure=1).run()
    row = out.rows[-1]
    assert row["remeasured"] == 1 and row["ci_hi_s"] == 1.006  # the settled re-measurement's times ...
    assert (row["compile_s"], row["recompiles"]) == (4.0, 1)  # ... and the first call's compilation


class Phased:
    """Each call answers the next scripted median of one pass, from worker process (call number) % 3."""

    def __init__(self, medians, canaries=None):
        self.medians = list(medians)
        self.canaries = list(canaries or [2.5e-4] * len(self.medians))  # the canary read around each call
        self.calls = 0

    def run(self, cell: Cell) -> list[PassResult]:
        median, canary, process = self.medians.pop(0), self.canaries.pop(0), self.calls % 3
        self.calls += 1
        return [PassResult(op=cell.op, impl=cell.impl, batch_size=1, pass_="forward", status="ok",
                           median_s=median, samples_s=[median] * 12, disturbed=[False] * 12, stop="converged",
                           process=process, noisy=False, message="", canary_s=canary)]


def test_rounds_in_two_modes_are_measured_again_and_a_slow_phases_round_set_aside(builtin_ops):
    """A slow phase of the machine took process 1's turn (1.6x, its canary 1.44x); its next turn ran at full
    speed."""
    cells = [Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": 1})]
    canaries = [2.5e-4, 3.6e-4] + [2.5e-4] * 4
    executor, out = Phased([0.316, 0.499, 0.315, 0.32, 0.318, 0.317], canaries), Collected()
    Sweep(cells, executor, out, {"host": "h"}, remeasure=1, rounds=3, processes=3).run()
    (row,) = out.rows
    assert executor.calls == 6 and row["remeasured"] == 1 and row["rounds"] == 6 and row["n"] == 60
    assert row["process_medians_s"] == pytest.approx([0.318, 0.318, 0.316]) and row.get("mode_slow_s") is None
    assert row["median_s"] == pytest.approx(0.317) and "round(s) 2 set aside" in row["message"]


def test_rounds_that_agree_are_not_measured_again(builtin_ops):
    cells = [Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": 1})]
    executor, out = Phased([0.316, 0.318, 0.315]), Collected()
    Sweep(cells, executor, out, {"host": "h"}, remeasure=1, rounds=3, processes=3).run()
    (row,) = out.rows
    assert executor.calls == 3 and "remeasured" not in row and row.get("mode_slow_s") is None


def test_a_cell_measured_on_a_slow_machine_waits_for_it_before_it_is_measured_again(builtin_ops):
    script = {2: [("disturbed", 1.0, 0), ("converged", 1.0, 0)],
              4: [("converged", 1.4, 0), ("converged", 1.02, 0)]}
    cells = [Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": b}) for b in script]
    executor, out, settled = Stops(script), Collected(), []

    def settle() -> None:
        settled.append(list(executor.calls))  # what had been measured when the sweep waited

    Sweep(cells, executor, out, {"host": "h"}, remeasure=1, settle=settle).run()
    assert settled == [[2, 4, 2]]  # once, for batch 4 (its canary read 1.4x), not for the disturbed batch 2
    assert {r["batch_size"]: r["canary_ratio"] for r in out.rows}[4] == 1.02

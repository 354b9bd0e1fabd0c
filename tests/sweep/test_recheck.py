"""Times too good to keep unexamined are measured once more, strictly, and the re-check decides the row
(a scripted executor stands in for the worker)."""

from benchctl.measure.result import PassResult
from benchctl.ops.cells import Cell
from benchctl.results import storage
from benchctl.sweep import recheck
from benchctl.sweep.driver import Sweep
from benchctl.sweep.series import Collected


class Scripted:
    """Answers each implementation with its scripted rows: first measurement, then the re-check's."""

    def __init__(self, script: dict[str, list[tuple[str, float, str]]]):
        self.script = {impl: list(m) for impl, m in script.items()}
        self.asked: list[Cell] = []

    def run(self, cell: Cell) -> list[PassResult]:
        self.asked.append(cell)
        status, median, message, *more = self.script[cell.impl].pop(0)  # a fourth: how sampling stopped, or columns
        columns = more[0] if more and isinstance(more[0], dict) else {"stop": (more or [None])[0]}
        return [PassResult(op=cell.op, impl=cell.impl, batch_size=1, pass_=p, status=status, median_s=median,
                           ci_lo_s=median, ci_hi_s=median, noisy=False, message=message, **columns)
                for p in cell.passes]


def sweep(script):
    cells = [Cell.make("hoconv2d", "filter", impl, "cpu", "float32", {"batch_size": 1}, passes=("forward",))
             for impl in script]
    executor, out = Scripted(script), Collected()
    Sweep(cells, executor, out, {"host": "h"}).run()
    return executor.asked, {r["impl"]: r for r in out.rows}


def test_a_125x_speedup_that_holds_is_kept_ok_and_says_it_was_rechecked(builtin_ops):
    asked, rows = sweep({"py": [("ok", 0.125, "")], "cpp": [("ok", 0.001, ""), ("ok", 0.001, "")]})
    again = asked[-1]
    assert [c.impl for c in asked] == ["py", "cpp", "cpp"] and again.strict and not again.checked
    assert rows["cpp"]["status"] == "ok" and rows["cpp"]["rechecked"] is True
    assert rows["cpp"]["message"] == "re-checked on fresh inputs: 125x the reference holds"
    assert "rechecked" not in rows["py"]


def test_a_speedup_whose_recheck_fails_takes_the_rechecks_row(builtin_ops):
    _, rows = sweep({"py": [("ok", 0.1, "")], "cpp": [("ok", 0.0001, ""), ("incorrect", None, "timed call 3 of 9: ...")]})
    assert rows["cpp"]["status"] == "incorrect" and rows["cpp"]["rechecked"] is True
    assert rows["cpp"]["message"] == "re-checked on fresh inputs: timed call 3 of 9: ..."


ON_TIME = ("its 6 timed calls on data never given to it before took 3.1-4.0x as long as the median of its calls on "
           "data it had been given (a result kept from an earlier call: work skipped when timed)")


def test_a_speedup_the_recheck_reads_under_the_limit_takes_the_rechecks_row(builtin_ops):
    _, rows = sweep({"py": [("ok", 0.1, "")], "cpp": [("ok", 0.0001, ""), ("ok", 0.005, "")]})  # 1000x, then 20x
    assert rows["cpp"]["status"] == "ok" and rows["cpp"]["rechecked"] is True and rows["cpp"]["median_s"] == 0.005
    assert rows["cpp"]["message"] == ("re-checked on fresh inputs: 20.0x the reference, under the 50x that has a pass "
                                      "re-checked (its first measurement read 1000x); the row keeps the re-check's times")


def test_a_speedup_over_a_disturbed_reference_or_recheck_is_not_said_to_hold(builtin_ops):
    """Beside a compile, a reference stalled by scheduler ticks reads hundreds of times slow, in the re-check too:
    the ratio is the neighbour's, and the row says the re-check could not tell."""
    cannot = ("re-checked on fresh inputs: too few samples the machine left alone, in the re-check or the "
              "reference's, to tell whether 1000x the reference holds")
    for py, again in ((("ok", 0.1, "", "disturbed"), ("ok", 0.0001, "")),
                      (("ok", 0.1, ""), ("ok", 0.0001, "", "disturbed"))):
        _, rows = sweep({"py": [py], "cpp": [("ok", 0.0001, "first"), again]})
        assert rows["cpp"]["rechecked"] is True and rows["cpp"]["message"] == "first; " + cannot


def test_a_speedup_over_a_reference_or_recheck_timed_beside_other_work_is_not_said_to_hold(builtin_ops):
    """A reference timed while other work kept a core busy reads slow though none of its threads waited: the
    speedup over it is the neighbour's as much as the code's."""
    busy = {"other_cores": 1.0}
    for py, again in ((("ok", 0.1, "", busy), ("ok", 0.0001, "")), (("ok", 0.1, ""), ("ok", 0.0001, "", busy))):
        _, rows = sweep({"py": [py], "cpp": [("ok", 0.0001, "first"), again]})
        assert rows["cpp"]["message"] == ("first; re-checked on fresh inputs: too few samples the machine left alone, "
                                          "in the re-check or the reference's, to tell whether 1000x the reference "
                                          "holds")
    _, rows = sweep({"py": [("ok", 0.1, "")], "cpp": [("ok", 0.0001, "", busy), ("ok", 0.0002, "quiet")]})
    assert rows["cpp"]["median_s"] == 0.0002 and rows["cpp"]["message"].startswith("quiet; ")


def test_a_disturbed_first_measurement_whose_speedup_holds_takes_the_rechecks_row(builtin_ops):
    _, rows = sweep({"py": [("ok", 0.1, "")], "cpp": [("ok", 0.0001, "", "disturbed"), ("ok", 0.0002, "clean")]})
    assert rows["cpp"]["median_s"] == 0.0002 and "stop" not in rows["cpp"]
    assert rows["cpp"]["message"] == "clean; re-checked on fresh inputs: 500x the reference holds"


def test_a_pass_found_incorrect_on_its_times_alone_takes_its_rechecks_row(builtin_ops):
    """A neighbour's load can slow the calls on unseen data as a cache would: the verdict is measured again. Where
    the re-check is ok its row stands, else the first's, saying what the re-check found. Wrong outputs are not
    re-checked."""
    asked, rows = sweep({"py": [("ok", 0.1, "")], "cpp": [("incorrect", 0.05, ON_TIME), ("ok", 0.05, "noisy: ...")],
                         "cpp-tiled": [("incorrect", 0.05, ON_TIME), ("incorrect", 0.04, ON_TIME)],
                         "cpp-fused": [("incorrect", 0.05, "timed call 3 of 9: output 0: error 0.98 > 0.01 ...")]})
    assert [(c.impl, c.strict) for c in asked[4:]] == [("cpp", True), ("cpp-tiled", True)]
    assert rows["cpp"]["status"] == "ok" and rows["cpp"]["rechecked"] is True and rows["cpp"]["median_s"] == 0.05
    assert rows["cpp"]["message"] == ("noisy: ...; re-checked on fresh inputs: its timed calls on data never given to "
                                      "it before were slow in its first measurement, not in this one")
    assert rows["cpp-tiled"]["status"] == "incorrect" and rows["cpp-tiled"]["rechecked"] is True
    assert rows["cpp-tiled"]["message"] == ON_TIME + "; re-checked on fresh inputs: " + ON_TIME
    assert rows["cpp-tiled"]["median_s"] == 0.05  # the first measurement's row, which the re-check confirmed
    assert rows["cpp-fused"]["status"] == "incorrect" and "rechecked" not in rows["cpp-fused"]


def test_a_recheck_by_one_of_several_worker_processes_writes_a_row_storage_takes(builtin_ops):
    class Replicated(Scripted):
        """Each answer says which worker process measured it, as run --processes' workers do."""

        def run(self, cell):
            return [r.with_(process=len(self.asked) % 2) for r in super().run(cell)]

    cells = [Cell.make("hoconv2d", "filter", impl, "cpu", "float32", {"batch_size": 1}, passes=("forward",))
             for impl in ("py", "cpp")]
    out = Collected()
    script = {"py": [("ok", 0.1, "")], "cpp": [("ok", 0.0001, ""), ("incorrect", None, "timed call 3 of 9: ...")]}
    Sweep(cells, Replicated(script), out, {"host": "h"}).run()
    assert storage.to_table(out.rows).num_rows == 2  # no `process` left in a row: it names no column
    assert [r["status"] for r in out.rows] == ["ok", "incorrect"]


def test_a_speedup_under_the_limit_is_not_rechecked(builtin_ops):
    asked, rows = sweep({"py": [("ok", 0.04, "")], "cpp": [("ok", 0.001, "")]})  # 40x
    assert len(asked) == 2 and "rechecked" not in rows["cpp"]


def test_a_time_below_the_floor_stays_flagged_when_the_recheck_agrees(builtin_ops):
    _, rows = sweep({"cpp": [("below_floor", 1e-6, "below the floor: ..."), ("below_floor", 1e-6, "")]})
    assert rows["cpp"]["status"] == "below_floor" and rows["cpp"]["rechecked"] is True
    assert rows["cpp"]["message"] == "below the floor: ...; re-checked on fresh inputs: still below the floor"


def test_suspect_passes_compare_with_the_reference_pass_by_pass():
    rows = [PassResult(pass_=p, status="ok", median_s=1.0) for p in ("forward", "backward")]
    refs = {"forward": PassResult(status="ok", median_s=51.0), "backward": PassResult(status="ok", median_s=49.0)}
    assert recheck.suspect_passes(rows, refs, 50.0) == ("forward",)
    assert recheck.suspect_passes(rows, {}, 50.0) == ()


def test_a_rechecked_compiled_cell_keeps_what_its_first_call_compiled(builtin_ops):
    class Compiling(Scripted):
        """A compiled implementation recompiles in its first measurement; the re-check finds it compiled."""

        def run(self, cell):
            first = not any(c.impl == cell.impl for c in self.asked)
            rows = super().run(cell)
            if cell.impl == "py":
                return rows
            return [r.with_(compile_s=3.0 if first else 0.01, recompiles=int(first), graph_breaks=0) for r in rows]

    script = {"py": [("ok", 0.1, "")], "py@compile": [("ok", 0.001, ""), ("ok", 0.0011, "")]}
    cells = [Cell.make("hoconv2d", "filter", impl, "cpu", "float32", {"batch_size": 1}, passes=("forward",))
             for impl in script]
    executor, out = Compiling(script), Collected()
    Sweep(cells, executor, out, {"host": "h"}).run()
    row = next(r for r in out.rows if r["impl"] == "py@compile")
    assert row["rechecked"] is True and len(executor.asked) == 3
    assert (row["compile_s"], row["recompiles"], row["graph_breaks"]) == (3.0, 1, 0)


def test_a_noisy_reference_still_gets_its_points_speedups_rechecked(builtin_ops):
    """A reference held to be measured again (noisy) once kept every speedup over it from the re-check; a
    noisy suspect too. Both are measured again at the end, then re-checked, and the re-check's verdict is the
    row's."""
    class Noisy(Scripted):
        def run(self, cell):
            return [r.with_(noisy=cell.impl == "py" or not cell.strict, remeasured=None) for r in super().run(cell)]

    cells = [Cell.make("hoconv2d", "filter", impl, "cpu", "float32", {"batch_size": 1}, passes=("forward",))
             for impl in ("py", "cpp")]
    script = {"py": [("ok", 0.1, "")] * 2,
              "cpp": [("ok", 0.0001, ""), ("ok", 0.0001, ""), ("incorrect", None, "its 6 timed calls ...")]}
    executor, out = Noisy(script), Collected()
    Sweep(cells, executor, out, {"host": "h"}, remeasure=1).run()
    assert [(c.impl, c.strict) for c in executor.asked] == [("py", False), ("cpp", False), ("py", False),
                                                            ("cpp", False), ("cpp", True)]
    kept = [r for r in out.rows if r["impl"] == "cpp"]
    assert [r["status"] for r in kept] == ["incorrect"] and kept[0]["rechecked"] is True
    assert kept[0]["message"] == "re-checked on fresh inputs: its 6 timed calls ..."


def test_a_re_measured_pass_is_re_checked_after_and_its_row_says_what_the_re_check_found(builtin_ops):
    """The re-check judges the row the sweep keeps: a disturbed cell measured again at the end, clean, at 500x
    its reference, is re-checked then, and its row gives the verdict (once, its re-measurement's row said
    nothing of a re-check that had run on the disturbed one)."""
    script = {"py": [("ok", 0.1, "")],
              "cpp": [("ok", 0.0001, "", "disturbed"), ("ok", 0.0002, "clean"), ("ok", 0.0002, "strict")]}
    cells = [Cell.make("hoconv2d", "filter", impl, "cpu", "float32", {"batch_size": 1}, passes=("forward",))
             for impl in script]
    executor, out = Scripted(script), Collected()
    Sweep(cells, executor, out, {"host": "h"}, remeasure=1).run()
    assert [(c.impl, c.strict) for c in executor.asked] == [("py", False), ("cpp", False), ("cpp", False),
                                                            ("cpp", True)]
    (row,) = [r for r in out.rows if r["impl"] == "cpp"]
    assert row["median_s"] == 0.0002 and row["remeasured"] == 1 and row["rechecked"] is True
    assert row["message"] == "clean; re-checked on fresh inputs: 500x the reference holds"

"""The answer first: the fastest implementation for each device and pass, at which sizes, by how much."""

import pandas as pd

from benchctl.report import fastest
from tests.report.test_page import row


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows)


def fastest_lines(rows: pd.DataFrame, baseline: str) -> tuple[str, ...]:
    return tuple(map(str, fastest.answers(rows, baseline)))


def test_the_fastest_at_every_size_is_one_line_with_its_speedups_over_the_baseline():
    rows = [row(i, "cpu", p, b) for i in ("py", "cpp") for p in ("forward", "backward") for b in (8, 16, 32)]
    assert fastest_lines(frame(rows), "py") == ("CPU forward: cpp at every batch_size (4.00x py)",
                                                "CPU backward: cpp at every batch_size (4.00x py)")


def test_where_the_fastest_changes_with_the_size_each_is_named_with_its_sizes_and_a_close_one_is_said():
    ms = {("py", 8): 8, ("py", 16): 16, ("py", 32): 32, ("cpp", 8): 1, ("cpp", 16): 15, ("cpp", 32): 40}
    rows = [{**row(i, "cpu", "forward", b), "median_s": t / 1e3} for (i, b), t in ms.items()]
    [line] = fastest_lines(frame(rows), "py")
    # at 16 cpp is 1.07x py: within CLOSE; at 32 py wins by 1.25x: not
    assert line == ("CPU forward: cpp at batch_size=8 and 16 (1.07-8.00x py); py at batch_size=32 (the baseline; next "
                    "cpp, 1.25x slower); within 10%: py at 16")
    ranked = fastest.wins(frame(rows).assign(speedup=[1, 1, 1, 8, 16 / 15, 0.8], doubt=False))
    assert [w.close for w in ranked] == [False, True, False]


def test_a_size_whose_speedups_do_not_hold_is_said_to_be_in_doubt():
    """Beside a busy neighbour py stopped `disturbed` at 16 (the tables' `?` on cpp's speedup there): the answer
    names the size rather than certify it."""
    rows = [{**row(i, "cpu", "forward", b), "median_s": t / 1e3, "stop": "disturbed" if (i, b) == ("py", 16) else None}
            for (i, b), t in {("py", 8): 8, ("cpp", 8): 2, ("py", 16): 16, ("cpp", 16): 4}.items()]
    assert fastest_lines(frame(rows), "py") == ("CPU forward: cpp at every batch_size (4.00x py); in doubt: at 16 "
                                                "(4.00x)",)
    rows[2]["stop"] = None
    assert fastest_lines(frame(rows), "py") == ("CPU forward: cpp at every batch_size (4.00x py)",)
    # py fastest: a disturbed cpp within 10% of it puts the size in doubt, one 4x behind does not
    ms = {("py", 8): 8, ("cpp", 8): 8.4, ("py", 16): 16, ("cpp", 16): 64}
    rows = [{**row(i, "cpu", "forward", b), "median_s": t / 1e3, "stop": "disturbed" if i == "cpp" else None}
            for (i, b), t in ms.items()]
    [line] = fastest_lines(frame(rows), "py")
    assert line.endswith("within 10%: cpp at 8; in doubt: at 8")


def test_a_speedup_in_doubt_is_given_beside_its_size_not_in_the_span():
    """A quick hoconv2d run read cpp 1.67-2.01x py where both sides held, and 5.81x at batch size 4 where py stopped
    disturbed: the line's span leaves out the figure the run itself doubts, and gives it with the size."""
    ms = {("py", 8): 8, ("cpp", 8): 4, ("py", 16): 16, ("cpp", 16): 8, ("py", 32): 58, ("cpp", 32): 10}
    rows = [{**row(i, "cpu", "forward", b), "median_s": t / 1e3, "stop": "disturbed" if (i, b) == ("py", 32) else None}
            for (i, b), t in ms.items()]
    assert fastest_lines(frame(rows), "py") == ("CPU forward: cpp at every batch_size (2.00x py); in doubt: at 32 "
                                                "(5.80x)",)
    for r in rows:  # every speedup in doubt: the span is theirs, and the line says every size is in doubt
        r["stop"] = "disturbed" if r["impl"] == "py" else None
    assert fastest_lines(frame(rows), "py") == ("CPU forward: cpp at every batch_size (2.00-5.80x py); in doubt: at "
                                                "every batch_size",)


def test_a_pass_where_one_implementation_ran_says_nothing():
    rows = [row("py", "cpu", "forward", 8), row("cpp", "cpu", "forward", 8, status="oom")]
    assert fastest_lines(frame(rows), "py") == ()


def test_where_earlier_runs_had_the_two_the_other_way_round_the_line_says_in_how_many():
    from benchctl.analysis.repeat import BY_RUN

    ms = {("py", 8): 1.0, ("cpp", 8): 1.02, ("py", 16): 2.0, ("cpp", 16): 1.0}
    rows = [{**row(i, "cpu", "forward", b), "median_s": t / 1e3} for (i, b), t in ms.items()]
    for r in rows:
        if r["impl"] == "cpp":  # its paired speedups over py in the earlier runs, either machine state
            r.update(paired_with="py", **{BY_RUN: {"r1": 1.03, "r2": 1.05, "r3": 0.99, "r4": 1.01}
                                          if r["batch_size"] == 8 else {"r1": 1.9, "r2": 2.1}})
    [line] = fastest_lines(frame(rows), "py")
    assert line == ("CPU forward: py at batch_size=8 (the baseline); cpp at batch_size=16 (2.00x py); within 10%: cpp "
                    "at 8; ahead in earlier runs: cpp at 8 in 3 of 4")  # py won at 8 here, cpp in three runs before
    # against cpp as the baseline the same pairs say the same: py is the partner of cpp's pairs
    assert fastest_lines(frame(rows), "cpp") == ("CPU forward: py at batch_size=8 (1.02x cpp); cpp at batch_size=16 "
                                                 "(the baseline; next py, 2.00x slower); within 10%: cpp at 8; ahead "
                                                 "in earlier runs: cpp at 8 in 3 of 4",)


def test_two_implementations_paired_with_one_partner_are_compared_run_by_run():
    """cpp and jit both timed in pairs with py: in each earlier run that timed both, which of the two was ahead."""
    from benchctl.analysis.repeat import BY_RUN

    earlier = {"cpp": {"r1": 2.0, "r2": 2.2, "r3": 1.9}, "jit": {"r1": 2.1, "r2": 2.0, "r4": 3.0}}
    rows = [{**row("py", "cpu", "forward", 8), "median_s": 2e-3}]
    rows += [{**row("cpp", "cpu", "forward", 8), "impl": impl, "median_s": t, "paired_with": "py",
              "paired_speedup": 2e-3 / t, BY_RUN: earlier[impl]} for impl, t in (("cpp", 0.95e-3), ("jit", 1e-3))]
    [line] = fastest_lines(frame(rows), "py")
    # r1 and r2 timed both: jit ahead in r1, cpp in r2 (r3 and r4 only one of them)
    assert line == ("CPU forward: cpp at batch_size=8 (2.11x py); within 10%: jit at 8; ahead in earlier runs: jit at "
                    "8 in 1 of 2")
    rows[2]["paired_with"] = "loop"  # jit paired with another, cpp with py: no common partner, no count
    assert fastest_lines(frame(rows), "py")[0].endswith("within 10%: jit at 8")
    rows[2]["paired_with"] = "cpp"  # jit paired with cpp: its own speedups over cpp say, 2.0-3.0x in three runs
    assert fastest_lines(frame(rows), "py")[0].endswith("ahead in earlier runs: jit at 8 in 3 of 3")


def test_an_answer_is_its_device_and_pass_and_what_was_fastest_where():
    rows = [row(i, "cpu", "forward", b) for i in ("py", "cpp") for b in (8, 16)]
    [found] = fastest.answers(frame(rows), "cpp")  # the baseline fastest: how far behind the next came
    assert (found.title, found.text) == ("CPU forward", "cpp at every batch_size (the baseline; next py, 4.00x slower)")


def test_speedups_are_said_to_three_significant_figures():
    """Between runs a speedup moves by 3-8%: `16.3x`, not `16.32x`; `135x`, not `135.2x`."""
    ms = {("py", 8): 8.16, ("cpp", 8): 0.5, ("py", 16): 135.2, ("cpp", 16): 1.0}
    rows = [{**row(i, "cpu", "forward", b), "median_s": t / 1e3} for (i, b), t in ms.items()]
    assert fastest_lines(frame(rows), "py") == ("CPU forward: cpp at every batch_size (16.3-135x py)",)

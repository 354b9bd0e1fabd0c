"""What a partner read inside its pairs, in the report: hollow points on the time chart off the partner's own
line, and the speedup's `≠` with its legend under the table, from synthetic rows through the parquet schema."""

from __future__ import annotations

import numpy as np

from benchctl.report import charts, pair_marks, tables
from tests.report.test_charts import frame, make_row


def paired_rows(beside: float = 0.16e-3) -> list[dict]:
    """lstm_cell's forward as one quick sweep read it: py 0.085 ms in its own row at 16 (0.21 at 64); cpp
    paired with it, py reading `beside` in the pairs at 16 and 0.2 ms at 64."""
    rows = []
    for batch, own, theirs in ((16, 0.085e-3, beside), (64, 0.21e-3, 0.2e-3)):
        rows.append(make_row("py", "cpu", "forward", batch, median=own))
        cpp = make_row("cpp", "cpu", "forward", batch, median=own / 2)
        cpp.update(paired_with="py", paired_speedup=theirs / cpp["median_s"], partner_samples_s=[theirs] * 9)
        rows.append(cpp)
    return rows


def test_the_time_chart_puts_the_partners_time_in_each_pairing_beside_its_own_line():
    fig = charts.timing_figure(frame(paired_rows()), "lstm_cell / cell")
    [points] = [a for ax in fig.axes for a in ax.collections if a.get_gid() == "partner:py"]
    xs, ys = points.get_offsets().T
    assert list(xs) == [16.0, 64.0] and np.allclose(ys, [0.16, 0.2])
    assert pair_marks.POINT_LABEL in [t.get_text() for t in fig.legends[0].get_texts()]


def test_a_run_without_pairs_has_no_hollow_points():
    unpaired = [{k: v for k, v in r.items() if not k.startswith("pair") and k != "partner_samples_s"}
                for r in paired_rows()]
    fig = charts.timing_figure(frame(unpaired), "lstm_cell / cell")
    assert not [a for ax in fig.axes for a in ax.collections if str(a.get_gid()).startswith("partner:")]


def test_the_table_marks_a_speedup_whose_partner_read_far_from_its_own_row_and_says_why():
    df = frame(paired_rows())
    table = tables.op_table(df, "py").set_index(["batch_size", "impl"])
    assert table.loc[("16", "cpp"), "speedup vs py"].endswith("≠")  # 0.16 ms beside cpp, 0.085 in its row
    assert not table.loc[("64", "cpp"), "speedup vs py"].endswith("≠")  # 0.2 against 0.21
    assert "≠ the reference read over 25% off its own row in these pairs" in tables.legend(
        tables.op_table(df, "py"), "py")[0]
    assert tables.legend(tables.op_table(frame(paired_rows(beside=0.09e-3)), "py"), "py") == ()


def test_the_pages_say_what_the_marks_mean_under_the_section(tmp_path):
    from benchctl.report import page

    built = page.build(frame(paired_rows()), tmp_path)
    assert built.sections[0].legend[0].startswith("marks: ≠ the reference read over 25% off its own row")
    md, html = (tmp_path / "summary.md").read_text(), (tmp_path / "index.html").read_text()
    assert "\n*marks: ≠ the reference read over 25% off its own row" in md
    assert '<p class="note">marks: ≠ the reference read over 25% off its own row' in html

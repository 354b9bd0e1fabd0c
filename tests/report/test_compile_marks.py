"""torch.compile in the report: a ring on the time chart where a compiled implementation recompiled, and
the compile columns of an operator's table, from synthetic rows through the real parquet schema."""

from __future__ import annotations

import numpy as np

from benchctl.report import charts, tables
from tests.report.test_charts import frame, make_row


def compiled_rows() -> list[dict]:
    """py and py@compile at four sizes on the CPU, forward; the compiled one recompiled at 16 and 32."""
    rows = []
    for batch in (8, 16, 32, 64):
        rows.append(make_row("py", "cpu", "forward", batch, median=1e-3 * batch))
        compiled = make_row("py@compile", "cpu", "forward", batch, median=5e-4 * batch)
        compiled.update(compile_s=2.5 if batch in (16, 32) else 0.1, recompiles=int(batch in (16, 32)),
                        recompiles_total={8: 0, 16: 1, 32: 2, 64: 2}[batch], graph_breaks=1,
                        graph_break_reason="Call to `torch._dynamo.graph_break()`: User-inserted graph break",
                        dynamic_shapes=False)
        rows.append(compiled)
    return rows


def test_the_time_chart_rings_the_sizes_that_recompiled():
    df = frame(compiled_rows())
    fig = charts.timing_figure(df, "hoconv2d / module")
    rings = [a for ax in fig.axes for a in ax.collections if a.get_gid() == "recompiled"]
    assert len(rings) == 1
    xs, ys = rings[0].get_offsets().T
    ok = df[(df["impl"] == "py@compile") & (df["batch_size"].isin([16, 32]))].sort_values("batch_size")
    assert list(xs) == [16.0, 32.0]
    assert np.allclose(ys, ok["median_s"].to_numpy() * 1e3)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "torch.compile recompiled here" in legend


def test_a_run_without_compiled_rows_has_no_ring_and_no_compile_columns():
    df = frame([r for r in compiled_rows() if r["impl"] == "py"])
    fig = charts.timing_figure(df, "hoconv2d / module")
    assert not [a for ax in fig.axes for a in ax.collections if a.get_gid() == "recompiled"]
    assert "recompiles (sweep total)" not in tables.op_table(df, "py").columns


def test_the_operator_table_gives_compile_time_recompiles_and_graph_breaks():
    table = tables.op_table(frame(compiled_rows()), "py")
    compiled = table[table["impl"] == "py@compile"].set_index("batch_size")
    assert list(compiled["compile s"]) == ["0.10", "2.50", "2.50", "0.10"]
    assert list(compiled["recompiles (sweep total)"]) == ["0 (0)", "1 (1)", "1 (2)", "0 (2)"]
    assert compiled.loc["16", "graph breaks"] == "1: Call to `torch._dynamo.graph_break()`: User-inserted graph break"
    assert set(compiled["dynamic shapes"]) == {"no"}
    eager = table[table["impl"] == "py"]
    assert set(eager["compile s"]) == set(eager["recompiles (sweep total)"]) == set(eager["graph breaks"]) == {""}

"""What a partner read inside its pairs, on the time chart: a hollow point in the partner's colour at its median
beside each implementation timed in pairs with it (run --pair-with). The partner's line is its own row's
medians, timed at another moment; where the machine changed speed between the cells, or the pairing moved the
partner's time (analysis/partner_lines.py; on the 2-core VM, lstm_cell's py forward at 16 read 0.085 ms in its
row and 0.16 ms beside jit), the points sit off the line and show why the speedups (the pairs') are not the
ratio of the lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from benchctl.analysis.pairs import partner_median
from benchctl.analysis.speedup import present_value
from benchctl.vocab import Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes

POINT_LABEL = "hollow: the partner's median beside each paired implementation"


def mark_partners(ax: "Axes", cell: pd.DataFrame, colors: dict) -> None:
    """A hollow point per ok row timed in pairs with an implementation of the chart (times in ms)."""
    if "paired_with" not in cell:
        return
    points = [(r["paired_with"], float(r["axis_value"]), median * 1e3)
              for r in cell[cell["status"] == Status.OK].to_dict("records")
              if present_value(r.get("paired_with")) and r["paired_with"] in colors and (median := partner_median(r))]
    for partner in sorted({p[0] for p in points}):
        mine = [p for p in points if p[0] == partner]
        art = ax.scatter([p[1] for p in mine], [p[2] for p in mine], s=28, facecolors="none",
                         edgecolors=colors[partner], linewidths=1.0, zorder=5, label=POINT_LABEL)
        art.set_gid(f"partner:{partner}")

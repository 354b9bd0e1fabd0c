"""The earlier runs' speedups on the speedup chart: a small cross in the implementation's colour at each speedup that an
earlier run of the same code on this machine read (analysis/repeat.py), beside each point timed in pairs with
the chart's baseline. A point's bar is the interval of one moment's pairs; where the crosses fall outside it, so
may the next run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from benchctl.vocab import Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes

POINT_LABEL = "crosses: earlier runs of the same code on this machine"


def mark_earlier(ax: "Axes", cell: pd.DataFrame, baseline: str, colors: dict) -> None:
    """A cross per earlier speedup of each ok row timed in pairs with `baseline` (`earlier_speedups`)."""
    if "earlier_speedups" not in cell:
        return
    ok = cell[(cell["status"] == Status.OK) & (cell["paired_with"] == baseline)] if "paired_with" in cell else cell[:0]
    drawn = False
    for impl, rows in ok.groupby("impl", sort=True):
        points = [(float(r["axis_value"]), s) for r in rows.to_dict("records") for s in r["earlier_speedups"]]
        if points:
            art = ax.scatter(*zip(*points), marker="x", s=22, color=colors[impl], linewidths=1.0, alpha=0.8, zorder=4)
            art.set_gid(f"earlier:{impl}")
            drawn = True
    if drawn:  # one grey cross in the legend, not the first implementation's colour
        ax.scatter([], [], marker="x", s=22, color="gray", linewidths=1.0, label=POINT_LABEL)

"""What the earlier runs of the same code read of each pass, on the time chart (analysis/at_speed.py worked it out
from the run's folder): a bar behind each point from the fastest to the slowest of their medians, and for a pass
marked slow a short dash at its time at speed.

A point's interval says how well that run's samples agree; the bar says where the same code landed in other runs
(on the 2-core VM grid_sample's py forward at image_size=1024 read 0.0708 ms with an interval under 1% wide, and
0.10-0.27 ms in most other runs). Where the dash sits far below a slow point, the slow phase set the point as much
as the code did (lstm_cell's py forward at B=256 read 0.485 ms in a slow phase, 0.261 ms at speed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from benchctl.analysis.earlier_range import MIN_EARLIER
from benchctl.results.schema import slow_machine
from benchctl.vocab import Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes

DASH_LABEL = "dash: a pass marked slow, at its time at speed in earlier runs"
BAR_LABEL = "bar: the fastest to the slowest earlier run of the same code"
DODGE = 1.03  # each implementation's bars this factor along the axis from the next's, so that they do not overlap


def mark(ax: "Axes", cell: pd.DataFrame, colors: dict) -> None:
    """The bars (`mark_earlier_runs`) and the dashes (`mark_at_speed`)."""
    mark_earlier_runs(ax, cell, colors)
    mark_at_speed(ax, cell, colors)


def mark_earlier_runs(ax: "Axes", cell: pd.DataFrame, colors: dict) -> None:
    """A bar per ok row that MIN_EARLIER earlier runs or more timed (`earlier_lo_s`, `earlier_hi_s`; times in ms),
    beside its point (DODGE)."""
    if "earlier_runs" not in cell:
        return
    known = cell[(cell["status"] == Status.OK) & (cell["earlier_runs"].fillna(0) >= MIN_EARLIER)]
    order = list(colors)
    for impl, rows in known.groupby("impl", sort=True):
        dodge = DODGE ** (order.index(impl) - (len(order) - 1) / 2)
        low, high = (rows[c].to_numpy(dtype=float) * 1e3 for c in ("earlier_lo_s", "earlier_hi_s"))
        art = ax.vlines(rows["axis_value"].to_numpy(dtype=float) * dodge, low, high, colors=colors[impl], alpha=0.25,
                        linewidths=6, zorder=1)
        art.set_gid(f"earlier:{impl}")
    if len(known):  # one grey bar in the legend
        ax.vlines([], [], [], colors="gray", alpha=0.25, linewidths=6, label=BAR_LABEL)


def mark_at_speed(ax: "Axes", cell: pd.DataFrame, colors: dict) -> None:
    """A dash per ok row marked slow whose time at speed is known (`at_speed_s`; times in ms)."""
    if "at_speed_s" not in cell:
        return
    known = cell[(cell["status"] == Status.OK) & cell["at_speed_s"].notna()]
    marked = known[known.apply(slow_machine, axis=1)] if len(known) else known
    for impl, rows in marked.groupby("impl", sort=True):
        art = ax.scatter(rows["axis_value"].to_numpy(dtype=float), rows["at_speed_s"].to_numpy(dtype=float) * 1e3,
                         marker="_", s=110, color=colors[impl], linewidths=1.8, zorder=5)
        art.set_gid(f"at_speed:{impl}")
    if len(marked):  # one grey dash in the legend, not the first implementation's colour
        ax.scatter([], [], marker="_", s=110, color="gray", linewidths=1.8, label=DASH_LABEL)

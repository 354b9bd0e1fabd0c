"""A pass marked slow, on the time chart: a short dash in its implementation's colour at its time at speed (the
median of the earlier runs of the same code that timed it with the machine at speed; analysis/at_speed.py),
beside its point. Where the dash sits far below the point, the slow phase set the point as much as the code
did (on the 2-core VM, lstm_cell's py forward at B=256 read 0.485 ms in a slow phase, 0.261 ms at speed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from benchctl.results.schema import slow_machine
from benchctl.vocab import Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes

DASH_LABEL = "dash: a pass marked slow, at its time at speed in earlier runs"


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

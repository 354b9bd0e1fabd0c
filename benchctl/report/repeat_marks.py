"""The earlier runs' speedups on the report's speedup chart: a mark in the implementation's colour at each speedup
that an earlier run of the same code on this machine read (analysis/repeat.py), beside each point timed in pairs
with the chart's baseline: a cross for a run at speed (or one whose canary was not read), a hollow triangle for one
in a slow phase (as on the history chart). A point's bar is the interval of one moment's pairs; where the marks of
its state fall outside it, so may the next run; where the two states' marks sit apart, the speedup depends on the
machine's state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import pandas as pd

from benchctl.analysis.repeat import OTHER_STATE, SAME_STATE, machine_state
from benchctl.vocab import Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# the earlier runs' state -> how they are drawn and named in the legend
MARKS = {False: ("x", "earlier runs of the same code on this machine"),
         True: ("^", "earlier runs of the same code on this machine, in a slow phase")}


def mark_earlier(ax: "Axes", cell: pd.DataFrame, baseline: str, colors: dict) -> None:
    """A mark per earlier speedup of each ok row timed in pairs with `baseline` (`earlier_speedups`), by its state."""
    if SAME_STATE not in cell:
        return
    ok = cell[(cell["status"] == Status.OK) & (cell["paired_with"] == baseline)] if "paired_with" in cell else cell[:0]
    drawn = set()
    for impl, rows in ok.groupby("impl", sort=True):
        for slow, (marker, _) in MARKS.items():
            points = [(float(r["axis_value"]), s) for r in rows.to_dict("records") for s in _in_state(r, slow)]
            if points:
                art = ax.scatter(*zip(*points), marker=marker, s=22, linewidths=1.0, alpha=0.8, zorder=4,
                                 **_drawn(marker, colors[impl]))
                art.set_gid(f"earlier:{impl}:{'slow' if slow else 'at speed'}")
                drawn.add(slow)
    for slow in sorted(drawn):  # one grey mark each in the legend, not the first implementation's colour
        marker, label = MARKS[slow]
        ax.scatter([], [], marker=marker, s=22, linewidths=1.0, label=label, **_drawn(marker, "gray"))


def _drawn(marker: str, color: str) -> dict[str, str]:
    """A cross in the colour; a triangle hollow, its edge in the colour."""
    return {"color": color} if marker == "x" else {"facecolors": "none", "edgecolors": color}


def _in_state(row: Mapping[str, Any], slow: bool) -> tuple[float, ...]:
    """The row's earlier speedups timed in a slow phase (`slow`), or not (at speed, or where no canary was read):
    the same state's or the other's."""
    return tuple(row.get(SAME_STATE if bool(machine_state(row)) == slow else OTHER_STATE) or ())

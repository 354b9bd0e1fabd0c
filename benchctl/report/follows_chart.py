"""The cells whose time follows the machine across their runs of the same code (analysis/follows.py): one panel a
cell, its runs' times against the probe it follows, the widest spread first, so a user sees how far the machine
alone moved it.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Sequence

from benchctl.analysis.follows import PROBES, Follows
from benchctl.analysis.repeat import where
from benchctl.report.charts import figure_grid

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PANELS = 6  # the cells drawn, widest spread first; the page's table lists them all
COLUMNS = 3


def follows_figure(found: Sequence[Follows]) -> "Figure | None":
    """None where no cell follows a probe."""
    drawn = list(found)[:PANELS]
    if not drawn:
        return None
    rows = -(-len(drawn) // COLUMNS)
    fig, axes = figure_grid(rows, min(COLUMNS, len(drawn)), width=4.2)
    for ax, f in zip(axes.flat, drawn):
        ax.plot([v for _, v in f.readings], [t * 1e3 for t, _ in f.readings], "o", markersize=4)
        ax.set_title("\n".join(textwrap.wrap(f"{where(f.series.points[-1].row)} (rho {f.rho:+.2f})", 42)),
                     fontsize=8)
        ax.set_xlabel(PROBES[f.probe].axis, fontsize=8)
        ax.set_ylabel("median ms", fontsize=8)
        ax.set_ylim(bottom=0)
    for ax in list(axes.flat)[len(drawn):]:
        ax.set_visible(False)
    fig.suptitle("What moved the cells between runs of the same code: their time against the machine's probe",
                 fontsize=11)
    return fig

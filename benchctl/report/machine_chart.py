"""The machine over a run: every CPU row's memory bandwidth probe (`mem_gbps`) against when its cell
finished, so a slow phase of the host shows as a dip that the cells measured in it share.

The dotted line is where `run` starts marking cells `mem` (75% of the run's median probe); the dashed
one is the best probe `env --calibrate` stored (`read_gbps`), when the run recorded it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from benchctl.report.charts import figure_grid
from benchctl.results.summary import MEM_SLOW, probed

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def bandwidth_figure(rows: pd.DataFrame, read_peak: float | None = None) -> "Figure | None":
    """None when no row has a probe (a GPU-only run, or rows from before probes existed)."""
    with_probes = probed(rows)
    if with_probes.empty:
        return None
    finished = pd.to_datetime(with_probes["timestamp"], utc=True, format="ISO8601")
    minutes = (finished - finished.min()).dt.total_seconds() / 60
    fig, axes = figure_grid(1, 1, width=8.0)
    ax = axes[0, 0]
    for op, part in with_probes.assign(minutes=minutes).groupby("op", sort=True):
        ax.plot(part["minutes"], part["mem_gbps"], "o", markersize=3, label=str(op))
    ax.axhline(MEM_SLOW * with_probes["mem_gbps"].median(), linestyle=":", color="gray",
               label=f"{MEM_SLOW:.0%} of the median: marked mem")
    if read_peak:
        ax.axhline(read_peak, linestyle="--", color="black", label="calibrated read peak")
    ax.set_xlabel("minutes since the first cell finished")
    ax.set_ylabel("memory bandwidth probe, GB/s")
    ax.set_ylim(bottom=0)
    ax.legend(loc="best", fontsize=8)
    fig.suptitle("The machine's memory bandwidth during the run (CPU cells)", fontsize=11)
    return fig

"""The machine over a run: every CPU row's memory bandwidth probe (`mem_gbps`) against when its cell
was measured (its `timestamp`: a row kept from a first measurement and written again at the end of the sweep keeps
that measurement's time), so a slow phase of the host shows as a dip that the cells measured in it share.

The dotted line is where `run` starts marking cells `mem` (75% of the run's median probe); the dashed
one is the best probe `env --calibrate` stored (`read_gbps`), when the run recorded it.

Beside it, the load: the cores other processes kept busy and the steal time, all through each run (its
metadata's `timeline`), with each CPU pass's own reading of them while it was timed (`other_cores`), over each
CPU row's compute canary against its calibrated time (`canary_ratio`),
with the passes that set aside over MARKED_SHARE of their samples as disturbed marked, so a user sees when
the neighbour came.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import pandas as pd

from benchctl.report.charts import figure_grid
from benchctl.results.schema import BUSY_WARN_CORES, SLOW_PHASE
from benchctl.analysis.summary import MEM_SLOW, probed
from benchctl.vocab import Stop

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# A pass that set aside more than this share of its samples is marked. With one busy process beside it, 7% of
# a call's samples waited for a CPU; on a quiet 2-core VM most passes set some aside (82% of a quick sweep's,
# their median 2%, 15% of passes over 5%), so marking any share marked nearly every pass.
MARKED_SHARE = 0.05


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


def load_figure(rows: pd.DataFrame, metas: Sequence[Mapping[str, Any]] = ()) -> "Figure | None":
    """Two panels on one time axis (minutes since the run's first moment): the other processes' busy cores
    and steal, and each CPU row's canary ratio with its disturbed passes marked. None without either."""
    timeline = _timeline(metas)
    canaries = rows[rows["canary_ratio"].notna()] if "canary_ratio" in rows else rows.iloc[0:0]
    if timeline.empty and canaries.empty:
        return None
    finished = pd.to_datetime(canaries["timestamp"], utc=True, format="ISO8601")
    start = min([*timeline["at"], *finished]) if len(timeline) or len(finished) else None
    fig, axes = figure_grid(2, 1, width=8.0)
    load_ax, canary_ax = axes[0, 0], axes[1, 0]
    canary_ax.sharex(load_ax)  # one time axis: a pass's canary under the load it was timed in
    if len(timeline):
        minutes = (timeline["at"] - start).dt.total_seconds() / 60
        load_ax.plot(minutes, timeline["other_cores"], "-", label="busy cores, other processes")
        load_ax.plot(minutes, timeline["steal_cores"], "--", label="steal (cores)")
        load_ax.legend(loc="best", fontsize=8)
    if len(canaries):
        marked = canaries.assign(minutes=(finished - start).dt.total_seconds() / 60)
        _passes_beside(load_ax, marked)
    load_ax.set_ylabel("cores")
    load_ax.set_ylim(bottom=0)
    if len(canaries):
        disturbed = marked.apply(_disturbed, axis=1)
        canary_ax.plot(marked["minutes"][~disturbed], marked["canary_ratio"][~disturbed], "o", markersize=3,
                       label="a pass's canary")
        canary_ax.plot(marked["minutes"][disturbed], marked["canary_ratio"][disturbed], "x", color="red",
                       markersize=6, label=f"a pass with over {MARKED_SHARE:.0%} of its samples disturbed")
        canary_ax.axhline(1 + SLOW_PHASE, linestyle=":", color="gray", label=f"+{SLOW_PHASE:.0%}: marked slow")
        canary_ax.legend(loc="best", fontsize=8)
    canary_ax.set_xlabel("minutes since the run began")
    canary_ax.set_ylabel("canary time / calibrated")
    fig.suptitle("Other processes' load and the machine's speed during the run", fontsize=11)
    return fig


def _passes_beside(ax: Any, marked: pd.DataFrame) -> None:
    """Each CPU pass's own reading of the cores other processes kept busy while it was timed (`other_cores`), at
    the time its cell finished, over the line from which it is `busy`."""
    if "other_cores" not in marked or marked["other_cores"].isna().all():
        return
    ax.plot(marked["minutes"], marked["other_cores"], "^", markersize=4, label="busy cores while a pass was timed")
    ax.axhline(BUSY_WARN_CORES, linestyle=":", color="gray", label=f"{BUSY_WARN_CORES}: the pass marked busy")
    ax.legend(loc="best", fontsize=8)


def _timeline(metas: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Every run's load samples at their absolute time."""
    frames = []
    for meta in metas:
        samples, began = meta.get("timeline") or [], meta.get("timeline_started")
        if samples and began:
            frame = pd.DataFrame(samples)
            frame["at"] = pd.Timestamp(began) + pd.to_timedelta(frame["t"], unit="s")
            frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["at", "other_cores", "steal_cores"])
    return pd.concat(frames, ignore_index=True).sort_values("at")


def _disturbed(row: pd.Series) -> bool:
    share = row.get("disturbed_share")
    return row.get("stop") == Stop.DISTURBED or (share is not None and not pd.isna(share) and share > MARKED_SHARE)

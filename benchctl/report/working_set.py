"""The working-set chart: each pass's achieved GB/s against the bytes it moves, under the rate a copy of each
size reached in this machine's calibration (`copy_sizes`, the ceiling `pct_of_peak` holds a byte-bound pass to:
machine/caches.py), with each cache level's capacity marked, one panel per device.

A pass's distance under the line is how far it is from a copy of its size; where the line falls past a capacity
(or before it, where a VM's share of a cache is less than the cache), a working set stops fitting. A pass whose
FLOPs bound it sits far under the line by design: its `% of peak` is held to the matmul rate instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import pandas as pd

from benchctl.machine import caches
from benchctl.report.charts import DEVICE_LABELS, DEVICES, figure_grid, finish, impl_colors, ordered
from benchctl.report.log_axis import tidy_log
from benchctl.vocab import Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MIB = 2 ** 20


def working_set_figure(rows: pd.DataFrame, peaks: Mapping[str, Mapping[str, Any]]) -> "Figure | None":
    """None where no device with rated passes has a calibration that timed copies by size."""
    ok = rows[(rows["status"] == Status.OK) & (rows["gbps"] > 0) & (rows["bytes"] > 0)] if "gbps" in rows else \
        rows.iloc[0:0]
    devices = [d for d in ordered(ok["device"], DEVICES) if caches.by_copy_size(peaks.get(d, {}))]
    if not devices:
        return None
    fig, axes = figure_grid(1, len(devices), width=8.5)
    for ax, device in zip(axes[0], devices):
        _panel(ax, ok[ok["device"] == device], peaks[device])
        ax.set_title(f"{DEVICE_LABELS.get(device, device)}: each pass against a copy of its size", fontsize=10)
    finish(fig, axes, "GB/s by the bytes a pass moves, under the calibrated copy rate at each size", "")
    return fig


def _panel(ax: "Axes", rows: pd.DataFrame, peak: Mapping[str, Any]) -> None:
    ceilings = caches.levels(peak)
    sizes = sorted({lv.held / MIB for lv in ceilings} | {rows["bytes"].min() / MIB, rows["bytes"].max() / MIB})
    ax.plot(sizes, [caches.level_for(size * MIB, ceilings).gbps for size in sizes], "k-", lw=1.2, gid="copies",
            label="a copy of that size (calibrated)")
    ax.plot([lv.held / MIB for lv in ceilings], [lv.gbps for lv in ceilings], "k.", gid="copies")
    for (name, level), style in zip(sorted(peak.get("levels", {}).items()), (":", "--", "-.")):
        ax.axvline(level["bytes"] / MIB, color="gray", ls=style, lw=0.9, label=f"{name} capacity")
    flop_bound = _flop_bound(rows, ceilings)
    colors = impl_colors(rows["op"])  # an operator's colour, its two kinds of pass alike
    for op, part in rows.groupby("op", sort=True):
        by_flops, color = flop_bound[part.index], colors[op]
        ax.scatter(part["bytes"][~by_flops] / MIB, part["gbps"][~by_flops], s=16, color=color, label=str(op))
        ax.scatter(part["bytes"][by_flops] / MIB, part["gbps"][by_flops], s=16, facecolors="none", edgecolors=color)
    if flop_bound.any():
        ax.scatter([], [], s=16, facecolors="none", edgecolors="gray", label="hollow: bound by its FLOPs")
    ax.set_xscale("log"), ax.set_yscale("log")
    tidy_log(ax, "x"), tidy_log(ax, "y")
    ax.set_xlabel("bytes the pass moves (MiB)"), ax.set_ylabel("achieved GB/s")
    ax.grid(True, which="both", alpha=0.3)


def _flop_bound(rows: pd.DataFrame, ceilings: list[caches.Level]) -> pd.Series:
    """The passes whose `% of peak` is held to their FLOPs at the matmul rate: over the share their GB/s is of a
    copy of their size (their FLOP bound is the longer)."""
    copy_gbps = rows["bytes"].map(lambda nbytes: caches.level_for(nbytes, ceilings).gbps)
    return rows["pct_of_peak"].fillna(0.0) > 100.0 * rows["gbps"] / copy_gbps * 1.001

"""The roofline chart: achieved GFLOP/s against arithmetic intensity under the machine's measured roofs
when FLOPs are known, else achieved GB/s along the sweep axis under the measured bandwidth."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import numpy as np
import pandas as pd

from benchctl.report.charts import DEVICE_LABELS, DEVICES, figure_grid, finish, impl_colors, ordered, scale_x
from benchctl.report.log_axis import tidy_log
from benchctl.vocab import PASS_LABELS, Pass, Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PASS_MARKERS = {Pass.FORWARD: "o", Pass.BACKWARD: "s", Pass.FORWARD_BACKWARD: "^"}
LEVEL_STYLES = ("--", ":", "-.")  # each cache level's roof, smallest first


def roofline_figure(df: pd.DataFrame, title: str, peaks: Mapping[str, Mapping[str, float]] | None = None
                    ) -> "Figure | None":
    """Achieved throughput per device: GFLOP/s against arithmetic intensity under the measured roofs
    when FLOPs are known, else GB/s against the sweep axis; None when no row has rates."""
    ok = df[(df["status"] == Status.OK) & df["gbps"].notna()] if "gbps" in df else df.iloc[0:0]
    if ok.empty:
        return None
    devices = ordered(ok["device"], DEVICES)
    fig, axes = figure_grid(1, len(devices), width=6.0)
    colors = impl_colors(df["impl"])
    for ax, device in zip(axes[0], devices):
        rows, peak = ok[ok["device"] == device], dict((peaks or {}).get(device, {}))
        if bool((rows["flops"].fillna(0) > 0).all() and (rows["bytes"].fillna(0) > 0).all()):
            _roofline_panel(ax, rows, colors, peak)
        else:
            _bandwidth_panel(ax, rows, colors, peak)
        known = "vs measured peak" if peak else "achieved (peak not measured)"
        ax.set_title(f"{DEVICE_LABELS.get(device, device)}: {known}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    finish(fig, axes, f"{title}: roofline", "")
    return fig


def _roofline_panel(ax: "Axes", rows: pd.DataFrame, colors: dict, peak: Mapping[str, float]) -> None:
    intensity = rows["flops"] / rows["bytes"]
    for (impl, pass_name), idx in rows.groupby(["impl", "pass"], sort=True).groups.items():
        ax.scatter(intensity[idx], rows.loc[idx, "gflops"], color=colors[impl], s=22,
                   marker=PASS_MARKERS.get(pass_name, "o"), label=f"{impl} {PASS_LABELS.get(pass_name, pass_name)}")
    if peak.get("gbps") and peak.get("gflops"):
        xs = np.logspace(np.log10(intensity.min() / 4), np.log10(max(intensity.max() * 4,
                         4 * peak["gflops"] / peak["gbps"])), 200)
        ax.plot(xs, np.minimum(peak["gflops"], xs * peak["gbps"]), color="black", lw=1.2,
                label=f"roof: {peak['gbps']:.0f} GB/s, {peak['gflops']:.0f} GFLOP/s", gid="roof")
        for name, level, style in _levels(peak):  # a working set held in a cache is read at its rate
            ax.plot(xs, np.minimum(peak["gflops"], xs * level["gbps"]), color="black", lw=0.9, ls=style, gid="roof",
                    label=_level_label(name, level))
    ax.set_xscale("log"), ax.set_yscale("log")
    tidy_log(ax, "x"), tidy_log(ax, "y")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)"), ax.set_ylabel("achieved GFLOP/s")


def _bandwidth_panel(ax: "Axes", rows: pd.DataFrame, colors: dict, peak: Mapping[str, float]) -> None:
    for (impl, pass_name), series in rows.groupby(["impl", "pass"], sort=True):
        series = series.sort_values("axis_value")
        ax.plot(series["axis_value"], series["gbps"], color=colors[impl], marker=PASS_MARKERS.get(pass_name, "o"),
                ms=4, label=f"{impl} {PASS_LABELS.get(pass_name, pass_name)}")
    if peak.get("gbps"):
        ax.axhline(peak["gbps"], color="black", lw=1.2, label=f"peak {peak['gbps']:.0f} GB/s", gid="roof")
    for name, level, style in _levels(peak):
        ax.axhline(level["gbps"], color="black", lw=0.9, ls=style, gid="roof", label=_level_label(name, level))
    scale_x(ax, str(rows["axis"].iloc[0]), rows["axis_value"].to_numpy(dtype=float))
    ax.set_yscale("log"), ax.set_ylabel("achieved GB/s")
    tidy_log(ax)


def _levels(peak: Mapping) -> list[tuple[str, Mapping[str, float], str]]:
    """The calibrated cache levels (name, its capacity and copy rate, its line style), smallest first."""
    return [(name, level, style) for (name, level), style in zip(sorted(peak.get("levels", {}).items()), LEVEL_STYLES)]


def _level_label(name: str, level: Mapping[str, float]) -> str:
    """The level's roof: the rate of its copy, and the copy's size where the calibration kept it (a copy of the
    level's whole capacity can be far slower: the working-set chart draws copies by size)."""
    capacity = f"{level['bytes'] / 2**20:.3g} MiB"
    if not level.get("copy_bytes"):
        return f"{name} {level['gbps']:.0f} GB/s (within {capacity})"
    return f"{name} {level['gbps']:.0f} GB/s (a copy of {level['copy_bytes'] / 2**20:.3g} MiB; holds {capacity})"

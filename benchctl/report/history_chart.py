"""One history chart: a pass of an operator on one device and machine kind, its time against the commit,
a line per implementation (and params, where they vary) with its 95% intervals as a band, each step
marked between the two commits it lies between and labelled with the commit after it and its verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from benchctl.report.charts import figure_grid, impl_colors, panel_title
from benchctl.results.history import Point, Series
from benchctl.results.steps import Step
from benchctl.results.verdict import FASTER, SLOWER

if TYPE_CHECKING:
    from matplotlib.figure import Figure

VERDICT_COLORS = {SLOWER: "#c62828", FASTER: "#2e7d32"}  # other verdicts: grey


def commit_axis(series: Sequence[Series]) -> list[str]:
    """The x axis: every point's label once, in the order the series put them (each already ordered by
    commit), merged so that a label comes after every label before it in any series."""
    order: list[str] = []
    for s in series:
        at = 0
        for p in s.points:
            if p.label in order:
                at = order.index(p.label) + 1
            else:
                order.insert(at, p.label)
                at += 1
    return order


def line_label(s: Series, varying: bool) -> str:
    cell = s.cell
    return f"{cell['impl']} ({cell['dtype']}, {cell['params']})" if varying else cell["impl"]


def history_figure(series: Sequence[Series], found: Sequence[Step], title: str) -> "Figure":
    axis = commit_axis(series)
    fig, axes = figure_grid(1, 1, width=max(6.0, 0.45 * len(axis) + 3))
    ax = axes[0][0]
    colors = impl_colors(s.cell["impl"] for s in series)
    varying = len({(s.cell["dtype"], s.cell["params"]) for s in series}) > 1
    for s in series:
        _draw(ax, s, axis, colors[s.cell["impl"]], line_label(s, varying))
    for step in found:
        _mark(ax, step, axis)
    first = series[0].cell
    ax.set_title(f"{title}: {panel_title(first['device'], first['pass'])}", fontsize=10)
    ax.set_xticks(range(len(axis)), axis, rotation=60, ha="right", fontsize=8, family="monospace")
    ax.set_xlabel("commit of the measured code (* uncommitted changes)")
    ax.set_ylabel("time per call (ms)")
    ax.set_yscale("log")
    from matplotlib.ticker import ScalarFormatter

    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(ScalarFormatter())
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return fig


def _draw(ax, s: Series, axis: list[str], color, label: str) -> None:
    x = np.array([axis.index(p.label) for p in s.points])
    ms = lambda values: np.array(values) * 1e3  # noqa: E731
    ax.fill_between(x, ms([p.ci_lo_s for p in s.points]), ms([p.ci_hi_s for p in s.points]), color=color,
                    alpha=0.2, linewidth=0)
    ax.plot(x, ms([p.median_s for p in s.points]), "-o", color=color, label=label, markersize=4)
    noisy = [i for i, p in enumerate(s.points) if _noisy(p)]
    if noisy:
        ax.plot(x[noisy], ms([s.points[i].median_s for i in noisy]), "o", markersize=8, markerfacecolor="white",
                color=color, label=f"{label}: noisy run")


def _noisy(p: Point) -> bool:
    value = p.row.get("noisy")
    return bool(value) if isinstance(value, (bool, np.bool_)) else False


def _mark(ax, step: Step, axis: list[str]) -> None:
    at = (axis.index(step.before.label) + axis.index(step.after.label)) / 2
    color = VERDICT_COLORS.get(step.change.verdict, "#777777")
    ax.axvline(at, color=color, linestyle="--", linewidth=1)
    change = f" {(step.change.ratio - 1) * 100:+.0f}%" if step.change.ratio is not None else ""
    ax.annotate(f"{step.after.label} {step.change.verdict}{change}", (at, 1), xycoords=("data", "axes fraction"),
                xytext=(3, -3), textcoords="offset points", rotation=90, va="top", fontsize=8, color=color)

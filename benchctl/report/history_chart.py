"""One history chart: a pass of an operator on one device and machine kind, its time against the commit,
a line per implementation (and params, where they vary: one line style each) with its 95% intervals as a
band, a hollow marker for a run that did not settle (noisy), each step marked between the two commits it
lies between and labelled with the commit after it, its verdict and change."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Sequence

import numpy as np

from benchctl.report.charts import LINESTYLES, figure_grid, impl_colors, panel_title
from benchctl.analysis.history import Point, Series
from benchctl.analysis.steps import Step
from benchctl.vocab import Verdict

if TYPE_CHECKING:
    from matplotlib.figure import Figure

VERDICT_COLORS = {Verdict.SLOWER: "#c62828", Verdict.FASTER: "#2e7d32"}  # other verdicts: grey
SPREAD = 0.3  # the runs of one commit share its slot, this wide


def commit_axis(series: Sequence[Series]) -> list[str]:
    """The commits of the x axis, once each, in the order the series put them (each already ordered by
    commit), merged so that a commit comes after every commit before it in any series."""
    order: list[str] = []
    for s in series:
        at = 0
        for p in s.points:
            if p.label in order:
                at = max(at, order.index(p.label) + 1)
            else:
                order.insert(at, p.label)
                at += 1
    return order


def positions(s: Series, axis: list[str]) -> np.ndarray:
    """Each point's x: its commit's slot, the runs of one commit spread across it in their order."""
    labels = [p.label for p in s.points]
    out = []
    for i, label in enumerate(labels):
        runs, nth = labels.count(label), labels[:i].count(label)
        out.append(axis.index(label) + (SPREAD * (nth / (runs - 1) - 0.5) if runs > 1 else 0.0))
    return np.array(out)


def variant(s: Series, varying: Sequence[str]) -> str:
    """The params (and dtype) that tell this series from the others in its chart, e.g. "batch_size=64"."""
    params = json.loads(s.cell["params"] or "{}") if s.cell["params"].startswith("{") else {}
    values = {**params, "dtype": s.cell["dtype"]}
    return ", ".join(f"{k}={values.get(k)}" for k in varying)


def history_figure(series: Sequence[Series], found: Sequence[Step], title: str) -> "Figure":
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    axis = commit_axis(series)
    fig, axes = figure_grid(1, 1, width=max(7.0, 1.1 * len(axis) + 3))
    ax = axes[0][0]
    colors = impl_colors(s.cell["impl"] for s in series)
    keys = sorted({k for s in series for k in [*json.loads(s.cell["params"] or "{}"), "dtype"]})
    varying = [k for k in keys if len({variant(s, [k]) for s in series}) > 1]
    styles = {v: LINESTYLES[i % len(LINESTYLES)] for i, v in enumerate(sorted({variant(s, varying) for s in series}))}
    for s in series:
        label = " ".join(filter(None, [s.cell["impl"], variant(s, varying)]))
        _draw(ax, s, positions(s, axis), colors[s.cell["impl"]], styles[variant(s, varying)], label)
    for step in found:
        _mark(ax, step, axis)
    first = series[0].cell
    ax.set_title(f"{title}: {panel_title(first['device'], first['pass'])}", fontsize=10)
    ax.set_xticks(range(len(axis)), axis, rotation=45, ha="right", fontsize=8, family="monospace")
    ax.set_xlim(-0.5, len(axis) - 0.5)
    ax.set_xlabel("commit of the measured code (* uncommitted changes); hollow: a noisy run")
    ax.set_ylabel("time per call (ms), 95% interval")
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # labels inside a decade too
    ax.yaxis.set_major_formatter(FormatStrFormatter("%.3g"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def _draw(ax, s: Series, x: np.ndarray, color, style: str, label: str) -> None:
    ms = lambda values: np.array(values) * 1e3  # noqa: E731
    ax.fill_between(x, ms([p.ci_lo_s for p in s.points]), ms([p.ci_hi_s for p in s.points]), color=color,
                    alpha=0.15, linewidth=0)
    ax.plot(x, ms([p.median_s for p in s.points]), style, marker="o", color=color, label=label, markersize=4)
    noisy = [i for i, p in enumerate(s.points) if _noisy(p)]
    if noisy:
        ax.plot(x[noisy], ms([s.points[i].median_s for i in noisy]), "o", markersize=8, markerfacecolor="white",
                color=color)


def _noisy(p: Point) -> bool:
    value = p.row.get("noisy")
    return bool(value) if isinstance(value, (bool, np.bool_)) else False


def _mark(ax, step: Step, axis: list[str]) -> None:
    at = axis.index(step.after.label) - 0.5
    color = VERDICT_COLORS.get(step.change.verdict, "#777777")
    ax.axvline(at, color=color, linestyle="--", linewidth=1)
    change = f" {(step.change.ratio - 1) * 100:+.0f}%" if step.change.ratio is not None else ""
    ax.annotate(f"{step.series.cell['impl']} {step.change.verdict}{change} at {step.after.label}", (at, 1),
                xycoords=("data", "axes fraction"), xytext=(3, -3), textcoords="offset points", rotation=90,
                va="top", fontsize=7, color=color)

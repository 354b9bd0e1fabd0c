"""One history chart: a pass of an operator on one device and machine kind, its time against the commit,
a line per implementation (and params, where they vary: one line style each) with its 95% intervals as a
band, a hollow marker for a run that did not settle (noisy), a hollow triangle on one timed in a slow phase of
the machine (its canary over SLOW_PHASE slower than calibrated: where a step lies between such runs and runs at
speed, the machine may have made it, and the step's verdict says so) and a cross on one the step search leaves out
(stopped disturbed, or timed beside other work), each step marked between the two commits it lies between
and labelled with the commit after it, its verdict and change; and below, for the series timed against one
unchanged partner, that time, in which their steps were found (analysis/sides.py)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Sequence

import numpy as np

from benchctl.report.charts import LINESTYLES, figure_grid, impl_colors, panel_title
from benchctl.analysis import sides, steps
from benchctl.analysis.history import Point, Series
from benchctl.analysis.steps import Step
from benchctl.analysis.verdict import CODE_UNCHANGED
from benchctl.results.schema import slow_machine
from benchctl.vocab import Verdict

if TYPE_CHECKING:
    from matplotlib.figure import Figure

VERDICT_COLORS = {Verdict.SLOWER: "#c62828", Verdict.FASTER: "#2e7d32"}
UNSURE_COLOR = "#777777"  # other verdicts, and any step where the cell's code did not change
SPREAD = 0.3  # the runs of one commit share its slot, this wide
# Steps at one commit labelled each beside the others; more are counted in one label (the page's table lists
# them): eight labels at one commit ran over the points of the next.
SIDE_BY_SIDE = 3
WIDE = 4.0  # a panel of times against the partner whose levels span more than this factor is drawn on a log scale


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
    """The time panel, and below it, where a series was timed against one unchanged partner throughout
    (analysis/sides.py), the panel of that time against the partner, in which its steps were sought."""
    axis = commit_axis(series)
    paired = [s for s in series if sides.partner([s.points[i].row for i in steps.searched(s.points)])]
    fig, axes = figure_grid(2 if paired else 1, 1, width=max(7.0, 1.1 * len(axis) + 3))
    colors = impl_colors(s.cell["impl"] for s in series)
    keys = sorted({k for s in series for k in [*json.loads(s.cell["params"] or "{}"), "dtype"]})
    varying = [k for k in keys if len({variant(s, [k]) for s in series}) > 1]
    styles = {v: LINESTYLES[i % len(LINESTYLES)] for i, v in enumerate(sorted({variant(s, varying) for s in series}))}
    panels = [(axes[0][0], series, "time per call (ms), 95% interval", False)]
    panels += [(axes[1][0], paired, "time against its partner (own / partner)", True)] if paired else []
    for ax, shown, ylabel, relative in panels:
        for s in shown:
            label = " ".join(filter(None, [s.cell["impl"], variant(s, varying)]))
            _draw(ax, *_levels(s, axis, relative), colors[s.cell["impl"]], styles[variant(s, varying)], label)
        for group in _by_commit(found).values():
            if len(group) > SIDE_BY_SIDE:
                _mark_many(ax, group, axis)
                continue
            for n, step in enumerate(group):
                _mark(ax, step, axis, n)
        _axes(ax, axis, ylabel, log=not relative or _wide(ax))
    first = series[0].cell
    axes[0][0].set_title(f"{title}: {panel_title(first['device'], first['pass'])}", fontsize=10)
    return fig


def _wide(ax) -> bool:
    """Its levels span over WIDE times their lowest: on a linear scale all but the highest would sit on one line
    (grid_sample's py-imagegrad backward reads 113x its partner beside cpp's 0.5x)."""
    low, high = ax.dataLim.intervaly
    return bool(low > 0 and high > WIDE * low)


def _axes(ax, axis: list[str], ylabel: str, log: bool) -> None:
    """Commits on x; times on a log scale, a time against the partner (near 1) on a linear one unless it spans
    far more (_wide)."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    ax.set_xticks(range(len(axis)), axis, rotation=45, ha="right", fontsize=8, family="monospace")
    ax.set_xlim(-0.5, len(axis) - 0.5)
    ax.set_xlabel("commit of the measured code (* uncommitted changes)\nhollow: a noisy run; ^: a run in a slow "
                  "phase;\nx: a run stopped disturbed or timed beside other work, left out of the step search",
                  fontsize=9)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # labels inside a decade too
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FormatStrFormatter("%.3g"))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))


def _levels(s: Series, axis: list[str], relative: bool) -> tuple[list[Point], np.ndarray, np.ndarray, list[int]]:
    """The runs drawn, where they sit on the x axis, their levels, and which of them the step search leaves
    out (steps.searched): every run's time (ms), or the time against the partner of the runs it reads."""
    kept = steps.searched(s.points)
    if not relative:
        left_out = [i for i in range(len(s.points)) if i not in kept]
        return list(s.points), positions(s, axis), sides.own_levels(s.points) * 1e3, left_out
    runs = [s.points[i] for i in kept]
    return runs, positions(s, axis)[kept], sides.levels(runs), []


def _draw(ax, runs: list[Point], x: np.ndarray, levels: np.ndarray, left_out: list[int], color, style: str,
          label: str) -> None:
    """Runs' levels (median, low, high a row: their times, or their time against the partner) and band."""
    ax.fill_between(x, levels[:, 1], levels[:, 2], color=color, alpha=0.15, linewidth=0)
    ax.plot(x, levels[:, 0], style, marker="o", color=color, label=label, markersize=4)
    noisy = [i for i, p in enumerate(runs) if _noisy(p)]
    if noisy:
        ax.plot(x[noisy], levels[noisy, 0], "o", markersize=8, markerfacecolor="white", color=color)
    slow = [i for i, p in enumerate(runs) if slow_machine(p.row)]
    if slow:
        ax.plot(x[slow], levels[slow, 0], "^", markersize=10, markerfacecolor="none", color=color)
    if left_out:
        ax.plot(x[left_out], levels[left_out, 0], "x", markersize=10, markeredgewidth=2, color=color)


def _noisy(p: Point) -> bool:
    value = p.row.get("noisy")
    return bool(value) if isinstance(value, (bool, np.bool_)) else False


def _by_commit(found: Sequence[Step]) -> dict[str, list[Step]]:
    groups: dict[str, list[Step]] = {}
    for step in found:
        groups.setdefault(step.after.label, []).append(step)
    return groups


def _mark_many(ax, group: Sequence[Step], axis: list[str]) -> None:
    """One line and one label for the steps at one commit: how many, by verdict (the page's table lists them); in
    their verdict's colour where they share one and the code changed there, else grey."""
    at = axis.index(group[0].after.label) - 0.5
    verdicts = sorted({s.change.verdict for s in group})
    unchanged = all(s.code_unchanged for s in group)
    color = VERDICT_COLORS.get(verdicts[0], UNSURE_COLOR) if len(verdicts) == 1 and not unchanged else UNSURE_COLOR
    counts = ", ".join(f"{sum(s.change.verdict == v for s in group)} {v}" for v in verdicts)
    said = f"{len(group)} steps" + (f", {CODE_UNCHANGED}" if unchanged else "")
    _line(ax, at, color, f"{said}:\n{counts}", 0)


def _line(ax, at: float, color: str, text: str, before: int) -> None:
    """A step's dashed line at `at` and its label down from the top, beside the `before` labels already there."""
    ax.axvline(at, color=color, linestyle="--", linewidth=1)
    ax.annotate(text, (at, 1), xycoords=("data", "axes fraction"), xytext=(3 + 9 * before, -3),
                textcoords="offset points", rotation=90, va="top", fontsize=7, color=color)


def _mark(ax, step: Step, axis: list[str], before: int) -> None:
    """The step's line and label, in its verdict's colour unless the cell's code did not change there (grey,
    and said); `before`: the steps already marked at the same commit, whose labels this one's stands beside."""
    at = axis.index(step.after.label) - 0.5
    color = UNSURE_COLOR if step.code_unchanged else VERDICT_COLORS.get(step.change.verdict, UNSURE_COLOR)
    c = step.change
    ratio = c.relative if c.by_pairs else c.ratio
    change = f" {(ratio - 1) * 100:+.0f}%" if ratio is not None else ""
    unchanged = f", {CODE_UNCHANGED}" if step.code_unchanged else ""
    _line(ax, at, color, f"{step.series.cell['impl']} {c.verdict}{change} at {step.after.label}{unchanged}", before)

"""Result rows -> matplotlib figures: time against the sweep axis and speedup over a baseline (the
roofline is in roofline.py), and the helpers every chart shares.

Figures use matplotlib's object API on an Agg canvas (never pyplot): nothing is shown, no global figure
list grows across a long report, and tests can inspect the returned Figure before it is saved.
matplotlib is imported inside functions so that importing this module (and `benchctl --help`) stays fast.
"""

from __future__ import annotations

import json
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np
import pandas as pd

from benchctl.report import compile_marks, earlier_marks, pair_marks, repeat_marks
from benchctl.report.log_axis import tidy_log
from benchctl.report.speedups import ci_bars, intervals, speedups
from benchctl.analysis.timed_alike import timing_kinds
from benchctl.analysis.summary import axis_value_text
from benchctl.vocab import DEVICES, FAILED, PASS_LABELS, PASSES, Device, Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DEVICE_LABELS, LINESTYLES = {Device.CPU: "CPU", Device.CUDA: "GPU"}, ("-", "--", ":", "-.")
ROOF_BYTES = {False: "copy GB/s of the level they fit", True: "DRAM copy GB/s (caches flushed)"}


def params_of(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) and text else {}
    except ValueError:
        return {"params": text}
    return value if isinstance(value, dict) else {"params": value}


def with_groups(df: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Adds `group`: the non-axis params (and dtype) that vary within `df`, e.g. "H=256".

    Params fixed across the frame go to the returned description (a figure subtitle), so a line label
    only carries what tells two lines apart. A param left unset (None, e.g. lstm_cell's I, which then
    follows H) says nothing and is left out."""
    rows = [{**{k: json.dumps(v) for k, v in params_of(p).items() if k != a and v is not None}, "dtype": json.dumps(d)}
            for p, a, d in zip(df["params"], df["axis"], df["dtype"])]
    keys = sorted(set().union(*rows)) if rows else []
    varying = [k for k in keys if len({r.get(k) for r in rows}) > 1]
    fixed = ", ".join(f"{k}={_plain(rows[0][k])}" for k in keys if k not in varying and k in rows[0])
    groups = [", ".join(f"{k}={_plain(r.get(k, 'null'))}" for k in varying) for r in rows]
    return df.assign(group=groups), fixed


def _plain(value_json: str) -> str:
    return value if isinstance(value := json.loads(value_json), str) else json.dumps(value)


def series_label(impl: str, group: str) -> str:
    return f"{impl} ({group})" if group else impl


def panel_title(device: str, pass_name: str) -> str:
    return f"{DEVICE_LABELS.get(device, device)} {PASS_LABELS.get(pass_name, pass_name)}"


def ordered(values: Iterable[str], order: tuple[str, ...]) -> list[str]:
    """Known names in their natural order first (CPU before GPU, forward before backward), then the rest."""
    present = {v for v in values if isinstance(v, str)}
    return [v for v in order if v in present] + sorted(present - set(order))


def resolve_baseline(impls: Iterable[str], requested: str | None = None) -> tuple[str, str]:
    """The implementation speedups are measured against, and a note when it is not the one asked for."""
    names = sorted(set(impls))
    wanted = requested or "py"
    if wanted in names or not names:
        return wanted, ""
    return names[0], f"baseline {wanted!r} is not in these results; using {names[0]!r}"


def iqr_bars(ok: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Distances from the median to the quartiles, from the raw samples where stored (the spread is
    rarely symmetric), else half the stored IQR each side."""
    lo, hi = [], []
    for med, iqr, samples in zip(ok["median_s"], ok["iqr_s"], ok["samples_s"]):
        if samples is not None and len(samples) >= 2:
            q1, q3 = np.percentile(np.asarray(samples, dtype=float), [25, 75])
            lo.append(max(med - q1, 0.0)), hi.append(max(q3 - med, 0.0))
        else:
            half = 0.0 if iqr is None or pd.isna(iqr) else iqr / 2
            lo.append(min(half, med * 0.99)), hi.append(half)  # a log axis cannot reach zero
    return np.asarray(lo), np.asarray(hi)


def figure_grid(nrows: int, ncols: int, width: float = 4.8) -> tuple["Figure", np.ndarray]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * ncols, 3.7 * nrows + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def impl_colors(impls: Iterable[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {impl: cmap(i % 10) for i, impl in enumerate(sorted(set(impls)))}


def scale_x(ax: "Axes", axis: str, values: np.ndarray) -> None:
    """log2 for batch sizes and other power-of-two sweeps, log10 for wide ranges, else linear."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    values = np.unique(values[np.isfinite(values)])
    ax.set_xlabel(axis)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: axis_value_text(v)))  # never "x1e6"
    if len(values) == 0 or values.min() <= 0:
        return
    pow2 = bool(np.all(np.log2(values) == np.round(np.log2(values))))
    if axis == "batch_size" or (pow2 and len(values) > 2):
        ax.set_xscale("log", base=2)
        ax.set_xlim(values.min() / 2**0.3, values.max() * 2**0.3)  # also where only failure marks are drawn
        ax.xaxis.set_major_locator(FixedLocator(values))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: power_of_two_text(v)))
    elif values.max() / values.min() > 20:
        ax.set_xscale("log")
        tidy_log(ax, "x")


def power_of_two_text(value: float) -> str:
    """A tick of a power-of-two axis: plain up to 8192, then 2^14, 2^20 (a plain 1048576 crowds the axis)."""
    exponent = np.log2(value) if value > 0 else 0.0
    return f"$2^{{{int(exponent)}}}$" if value > 8192 and float(exponent).is_integer() else axis_value_text(value)


def _mark_failed(ax: "Axes", failed: pd.DataFrame, colors: dict[str, Any]) -> None:
    """An x at the panel bottom for each failed cell, its status written once per series above them."""
    right = float(np.nanmax(failed["axis_value"])) if failed["axis_value"].notna().any() else 0.0
    for i, ((impl, group, status), rows) in enumerate(failed.groupby(["impl", "group", "status"], sort=True)):
        y = 0.04 + 0.09 * (i % 8)  # stagger series so their markers and labels do not cover each other
        xs = np.sort(rows["axis_value"].to_numpy(dtype=float))
        xs, where = (xs[np.isfinite(xs)], ax.get_xaxis_transform()) if np.isfinite(xs).any() \
            else (np.array([0.03]), ax.transAxes)  # no axis value: still shown, at the left edge
        art = ax.scatter(xs, [y] * len(xs), marker="x", s=36, color=colors[impl], zorder=5,
                         transform=where, clip_on=False, label="_failed")
        art.set_gid(f"failed:{status}")
        at_right = len(xs) == 1 and xs[0] == right and where is not ax.transAxes
        ax.annotate(f"{series_label(impl, group)}: {status}", (xs[0], y), xycoords=where, xytext=(0, 5),
                    textcoords="offset points", fontsize=7, color=colors[impl], va="bottom",
                    ha="right" if at_right else "left")


def _line_panel(ax: "Axes", cell: pd.DataFrame, y_col: str, colors: dict, styles: dict) -> bool:
    """One line per (implementation, param group) with bars: the IQR on times, how far each speedup moves
    (speedups.intervals); returns whether anything was drawn."""
    drawn = False
    for (impl, group), series in cell.groupby(["impl", "group"], sort=True):
        ok = series[(series["status"] == Status.OK) & series[y_col].notna()].sort_values("axis_value")
        if ok.empty:
            continue
        label, scale = series_label(impl, group), (1e3 if y_col == "median_s" else 1.0)
        yerr = [b * scale for b in iqr_bars(ok)] if y_col == "median_s" else ci_bars(ok)
        x, y = ok["axis_value"].to_numpy(dtype=float), ok[y_col].to_numpy(dtype=float) * scale
        bars = ax.errorbar(x, y, yerr=yerr, color=colors[impl], ls=styles[group],
                           marker="o", ms=3.5, capsize=2, lw=1.4, label=label)
        bars.lines[0].set_gid(f"series:{label}")  # the data line (the container holds the label)
        drawn = True
    return drawn


def finish(fig: "Figure", axes: np.ndarray, title: str, subtitle: str) -> None:
    handles: dict[str, Any] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="outside right center", fontsize=8)
    fig.suptitle(f"{title}\n{subtitle}" if subtitle else title, fontsize=11)


def _panel_figure(df: pd.DataFrame, title: str, subtitle: str,
                  draw: Callable[["Axes", pd.DataFrame, dict, dict], None]) -> "Figure":
    """A panel per device x pass (CPU above GPU, forward left of backward) sharing colours per
    implementation and line styles per param group; `draw` fills one panel's y axis."""
    devices, passes = ordered(df["device"], DEVICES), ordered(df["pass"], PASSES)
    fig, axes = figure_grid(len(devices), len(passes))
    colors = impl_colors(df["impl"])
    styles = {g: LINESTYLES[i % len(LINESTYLES)] for i, g in enumerate(sorted(df["group"].unique()))}
    for (r, device), (c, pass_name) in product(enumerate(devices), enumerate(passes)):
        ax, panel = axes[r][c], df[(df["device"] == device) & (df["pass"] == pass_name)]
        draw(ax, panel, colors, styles)
        scale_x(ax, str(df["axis"].iloc[0]), df["axis_value"].to_numpy(dtype=float))
        ax.set_title(panel_title(device, pass_name) + timed_as(panel))
        ax.grid(True, which="both", alpha=0.3)
    finish(fig, axes, title, subtitle)
    return fig


def timed_as(panel: pd.DataFrame) -> str:
    """How a panel's times were taken, where not eager on warm caches (` (cuda_graph)`): a graph replay leaves the
    host out and reads several times faster, so a chart must say which it shows; by its timed rows where it has any."""
    kinds = set(timing_kinds(panel[panel["median_s"].notna()] if panel["median_s"].notna().any() else panel))
    return kinds.pop() if len(kinds) == 1 else " (timed in several ways)" if kinds else ""


def floors(cell: pd.DataFrame) -> pd.DataFrame:
    """The roofline time per param group and axis value (pct_of_peak's bound, measure/rates.py): bytes over the
    copy GB/s of the cache level their total fits in, or FLOPs over the peak, whichever is longer. Not a floor
    (trust.below_floor's takes the fastest level): a pass whose inputs stay in cache between calls goes under
    it. Where implementations count different FLOPs, the lowest bound is drawn."""
    ok = cell[(cell["status"] == Status.OK) & cell["pct_of_peak"].notna() & cell["median_s"].notna()]
    bound = ok.assign(floor_s=ok["median_s"] * ok["pct_of_peak"] / 100.0)
    return bound.groupby(["group", "axis_value"], as_index=False)["floor_s"].min()


def _draw_floors(ax: "Axes", cell: pd.DataFrame) -> None:
    cold = cell.reindex(columns=["flush_l2"])["flush_l2"].eq(True).any()  # a flushed pass is held against DRAM
    for group, floor in floors(cell).groupby("group", sort=True):
        ax.plot(floor["axis_value"], floor["floor_s"] * 1e3, color="black", ls=":", lw=1.2, marker="_", label=(
            f"roofline: bytes / {ROOF_BYTES[bool(cold)]}, or FLOPs / peak"), gid=f"roofline:{group}")


def _timing_panel(ax: "Axes", cell: pd.DataFrame, colors: dict, styles: dict) -> None:
    if _line_panel(ax, cell, "median_s", colors, styles):
        _draw_floors(ax, cell)
        earlier_marks.mark(ax, cell, colors)  # before the limits are set below: the bars widen them
        ax.set_yscale("log")
    else:
        ax.text(0.5, 0.6, "no successful measurements", ha="center", transform=ax.transAxes, color="gray")
        ax.set_yticks([])
    failed = cell[cell["status"].isin(FAILED)]
    if ax.get_yscale() == "log":
        if len(failed):  # room below the data, so failure markers never sit on top of a line
            (lo, hi), n = ax.get_ylim(), failed.groupby(["impl", "group", "status"]).ngroups
            ax.set_ylim(lo / (hi / lo) ** (0.1 + 0.12 * min(n, 8)), hi)
        tidy_log(ax)
    _mark_failed(ax, failed, colors)
    compile_marks.mark_recompiles(ax, cell)
    pair_marks.mark_partners(ax, cell, colors)
    ax.set_ylabel("median time (ms)")


def timing_figure(df: pd.DataFrame, title: str) -> "Figure":
    """Median time (ms, log) against the sweep axis: a panel per device x pass, a line per implementation,
    and the roofline where the machine's peaks are calibrated."""
    df, fixed = with_groups(df)
    return _panel_figure(df, title, fixed, _timing_panel)


def speedup_figure(df: pd.DataFrame, title: str, baseline: str) -> "Figure | None":
    """Baseline time / implementation time per cell, with how far each moves as bars (the interval of a
    paired one, the range of the rounds' ratios); None when there is nothing to compare."""
    df, fixed = with_groups(df.assign(speedup=speedups(df, baseline), **intervals(df, baseline)))
    if df[(df["impl"] != baseline) & df["speedup"].notna()].empty:
        return None

    def draw(ax: "Axes", cell: pd.DataFrame, colors: dict, styles: dict) -> None:
        _line_panel(ax, cell[cell["impl"] != baseline], "speedup", colors, styles)
        repeat_marks.mark_earlier(ax, cell, baseline, colors)
        ax.axhline(1.0, color="gray", lw=1, ls="--", label=f"{baseline} (baseline)")
        ax.set_yscale("log")
        tidy_log(ax)
        ax.set_ylabel(f"speedup over {baseline} (x)")

    return _panel_figure(df, f"{title}: speedup over {baseline}", fixed, draw)


def save(fig: "Figure", stem: Path) -> list[Path]:
    """PNG (for the page and quick looks) and SVG (for papers) side by side."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.savefig(paths[0], dpi=110)
    fig.set_layout_engine(None)  # keep the layout just computed, without drawing again to lay it out (the slow part)
    fig.savefig(paths[1])
    return paths

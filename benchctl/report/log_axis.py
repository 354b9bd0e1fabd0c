"""Log axes as people read them: plain numbers on the ticks, and enough of them labelled to read a value off."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from benchctl.analysis.summary import axis_value_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# An axis whose top over its bottom is under this (0.7 of a decade) gets evenly spaced ticks, not a log axis's.
SHORT = 5.0


def tidy_log(ax: "Axes", which: str = "y") -> None:
    """Plain numbers on a log axis ("0.5", "20", not "5x10^-1"), enough of them to read a value off: on an axis
    under SHORT, evenly spaced values (1, 1.2, 1.4, 1.6 from 0.86 to 1.75, where a log axis labels 1 alone); above
    it the minor ticks, all where 2, 3 and 5 would leave under three labels on it, fewer as it grows."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator

    axis, (lo, hi) = (ax.yaxis, ax.get_ylim()) if which == "y" else (ax.xaxis, ax.get_xlim())
    span = hi / lo if lo > 0 else np.inf
    axis.set_major_formatter(FuncFormatter(lambda v, _: tick_text(v)))
    if span < SHORT:
        axis.set_major_locator(MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10]))
        axis.set_minor_locator(NullLocator())
        return
    leads: tuple[int, ...] = (2, 3, 5) if span < 100 else (2, 5) if span < 1000 else ()
    if span < 100 and labels_within(lo, hi, (1, *leads)) < 3:
        leads = tuple(range(2, 10))

    def minor(v: float, _: Any) -> str:
        lead = round(v / 10 ** np.floor(np.log10(v)), 6) if v > 0 else 0
        return tick_text(v) if lead in leads else ""

    axis.set_minor_formatter(FuncFormatter(minor))


def labels_within(lo: float, hi: float, leads: tuple[int, ...]) -> int:
    """How many of lead x 10^k lie within lo..hi (lo > 0)."""
    decades = range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1)
    return sum(lo <= lead * 10.0 ** k <= hi for k in decades for lead in leads)


def tick_text(value: float) -> str:
    return axis_value_text(float(f"{value:.6g}"))  # a log axis's ticks are computed powers: 1.7000000000000002

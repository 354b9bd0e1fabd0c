"""What moves a cell's time between runs of the same code: the machine's probes, read around each pass (trust.py),
held against its time across the folder's runs (history.py).

A slow phase is told by the compute canary (`slow`), and `↻` and `slow↑`/`slow↓` hold a pass against earlier runs
in the same canary state (and, where it follows the memory probe, `memory_followers`, near its memory probe). Over
twelve quick CPU sweeps of one 2-core VM, code unchanged, the memory probe moved more of the passes than the canary
did: of 150 passes, 21 followed it and 6 the canary (11-12 runs each, below).
The memory-bound ones (grid_sample, naflex_posembed, hoconv2d, patch_resample's bmm) followed the memory probe,
lstm_cell's small calls the canary. grid_sample's py forward at image_size=1024 read 0.069-0.075 ms in the
runs whose probe read 73-81 GB/s and 0.12-0.27 ms at 39-58 GB/s: each call reads the same image (fresh.py rotates
its grid only), so what of it the caches still hold decides its time, and the probe, a read of a buffer four times
the last-level cache, feels the same caches (membw.py). A step in such a cell, code unchanged, is the machine's;
a speedup over a cell that does not follow it moves with it.

A GPU pass carries its SM clock instead (gpu_clocks.py), tried the same way (never yet on a GPU's rows).

Each series (one cell and machine kind) is tried against each probe over its runs of the latest code that were left
alone (schema.left_alone) and took the probe, MIN_RUNS of them at least; the p-values of all those tries are
adjusted together (Benjamini-Hochberg, verdict.adjusted), and a cell follows the probe with the smallest adjusted
p under FALSE_DISCOVERY. The two probes move together on that VM (their readings' log correlation 0.69 over 1,799
passes, the memory read fast while the canary ran slow), so a cell that follows one often follows the other
weaker: the stronger names it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from benchctl.analysis.history import Series, series as series_of
from benchctl.analysis.repeat import DIGESTS, where
from benchctl.analysis.summary import ms_text, probed
from benchctl.analysis.verdict import adjusted
from benchctl.results.schema import left_alone


@dataclass(frozen=True)
class Probe:
    """A probe of the machine a row carries."""

    column: str  # the row's
    reading: str  # how a reading is written
    axis: str  # the chart's axis


MEMORY = "memory probe"
PROBES = {MEMORY: Probe("mem_gbps", "{:.3g} GB/s", "memory bandwidth probe, GB/s"),
          "canary": Probe("canary_ratio", "{:.2f}x its calibrated time", "canary time / calibrated"),
          "SM clock": Probe("sm_clock_mhz", "{:.0f} MHz", "SM clock while timed, MHz")}  # a GPU pass's
# What a series' runs are tried by (a pass's time, or its speedup over the partner it was timed in pairs with), and
# the code digests each run must share with its latest for the runs to be of the same code.
VALUES = {"median_s": ("impl_code",), "paired_speedup": DIGESTS}
MIN_RUNS = 6  # runs of the same code, left alone, with the probe: fewer cannot tell a trend from chance
FALSE_DISCOVERY = 0.05  # the share of the cells said to follow a probe that may follow it by chance


@dataclass(frozen=True)
class Follows:
    """A series whose time follows a probe across its runs of the same code: their rank correlation and its
    adjusted p-value, and the runs' (time, probe reading) pairs."""

    series: Series
    probe: str
    rho: float
    q: float
    readings: tuple[tuple[float, float], ...]

    @property
    def spread(self) -> float:
        """The slowest of those runs' times over the fastest."""
        times = [t for t, _ in self.readings]
        return max(times) / min(times)

    def text(self) -> str:
        """`grid_sample/sample py forward at image_size=1024: ` and its `runs_text`."""
        return f"{where(self.series.points[-1].row)}: {self.runs_text()}"

    def runs_text(self) -> str:
        """`0.0688 ms with the memory probe at 80.6 GB/s, 0.265 ms at 42.9 GB/s (rho -0.85 over 11 runs)`: its fastest
        and slowest runs."""
        (fast, at_fast), (slow, at_slow) = min(self.readings), max(self.readings)
        said = PROBES[self.probe].reading.format
        return (f"{ms_text(fast)} ms with the {self.probe} at {said(at_fast)}, {ms_text(slow)} ms at {said(at_slow)} "
                f"(rho {self.rho:+.2f} over {len(self.readings)} runs)")


def readings(s: Series, column: str, value: str = "median_s") -> tuple[tuple[float, float], ...]:
    """(value, probe reading) of the series' runs of its latest code (VALUES; rows without the digests: none) that
    were left alone and took the probe."""
    digests = VALUES[value]
    code = tuple(s.points[-1].row.get(d) for d in digests)
    if not all(isinstance(c, str) for c in code):
        return ()
    return tuple((float(p.row[value]), float(p.row[column])) for p in s.points
                 if tuple(p.row.get(d) for d in digests) == code and left_alone(p.row) and _reading(p.row, column)
                 and _reading(p.row, value))


def _reading(row: pd.Series, column: str) -> bool:
    value = row.get(column)
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def follows(all_series: Sequence[Series], value: str = "median_s",
            false_discovery: float = FALSE_DISCOVERY) -> list[Follows]:
    """The series whose `value` (VALUES) follows a probe, the one it follows most closely, widest spread first."""
    from scipy.stats import spearmanr

    tried = []
    for s in all_series:
        for name, probe in PROBES.items():
            found = readings(s, probe.column, value)
            times, values = [t for t, _ in found], [v for _, v in found]
            if len(found) >= MIN_RUNS and len(set(times)) > 1 and len(set(values)) > 1:
                result = spearmanr(times, values)
                tried.append((s, name, float(result.statistic), float(result.pvalue), found))
    qs = adjusted([p for *_, p, _ in tried])
    best: dict[int, Follows] = {}
    for (s, probe, rho, _, found), q in zip(tried, qs):
        if q is not None and q < false_discovery and (id(s) not in best or q < best[id(s)].q):
            best[id(s)] = Follows(s, probe, rho, q, found)
    return sorted(best.values(), key=lambda f: -f.spread)


def line(found: Sequence[Follows], series: int) -> str | None:
    """The line under `history`'s tables: how many cells follow each probe, and the one of widest spread."""
    if not found:
        return None
    cold = ("; `run --flush-caches` times a cell that follows the memory probe on cold caches, which the caches the "
            "host leaves it do not move (docs/measuring.md, \"What moves a cell between runs\")"
            if any(f.probe == MEMORY for f in found) else "")
    return (f"{len(found)} of {series} cells' times follow the machine across their runs of the same code "
            f"(Spearman, {MIN_RUNS} runs or more, false discovery rate {FALSE_DISCOVERY:.0%}): {_counts(found)}; the "
            f"widest, {found[0].text()}. A step in such a cell is the machine's as much as the code's{cold}")


def _counts(found: Sequence[Follows]) -> str:
    """`14 the memory probe, 2 the canary`: the probes some cell follows, in PROBES' order."""
    counts = {probe: sum(f.probe == probe for f in found) for probe in PROBES}
    return ", ".join(f"{n} the {probe}" for probe, n in counts.items() if n)


def run_line(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> str | None:
    """The line under a run's tables: of its cells, those whose time follows a probe across this run and the
    earlier runs of the folder (repeat.earlier_rows), the widest, and where this run's memory probe read against
    theirs; None where none does."""
    cells = row_cells(rows, earlier)
    found = follows(cells)
    if not found:
        return None
    return (f"{len(found)} of this run's {len(cells)} passes follow the machine across it and the earlier runs of the "
            f"same code in its folder ({_counts(found)}){_memory_text(rows, earlier)}; the widest, {found[0].text()}. "
            "`benchctl history` draws them")


def memory_followers(rows: pd.DataFrame, earlier: pd.DataFrame | None, value: str = "median_s",
                     false_discovery: float = FALSE_DISCOVERY, cells: Sequence[Series] | None = None) -> pd.Series:
    """For each row of `rows`, whether its cell's `value` (VALUES) follows the memory probe across `rows` and the
    earlier runs (`follows`, over the cells of `rows`: `cells`, built here where not given)."""
    flags = pd.Series(False, index=rows.index)
    cells = row_cells(rows, earlier) if cells is None else cells
    for found in (f for f in follows(cells, value, false_discovery) if f.probe == MEMORY):
        flags.iloc[[int(p.row["_row"]) for p in found.series.points if p.row["_row"] >= 0]] = True
    return flags


def row_cells(rows: pd.DataFrame, earlier: pd.DataFrame | None) -> list[Series]:
    """The series of `rows`' cells across `rows` and `earlier`, each point's row with its place in `rows` (`_row`;
    -1 for an earlier run's); none where there are no earlier runs."""
    if earlier is None or earlier.empty or rows.empty:
        return []
    ours = set(rows["run_id"])
    both = pd.concat([earlier.assign(_row=-1), rows.assign(_row=range(len(rows)))], ignore_index=True)
    return [s for s in series_of(both) if any(p.run_id in ours for p in s.points)]


def _memory_text(rows: pd.DataFrame, earlier: pd.DataFrame) -> str:
    """`: the memory probe read a median 58.9 GB/s through this run, 41.4-53.2 in the earlier runs`."""
    here, before = probed(rows)["mem_gbps"], probed(earlier).groupby("run_id")["mem_gbps"].median()
    if here.empty or before.empty:
        return ""
    return (f": the memory probe read a median {here.median():.3g} GB/s through this run, {before.min():.3g}-"
            f"{before.max():.3g} in the earlier runs")

"""Rows -> the end-of-run summary: median ms per implementation x sweep value, and speedup vs the reference."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from benchctl.results import storage
from benchctl.results.schema import (BUSY_WARN_CORES, CELL_COLUMNS, MEMORY_NEAR, SLOW_PHASE, beside_work,
                                     beyond_threads, host_bound, slow_machine)
from benchctl.analysis.absent import absent, present
from benchctl.analysis.speedup import PARTNER_APART, disturbed, present_value, speedup_label
from benchctl.analysis.timed_alike import timing_kinds
from benchctl.vocab import SHOWN_ORDER, Allocator, Device, Status, TimingMode

# A call whose system CPU time (all threads) is at least this share of its median is marked "os": most
# of what was measured is the kernel, e.g. zero-filling fresh pages, not the implementation's own work.
OS_HEAVY = 0.5
# A CPU cell measured while the machine's memory bandwidth (membw.py) was below this share of the run's
# median on that device is marked "mem": other work on the host slowed it, not only its own code.
MEM_SLOW = 0.75


def axis_value_text(value: object) -> str:
    """A swept value as people write it: 1048576, not 1.04858e+06 or 1e+06; 0.25 stays 0.25."""
    v = float(value)  # type: ignore[arg-type]
    return str(int(v)) if v.is_integer() else np.format_float_positional(v, trim="-")


def probed(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows that carry a memory bandwidth probe (`mem_gbps`: CPU rows of runs that took one)."""
    return rows[rows["mem_gbps"].notna()] if "mem_gbps" in rows else rows.iloc[0:0].assign(mem_gbps=[])


# What each mark after a table cell's time says, in the order the legend gives them (`legend`).
MARKS = {
    "±": "the paired speedup's interval, from this run's pairs (its two ends where lopsided)",
    "?": "the speedup does not hold: its rounds disagree on which is faster, a side is disturbed, (not timed in "
         "pairs) one side alone was busy, or (≠ with the canary steady) the pairing moved the reference",
    "≠": f"the reference read over {PARTNER_APART:.0%} off its own row in these pairs: the speedup is the pairs', "
         "not the medians' ratio",
    "↻": "the earlier runs of the same code on this machine in the same state (a slow phase or at speed; for a "
         f"speedup that may follow the memory probe, with it within {MEMORY_NEAR:.0%}) read the speedup outside this "
         "interval, at their median",
    "~": "noisy",
    "dist": "disturbed, too few clean samples",
    "slow": f"the machine's canary over {SLOW_PHASE:.0%} slower than calibrated (a slow phase)",
    "slow↑": f"in a slow phase, and over {SLOW_PHASE:.0%} above the slowest earlier run of the same code at speed "
             f"(for a time that may follow the memory probe, with it within {MEMORY_NEAR:.0%})",
    "slow↓": f"in a slow phase, and over {SLOW_PHASE:.0%} below the fastest earlier run of the same code at speed "
             f"(for a time that may follow the memory probe, with it within {MEMORY_NEAR:.0%})",
    "busy": f"timed while other work kept {BUSY_WARN_CORES} cores or more busy",
    "os": "mostly OS time",
    "host": "host-bound",
    "mem": "machine's memory bandwidth low",
    "recomp": "torch.compile recompiled for it",
    "cores": "kept more CPU cores busy than torch's threads it was given",
}


@dataclass(frozen=True)
class SummaryTable:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    @property
    def marks(self) -> tuple[str, ...]:
        """The marks (MARKS) its cells carry."""
        return marks_in(text for row in self.rows for text in row)


SYMBOLS = "±?≠↻"  # the marks written onto a speedup, so found anywhere in a cell's text; the others are words


def marks_in(texts: Iterable[str]) -> tuple[str, ...]:
    """The marks (MARKS) these cells' texts carry, in MARKS' order."""
    texts = list(texts)
    words, joined = {w.strip("()") for text in texts for w in text.split()}, " ".join(texts)
    return tuple(m for m in MARKS if (m in joined if m in SYMBOLS else m in words))


def legend(tables: list[SummaryTable]) -> str | None:
    """One line under the tables saying what each mark they carry means; None where they carry none."""
    return legend_of({m for t in tables for m in t.marks})


def legend_of(found: Iterable[str]) -> str | None:
    """What each of these marks means, in MARKS' order; None for none."""
    found = set(found)
    said = [f"{m} {MARKS[m]}" if m in SYMBOLS + "~" else f"{m}: {MARKS[m]}" for m in MARKS if m in found]
    return "marks: " + "; ".join(said) if said else None


def ms_text(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def summary_tables(df: pd.DataFrame, references: dict[str, str]) -> list[SummaryTable]:
    """One table per (operator, target, other params, device, way of timing, dtype): a row per pass x
    implementation, a column per sweep value; each cell is `median ms (speedup x)`, or the status when it did
    not run.
    Devices where nothing ran, and implementations that ran nowhere on a device, get no rows (`absent` gives
    their lines)."""
    tables = []
    df = present(df, absent(df))
    df = df.assign(others=[_others(p, a) for p, a in zip(df["params"], df["axis"])], timed=timing_kinds(df))
    typical = probed(df).groupby("device")["mem_gbps"].median()
    keys = ["op", "target", "others", "device", "timed", "dtype"]
    for key, group in df.groupby(keys, sort=False):
        op, target, others, device, timed, dtype = key
        ref = references.get(op, "py")
        values = sorted(group["axis_value"].dropna().unique())
        axis = group["axis"].iloc[0]
        ok = group[(group["impl"] == ref) & (group["status"] == Status.OK)]
        rows = []
        for (pass_name, impl), g in _in_order(group, ref).groupby(["pass", "impl"], sort=False):
            refs = storage.latest(ok[ok["pass"] == pass_name], ["axis_value"])
            base = {v: r for v, r in zip(refs["axis_value"], refs.to_dict("records"))}
            g = storage.latest(g, ["axis_value"])
            by_value = {v: r for v, r in zip(g["axis_value"], g.to_dict("records"))}
            rows.append((pass_name, impl, *(_cell(by_value.get(v), base.get(v), impl == ref, typical.get(device))
                                            for v in values)))
        title = f"{op}/{target} {others} on {device}{timed} ({dtype}): median ms (speedup vs {ref})"
        tables.append(SummaryTable(title, ("pass", f"impl \\ {axis}", *map(axis_value_text, values)), tuple(rows)))
    return tables


def _in_order(group: pd.DataFrame, ref: str) -> pd.DataFrame:
    """A table's rows as people read them: the reference's first, then each implementation in the order the sweep
    first measured it (the order asked for), each one's passes in SHOWN_ORDER. Not the order the rows were written
    in: a cell measured again late in the sweep is written again at its end."""
    first = group.groupby("impl")["timestamp"].min() if "timestamp" in group else pd.Series(dtype=object)
    order = group["impl"].map(lambda impl: (impl != ref, str(first.get(impl, ""))))
    keys = pd.DataFrame({"impl": order, "pass": group["pass"].map(lambda p: SHOWN_ORDER.get(p, len(SHOWN_ORDER)))})
    return group.loc[keys.sort_values(["impl", "pass"], kind="stable").index]


def _others(params_json: str | None, axis: str) -> str:
    """The params other than the swept axis, e.g. `H=256`: they tell series of one operator apart. A param
    left unset (None, e.g. lstm_cell's I, which then follows H) says nothing and is left out; so does a row
    with no params (a parquet file written by hand)."""
    params = json.loads(params_json) if isinstance(params_json, str) else {}
    return ",".join(f"{k}={v}" for k, v in sorted(params.items()) if k != axis and v is not None)


def _cell(row: dict | None, base: dict | None, is_ref: bool, typical_gbps: float | None = None) -> str:
    if row is None:
        return ""
    if row["status"] != Status.OK:
        return row["status"]
    text = ms_text(row["median_s"])
    if base is not None and not is_ref and row["median_s"] > 0:
        text += f" ({speedup_label(base, row)})"
    if row.get("noisy"):
        text += " ~"
    if disturbed(row):
        text += " dist"
    if slow_machine(row):
        text += " slow" + at_speed_arrow(row)
    if beside_work(row):
        text += " busy"
    if _share_at_least(row, "sys_s", OS_HEAVY):
        text += " os"
    if host_bound(row):
        text += " host"
    if _below(row.get("mem_gbps"), MEM_SLOW, typical_gbps):
        text += " mem"
    if recompiled(row):
        text += " recomp"
    if beyond_threads(row.get("cpu_cores"), row.get("threads")):
        text += " cores"
    return text


def at_speed_arrow(row: Mapping[str, Any]) -> str:
    """`↑` for a pass over SLOW_PHASE above the slowest of its earlier runs at speed (`at_speed_hi_s`; at_speed.py),
    `↓` for one over SLOW_PHASE below the fastest (`at_speed_lo_s`), else "" (within, or not known). Against the
    runs' range, not their median: the unmarked passes of ten main-job runs read over 15% off the median 17% of
    the time, off the range 5% (benchmarks/README.md, "A marked pass against its own time at speed")."""
    low, high, median = row.get("at_speed_lo_s"), row.get("at_speed_hi_s"), row["median_s"]
    if not (present_value(low) and present_value(high)):
        return ""
    return "↑" if median > high * (1 + SLOW_PHASE) else "↓" if median < low / (1 + SLOW_PHASE) else ""


def recompiled(row: Mapping[str, Any]) -> bool:
    """torch.compile (the @compile modifier) compiled the cell's code again for it: a new size, say."""
    count = row.get("recompiles")
    return present_value(count) and count > 0


def _below(value: float | None, share: float, typical: float | None) -> bool:
    return value is not None and typical is not None and not pd.isna(value) and value < share * typical


def host_bound_rows(rows: pd.DataFrame, suffix: str = "") -> pd.Series:
    """Each row's `host_bound` (the tables' `host` mark); `suffix` picks a merged frame's columns."""
    host, median = f"host_s{suffix}", f"median_s{suffix}"
    if host not in rows:
        return pd.Series(False, index=rows.index)
    return pd.Series([host_bound({"host_s": h, "median_s": m}) for h, m in zip(rows[host], rows[median])],
                     index=rows.index, dtype=bool)


def host_bound_line(rows: pd.DataFrame) -> str | None:
    """A line under the tables where GPU passes timed eagerly were host-bound: their times are the host
    issuing each call, which a faster kernel would not change; CUDA graphs time the kernels alone."""
    mode = rows["timing_mode"] if "timing_mode" in rows else pd.Series(None, index=rows.index, dtype=object)
    eager = rows[(rows["status"] == Status.OK) & (rows["device"] == Device.CUDA) & (mode != TimingMode.CUDA_GRAPH)]
    count = int(host_bound_rows(eager).sum())
    if not count:
        return None
    return (f"{count} of {len(eager)} GPU passes were host-bound (host): their times are the host issuing each "
            "call (Python, dispatch, launches), not the kernels; run again with --cuda-graph to time the kernels")


def os_time_line(rows: pd.DataFrame) -> str | None:
    """A line under the tables where CPU passes were mostly OS time (the tables' `os`): how many, the one most
    in the OS with its page faults, and what makes such time and what takes it away."""
    ok = rows[(rows["status"] == Status.OK) & (rows["device"] == Device.CPU)] if "sys_s" in rows else rows[:0]
    ok = storage.latest(ok, [*CELL_COLUMNS, "pass"])
    heavy = [r for r in ok.to_dict("records") if _share_at_least(r, "sys_s", OS_HEAVY)]
    if not heavy:
        return None
    row = max(heavy, key=lambda r: r["sys_s"] / r["median_s"])
    faults = row.get("page_faults") if present_value(row.get("page_faults")) else 0
    where = (f"{row['op']}/{row['target']} {row['impl']} {row['pass']} at "
             f"{row['axis']}={axis_value_text(row['axis_value'])}")
    said = (f"{len(heavy)} of {len(ok)} CPU passes were mostly OS time (os: the OS's CPU time a call, on all threads, "
            f"over half the median; the most, {where}: {ms_text(row['sys_s'])} ms of it a call against a median of "
            f"{ms_text(row['median_s'])} ms" + (f", {faults:,.0f} page faults)" if faults else ")"))
    allocator = row.get("allocator") if present_value(row.get("allocator")) else Allocator.SYSTEM
    if not faults:
        return f"{said}: system calls, not page faults; `benchctl profile` shows which"
    if allocator != Allocator.TCMALLOC:
        gives = "the system allocator" if allocator == Allocator.SYSTEM else "jemalloc (at its defaults)"
        return (f"{said}: {gives} gives a large buffer back to the OS when it is freed, and the next call faults its "
                "pages in again, zero-filled; `--allocator tcmalloc` keeps such memory for reuse and times the code "
                "without that")
    return (f"{said}: under tcmalloc too, so the code itself asks for fresh memory each call; `benchctl profile` "
            "shows where")


def _share_at_least(row: dict, column: str, share: float) -> bool:
    value = row.get(column)
    return value is not None and not pd.isna(value) and value >= share * row["median_s"] > 0

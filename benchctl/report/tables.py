"""The report's tables: the environment of each run, a table per operator (median, speedup, correctness,
the OS and machine columns), and the cells without a time."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from benchctl.report import charts, compile_marks
from benchctl.report.speedups import labels
from benchctl.results import storage
from benchctl.results.schema import ENV_FIELDS, beside_work, slow_machine
from benchctl.analysis.earlier_range import forecast_text
from benchctl.analysis.repeat import EARLIER_RUNS, either_state
from benchctl.analysis.speedup import disturbed, present_value, ratio_text
from benchctl.analysis.speedup_states import state_medians, states_apart
from benchctl.analysis.summary import axis_value_text, legend_of, marks_in, probed
from benchctl.analysis.timed_alike import timing_kinds
from benchctl.vocab import FAILED, PASS_LABELS, SHOWN_ORDER

# The environment table: the run, the facts of the machine (results/schema.py), and the run's own.
ENV_COLUMNS = {"run_id": "run", **ENV_FIELDS, "timestamp": "started", "rounds": "rounds", "state": "state"}
BANDWIDTH = "memory GB/s"  # the machine's memory bandwidth over a run: median (range) of its probes
EARLIER = "earlier runs ms"  # the same code's earlier runs in the folder: fastest-slowest (how many)
EARLIER_SPEEDUPS = "earlier speedups"  # ... and their paired speedups, in either machine state


def environment(rows: pd.DataFrame, metas: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, str]]:
    """One entry per run: facts from its rows, filled in from its metadata where the rows lack them."""
    by_run = {str(m.get("run_id")): m for m in metas}
    run_ids = list(dict.fromkeys([*map(str, rows["run_id"].dropna().unique()), *by_run]))
    entries = []
    for run_id in run_ids or ["?"]:
        part = rows[rows["run_id"].astype(str) == run_id] if run_ids else rows
        meta = by_run.get(run_id, {})
        entry = {label: _facts(part, meta, name) for name, label in ENV_COLUMNS.items()}
        entries.append({**entry, "run": run_id, BANDWIDTH: _bandwidth(part)})
    return entries


def _bandwidth(rows: pd.DataFrame) -> str:
    """The machine's memory bandwidth over the run (the probes of its CPU rows): median and range."""
    values = probed(rows)["mem_gbps"]
    if values.empty:
        return "not probed"
    return f"{values.median():.1f} ({values.min():.1f}-{values.max():.1f})"


def _facts(rows: pd.DataFrame, meta: Mapping[str, Any], name: str) -> str:
    values = [_fmt_value(v) for v in rows[name].dropna().unique()] if name in rows else []
    if not values and storage.meta_fact(meta, name) is not None:
        values = [_fmt_value(storage.meta_fact(meta, name))]
    if name == "timestamp" and values:  # every row has its own: the run started with the first
        return min(values)[:19].replace("T", " ")
    recorded = meta.get("environment")
    if not values and isinstance(recorded, dict) and name in recorded:  # recorded as none: no GPU, a CPU build
        return "none"
    return ", ".join(sorted(set(values))) or "unknown"


def _fmt_value(value: Any) -> str:
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    return axis_value_text(value) if number and np.isfinite(value) else str(value)


def _ms(value: Any) -> str:
    return "" if value is None or pd.isna(value) else f"{value * 1e3:.4g}"


def _correct(ok: Any, rel: Any) -> str:
    if ok is None or pd.isna(ok):
        return ""
    err = "" if rel is None or pd.isna(rel) else f" (rel {rel:.1e})"
    return ("yes" if ok else "NO") + err


def percent_of_peak(pct: Any, level: Any) -> str:
    """"63.0 (L3)"; above 100 it names the ceiling it beats, which was then measured too low."""
    if pct is None or pd.isna(pct):
        return ""
    level = None if level is None or pd.isna(level) else level
    if pct > 100:
        return f"{pct:.1f}: above the {level or 'measured'} peak"
    return f"{pct:.1f}" + (f" ({level})" if level else "")


def _status(row: Mapping[str, Any]) -> str:
    """A pass's status with what makes its median doubtful: disturbed or noisy, measured on a slow machine (its
    canary, as `run`'s table marks it `slow`; with its time against its time at speed where earlier runs had it), a
    speedup that reads apart in the machine's two states, and beside other work (`busy`)."""
    doubts = ["disturbed" if disturbed(row) else
              "noisy" if pd.notna(row.get("noisy")) and bool(row.get("noisy")) else "",
              _slow(row), _states(row), "beside other work" if beside_work(row) else ""]
    said = ", ".join(d for d in doubts if d)
    return f"{row['status']} ({said})" if said else row["status"]


def _slow(row: Mapping[str, Any]) -> str:
    """`slow machine`, `slow machine: 1.86x its time at speed` (at_speed.py), or "" where the machine was not slow."""
    if not slow_machine(row):
        return ""
    at_speed = row.get("at_speed_s")
    if not present_value(at_speed):
        return "slow machine"
    return f"slow machine: {row['median_s'] / at_speed:.2f}x its time at speed"


def _states(row: Mapping[str, Any]) -> str:
    """`speedup 2.04x at speed, 2.98x in a slow phase` where earlier runs of the same code read its paired speedup
    apart between the machine's two states (speedup_states.py); "" elsewhere."""
    apart = states_apart(row)
    if apart is None or apart == 1.0:
        return ""
    at_speed, slow = state_medians(row)
    return f"speedup {ratio_text(at_speed)}x at speed, {ratio_text(slow)}x in a slow phase"


def op_table(rows: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """The operator's cells as display strings, in chart order: device, pass, params, axis, the baseline first."""
    df, _ = charts.with_groups(rows.assign(speedup=labels(rows, baseline)))
    axis = str(df["axis"].dropna().iloc[0]) if df["axis"].notna().any() else "axis"
    df = _chart_order(df, baseline)
    table = pd.DataFrame({
        "device": df["device"].map(lambda d: charts.DEVICE_LABELS.get(d, d)) + timing_kinds(df),
        "pass": df["pass"].map(lambda p: PASS_LABELS.get(p, p)),
        "params": df["group"], axis: df["axis_value"].map(_fmt_value), "impl": df["impl"],
        "status": [_status(r) for r in df.to_dict("records")],
        "median ms": df["median_s"].map(_ms), "IQR ms": df["iqr_s"].map(_ms),
        EARLIER: [_earlier(r) for r in df.to_dict("records")],
        speedup_column(baseline): df["speedup"],
        EARLIER_SPEEDUPS: [_earlier_speedups(r) for r in df.to_dict("records")],
        "correct": [_correct(c, r) for c, r in zip(df["correct"], df["max_rel_err"])],
    })
    if "best_config" in df and df["best_config"].notna().any():  # Triton: the autotune config it ran
        table["best config"] = df["best_config"].fillna("")
    if df["pct_of_peak"].notna().any():
        levels = df["peak_level"] if "peak_level" in df else [None] * len(df)
        table["% of peak"] = [percent_of_peak(p, lv) for p, lv in zip(df["pct_of_peak"], levels)]
    if df["peak_mem_bytes"].notna().any():  # memory decides the largest batch that fits
        table["peak MiB"] = df["peak_mem_bytes"].map(lambda b: "" if pd.isna(b) else f"{b / 2**20:.1f}")
    if "page_faults" in df and df["page_faults"].notna().any():  # fresh memory first touched per call
        table["page faults"] = df["page_faults"].map(lambda f: "" if pd.isna(f) else f"{f:.0f}")
    if "sys_s" in df and df["sys_s"].notna().any():  # the OS's share of "median ms" (all threads)
        table["OS ms"] = df["sys_s"].map(_ms)
    if "cpu_cores" in df and df["cpu_cores"].notna().any():  # CPU: the cores its calls kept busy (all threads)
        table["CPU cores"] = df["cpu_cores"].map(lambda c: "" if pd.isna(c) else f"{c:.2f}")
    if "host_s" in df and df["host_s"].notna().any():  # GPU: the host's time to issue the call
        table["host ms"] = df["host_s"].map(_ms)
    if "mem_gbps" in df and df["mem_gbps"].notna().any():  # CPU: what the machine gave at the time
        table["machine GB/s"] = df["mem_gbps"].map(lambda g: "" if pd.isna(g) else f"{g:.1f}")
    table = table.assign(**compile_marks.table_columns(df))  # torch.compile's, where the run has any
    empty = ("params", EARLIER, EARLIER_SPEEDUPS)  # EARLIER's: a run with none before it in its folder
    return table.drop(columns=[c for c in empty if not table[c].astype(bool).any()])


def _earlier(row: Mapping[str, Any]) -> str:
    """The fastest and slowest median of the earlier runs of the same code that timed the row's measurement left
    alone, and how many (at_speed.earlier_times; `runs_text`); "" where none did."""
    runs = row.get("earlier_runs")
    return runs_text(row["earlier_lo_s"], row["earlier_hi_s"], int(runs)) if present_value(runs) else ""


def _earlier_speedups(row: Mapping[str, Any]) -> str:
    """`2.02-3.13x (13)`: the lowest and highest paired speedup of the earlier runs of the same code (both sides'),
    in either machine state (repeat.earlier_speedups), and how many; "" where none."""
    found = either_state(row)
    if not found:
        return ""
    return _range_text(ratio_text(min(found)), ratio_text(max(found)), len(found), "x")


def runs_text(fastest_s: float, slowest_s: float, runs: int) -> str:
    """`0.0688-0.265 (10)`: runs' fastest and slowest median in ms, and how many; one time where they read alike."""
    return _range_text(_ms(fastest_s), _ms(slowest_s), runs)


def _range_text(low: str, high: str, runs: int, unit: str = "") -> str:
    """`low-high (runs)`, or `low (runs)` where the two are written alike (`unit` after the values)."""
    return f"{low if low == high else f'{low}-{high}'}{unit} ({runs})"


def speedup_column(baseline: str) -> str:
    return f"speedup vs {baseline}"


def legend(table: pd.DataFrame, baseline: str) -> tuple[str, ...]:
    """The lines under an `op_table`: what the marks on its speedups (±, ?, ≠, ↻) mean, as `run`'s legend says it,
    and what its earlier runs' columns hold; none where it has neither."""
    return tuple(line for line in (legend_of(marks_in(table[speedup_column(baseline)])), earlier_legend(table))
                 if line)


def earlier_legend(table: pd.DataFrame) -> str | None:
    """What the earlier runs' columns hold, and how often the next run lands within them were the runs alike:
    (n-1)/(n+1) of n (benchmarks/README.md, "The earlier runs' range as a forecast"); None without either."""
    said = [f"{EARLIER}: the fastest and slowest median of the same code in the earlier runs of this folder that "
            "timed it left alone, in any state (how many)"] if EARLIER in table else []
    said += [f"{EARLIER_SPEEDUPS}: the lowest and highest paired speedup of the same code, both sides', in the earlier "
             "runs, in either state (how many)"] if EARLIER_SPEEDUPS in table else []
    if not said:
        return None
    return f"{'; '.join(said)}; {forecast_text(EARLIER_RUNS)}, where an interval says only how well one run agrees"


def _chart_order(df: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """Device, pass, params and axis value in the charts' order; at each, the baseline's row first (its speedup is
    the others' 1), then the implementations by name."""
    keys = df.assign(_d=df["device"].map(SHOWN_ORDER), _p=df["pass"].map(SHOWN_ORDER), _b=df["impl"] != baseline)
    return keys.sort_values(["_d", "device", "_p", "pass", "group", "axis_value", "_b", "impl"], na_position="last")


def failure_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Every cell that did not produce a time, with its status and the message that says why."""
    df, _ = charts.with_groups(rows)
    df = _chart_order(df[df["status"].isin(FAILED) | df["status"].isna()])
    return pd.DataFrame({
        "device": df["device"].map(lambda d: charts.DEVICE_LABELS.get(d, d)) + timing_kinds(df),
        "pass": df["pass"].map(lambda p: PASS_LABELS.get(p, p)),
        "params": df["group"], "axis": [f"{a}={_fmt_value(v)}" for a, v in zip(df["axis"], df["axis_value"])],
        "impl": df["impl"], "status": df["status"].fillna("missing"), "message": df["message"].fillna(""),
    })

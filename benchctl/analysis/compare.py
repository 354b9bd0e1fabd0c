"""Two runs cell by cell: the ratio of medians with its confidence interval, and a verdict per cell
(faster, slower, same or unsure: verdict.py) beside what broke, was fixed, or ran in one run only.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from benchctl.errors import UsageError
from benchctl.results import storage
from benchctl.results.schema import CELL_COLUMNS, ENV_FIELDS, median_samples, own_aside, slow_machine, stored_list
from benchctl.analysis.comparison import CellChange, Comparison, EnvDifference, VERDICTS
from benchctl.analysis.machine_lines import uncalibrated
from benchctl.analysis.pairs import relative_change
from benchctl.analysis.summary import probed
from benchctl.analysis.timed_alike import TIMED_APART, timed_apart
from benchctl.analysis.verdict import (DECISIVE, OUTGROWN, adjusted, doubt, gross, gross_at, machine_doubt,
                                      mann_whitney_p, ratio_interval, relative_verdict, verdict, with_pairs)
from benchctl.vocab import BROKEN, Device, Status, Verdict

KEY = (*CELL_COLUMNS, "pass")
# Facts whose difference makes two runs' timings incomparable (not the commit: that is what changed).
COMPARED_ENV = tuple(name for name in ENV_FIELDS if name not in ("git_sha", "node_id"))
MACHINE = "machine"  # the kind of processor a cell ran on: its GPU's name on cuda, its CPU's on cpu
def code_changed(base: Mapping[str, Any], new: Mapping[str, Any], column: str = "impl_code") -> bool | None:
    """Whether two rows' digests of `column` differ; None where either row lacks one."""
    a, b = (side.get(column) for side in (base, new))
    return a != b if isinstance(a, str) and isinstance(b, str) else None


def _samples(row: pd.Series) -> list[float]:
    """The samples the row's median was taken from: those neither set aside as disturbed nor the audit's, of the
    mode its median is where its rounds split (else the interval of a -7.5% change read [-3, -1])."""
    return median_samples(stored_list(row.get("samples_s")), own_aside(row),
                          stored_list(row.get("mode_aside")))


def _facts(row: pd.Series) -> dict[str, Any]:
    """What verdict.doubt, verdict.gross_at and timed_alike.timed_apart read of a side."""
    return {k: (None if np.isscalar(row.get(k)) and pd.isna(row.get(k)) else row.get(k))
            for k in ("stop", "noisy", "other_cores", "mode_fast_s", "mode_slow_s", "canary_ratio", "processes",
                      "process_spread", "timing_mode", "flush_l2", "device", "threads", "allocator")}


def compare_cell(key: tuple, base: pd.Series, new: pd.Series, min_effect: float) -> CellChange:
    """One cell's figures; a timed cell's verdict is given once every cell's p-value is known."""
    statuses = {"base_status": base["status"], "new_status": new["status"]}
    if base["status"] != Status.OK or new["status"] != Status.OK:
        broke = base["status"] == Status.OK and new["status"] in BROKEN
        fixed = new["status"] == Status.OK and base["status"] in BROKEN
        return CellChange(*key, verdict=Verdict.BROKEN if broke else Verdict.FIXED if fixed else Verdict.NOT_TIMED,
                          **statuses)
    a, b = _samples(base), _samples(new)
    ratio = float(new["median_s"] / base["median_s"]) if base["median_s"] else math.nan
    p, interval = mann_whitney_p(a, b), ratio_interval(a, b)
    relative = relative_change(base, new)
    facts = (_facts(base), _facts(new))
    pairs = {} if relative is None else {"partner": relative.partner, "relative": relative.ratio,
                                         "relative_low": relative.low, "relative_high": relative.high,
                                         "relative_p": relative.p_value, "relative_spread": relative.spread}
    return CellChange(*key, verdict=Verdict.UNSURE, **statuses, **pairs,
                      base_median_s=float(base["median_s"]), new_median_s=float(new["median_s"]), ratio=ratio,
                      ratio_low=interval[0] if interval else None, ratio_high=interval[1] if interval else None,
                      p_value=p, base_n=len(a), new_n=len(b),
                      reason=_reason(ratio, *facts, min_effect), gross_at=gross_at(facts, min_effect),
                      machine=_machine_change(base, new), code_changed=code_changed(base, new),
                      partner_changed=relative is not None and bool(code_changed(base, new, "partner_code")),
                      phases_apart=slow_machine(facts[0]) != slow_machine(facts[1]))


def _reason(ratio: float, base: dict, new: dict, min_effect: float) -> str | None:
    """Why the cell's change cannot be called slower or faster, whatever its samples say (verdict.py)."""
    return timed_apart(base, new) or (doubt(ratio, [base, new], min_effect) if math.isfinite(ratio) else None)


PROBES = {"canary": ("canary_s", False), "memory": ("mem_gbps", True), "sm clock": ("sm_clock_mhz", True)}


def _machine_change(base: pd.Series, new: pd.Series) -> dict[str, float]:
    """NEW's machine over BASE's, by each probe both sides took: the compute canary's time, and the inverse
    of the memory bandwidth and of the GPU's SM clock (above 1: the machine itself was slower in NEW)."""
    out = {}
    for probe, (column, rate) in PROBES.items():
        a, b = (_number(side.get(column)) for side in (base, new))
        if a and b:
            out[probe] = a / b if rate else b / a
    return out


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float, np.floating)) and math.isfinite(value) and value > 0 else None


def _judged(cells: list[CellChange], threshold: float, alpha: float, bridge: bool) -> list[CellChange]:
    """Timed cells get their verdict from their interval and their p-value adjusted over all of them."""
    timed = [i for i, c in enumerate(cells) if c.ratio is not None]
    for i, q in zip(timed, adjusted([cells[i].p_value for i in timed])):
        c = cells[i]
        interval = (c.ratio_low, c.ratio_high) if c.ratio_low is not None else None
        said = verdict(interval, q, threshold, alpha, c.ratio)
        reason = c.reason or machine_doubt(said, c.ratio, c.machine, threshold)
        outgrown = bool(reason) and reason.startswith(OUTGROWN) and gross(said, interval, c.ratio, c.machine,
                                                                          c.gross_at)
        if reason and not outgrown and (said in DECISIVE or reason.startswith(TIMED_APART)):
            said = Verdict.UNSURE
        cells[i] = replace(c, p_adjusted=q, verdict=said, reason=reason if said == Verdict.UNSURE else None,
                           despite=reason if outgrown else None)
    return _judged_by_pairs(cells, threshold, alpha, bridge)


def _judged_by_pairs(cells: list[CellChange], threshold: float, alpha: float, bridge: bool) -> list[CellChange]:
    """Cells paired with the same partner in both runs: their pairs' verdict, with p-values adjusted over
    those cells, where it stands in for their own times' (verdict.with_pairs); across a slow phase on one
    side only where `bridge`."""
    paired = [i for i, c in enumerate(cells) if c.relative is not None]
    said = {(c.op, c.target, c.impl, c.device, c.dtype, c.params, c.pass_name): c.verdict for c in cells}
    for i, q in zip(paired, adjusted([cells[i].relative_p for i in paired])):
        c = cells[i]
        interval = (c.relative_low, c.relative_high)
        by_pairs = None if c.partner_changed else relative_verdict(interval, q, c.relative, c.relative_spread,
                                                                    threshold, alpha)
        partner = said.get((c.op, c.target, c.partner, c.device, c.dtype, c.params, c.pass_name))
        verdict_, reason, by = with_pairs(c.verdict, c.reason, by_pairs, partner, c.machine.get("canary"),
                                          apart=c.phases_apart and not bridge)
        cells[i] = replace(c, relative_p=q, verdict=verdict_, reason=reason, by_pairs=by,
                           despite=c.despite if verdict_ == c.verdict and not by else None)
    return cells


def machine_kinds(rows: pd.DataFrame) -> pd.Series:
    """Each row's kind of processor: the GPU's name for a cuda cell, the CPU's for a cpu cell ("" unknown)."""
    column = lambda name: rows[name] if name in rows else pd.Series("", index=rows.index)  # noqa: E731
    return column("gpu_name").where(rows["device"] == Device.CUDA, column("cpu_name")).fillna("").astype(str)


def _by_cell(rows: pd.DataFrame, keys: tuple[str, ...]) -> dict[tuple, pd.Series]:
    """Rows keyed by cell; a cell measured in several runs keeps the latest (run ids sort by start time)."""
    keyed = rows.assign(**{k: rows[k].fillna("").astype(str) for k in KEY}, **{MACHINE: machine_kinds(rows)})
    return {tuple(r[k] for k in keys): r for _, r in storage.latest(keyed, keys).iterrows()}


def check_same_hardware(base: pd.DataFrame, new: pd.DataFrame) -> None:
    """Cells measured on different kinds of GPU (or CPU) are not compared unless asked for: a "regression"
    between an A100 and an H100 says nothing about the code."""
    for device in sorted(set(base["device"].dropna()) & set(new["device"].dropna())):
        x, y = ({k for k in machine_kinds(r[r["device"] == device]) if k} for r in (base, new))
        if x and y and not x & y:
            raise UsageError(f"{device} cells ran on {', '.join(sorted(x))} in BASE and on {', '.join(sorted(y))} "
                             "in NEW: pass --across-hosts to compare different hardware")


def compare(base: pd.DataFrame, new: pd.DataFrame, threshold: float = 0.05, alpha: float = 0.05,
            base_meta: Sequence[Mapping[str, Any]] = (), new_meta: Sequence[Mapping[str, Any]] = (),
            across_hosts: bool = False, bridge_phases: bool = True) -> Comparison:
    """Every cell of both runs with a verdict; cells in only one run are listed as such. Cells are matched
    on the same kind of hardware too, unless `across_hosts`. A cell's pairs judge it across a slow phase of
    the machine on one side only where `bridge_phases` (history's steps do not: steps.py)."""
    if not across_hosts:
        check_same_hardware(base, new)
    keys = KEY if across_hosts else (*KEY, MACHINE)
    a, b = _by_cell(base, keys), _by_cell(new, keys)
    cell = lambda k: k[:len(KEY)]  # noqa: E731
    cells = _judged([compare_cell(cell(k), a[k], b[k], threshold) for k in a if k in b], threshold, alpha,
                    bridge_phases)
    cells += [CellChange(*cell(k), verdict=Verdict.ONLY_IN_BASE, base_status=a[k]["status"]) for k in a if k not in b]
    cells += [CellChange(*cell(k), verdict=Verdict.ONLY_IN_NEW, new_status=b[k]["status"]) for k in b if k not in a]
    counts = {v: sum(c.verdict == v for c in cells) for v in VERDICTS}
    return Comparison(tuple(cells), env_differences(base, new, base_meta, new_meta), threshold, alpha, counts,
                      (median_bandwidth(base), median_bandwidth(new)), (_busy(base_meta), _busy(new_meta)),
                      (_uncalibrated(base, base_meta), _uncalibrated(new, new_meta)))


def _uncalibrated(rows: pd.DataFrame, metas: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The devices a run timed passes on that its machine had no calibration for (its metadata's `peaks`: {})."""
    peaks = [storage.meta_fact(dict(m), "peaks") for m in metas]
    timed = rows.loc[rows["status"] == Status.OK, "device"] if "device" in rows else []
    return tuple(d for p in peaks if p is not None for d in uncalibrated(timed, p))


def _busy(metas: Sequence[Mapping[str, Any]]) -> Mapping[str, float] | None:
    """The stretch other work kept cores busy through a run (its metadata's `busy_stretch`), if any."""
    return next((m["busy_stretch"] for m in metas if m.get("busy_stretch")), None)


def median_bandwidth(rows: pd.DataFrame) -> float | None:
    """The median memory bandwidth probe of a run's rows; None when it has none."""
    values = probed(rows)["mem_gbps"]
    return float(values.median()) if len(values) else None


def _env_values(rows: pd.DataFrame, metas: Sequence[Mapping[str, Any]], name: str) -> set[str]:
    values = {_plain(v) for v in rows[name].dropna().unique()} if name in rows else set()
    return values or {_plain(storage.meta_fact(m, name)) for m in metas if storage.meta_fact(m, name) is not None}


def _plain(value: Any) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def env_differences(base: pd.DataFrame, new: pd.DataFrame, base_meta: Sequence[Mapping[str, Any]] = (),
                    new_meta: Sequence[Mapping[str, Any]] = ()) -> tuple[EnvDifference, ...]:
    """Environment facts that differ between the runs; a fact one side does not record is not a difference."""
    diffs = []
    for name in COMPARED_ENV:
        x, y = _env_values(base, base_meta, name), _env_values(new, new_meta, name)
        if x and y and x != y:
            diffs.append(EnvDifference(name, ", ".join(sorted(x)), ", ".join(sorted(y))))
    return tuple(diffs)


def load_side(path: Path | str) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Rows and metadata of a run folder or a parquet file (whose folder may hold the metadata); a side a part
    of which is not as benchctl wrote it is refused (a verdict without the cells it held would pass a gate)."""
    folders = storage.run_folders([path])
    changed = [why for folder in folders for why in storage.changed_parts(folder)]
    if changed:
        more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
        raise UsageError(f"cannot compare {path}: {changed[0]}{more}")
    return storage.load([Path(path)]), storage.run_metas(folders)

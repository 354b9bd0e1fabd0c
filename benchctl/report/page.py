"""The report: charts, a table per operator and the run's environment, as `index.html` and `summary.md`.

The HTML page embeds its PNG charts as base64, so it opens from disk in any browser with no server and
survives being mailed around; the SVG and PNG files sit beside it for papers and for the Markdown page.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from benchctl.report import machine_chart
from benchctl.report import charts
from benchctl.results import storage
from benchctl.errors import UsageError
from benchctl.results.summary import probed

# state: complete, or interrupted (then some cells are missing)
ENV_FIELDS = {"run_id": "run", "host": "host", "torch_version": "torch", "cuda_version": "CUDA",
              "cpu_name": "CPU", "gpu_name": "GPU", "threads": "threads", "git_sha": "git", "timestamp": "started",
              "rounds": "rounds", "state": "state"}
BANDWIDTH = "memory GB/s"  # the machine's memory bandwidth over a run: median (range) of its probes


@dataclass(frozen=True)
class Loaded:
    rows: pd.DataFrame
    metas: list[dict[str, Any]]  # run.json of every run folder the rows came from
    folders: list[Path]


@dataclass(frozen=True)
class Section:
    """One operator (and target): its charts, its table, its failed cells."""

    op: str
    target: str
    title: str
    baseline: str
    note: str  # why the baseline is not the one asked for, or ""
    figures: dict[str, list[Path]]  # kind (time / speedup / roofline) -> [png, svg]
    table: pd.DataFrame
    failures: pd.DataFrame


@dataclass(frozen=True)
class Report:
    out_dir: Path
    sections: list[Section]
    environment: list[dict[str, str]]
    statuses: dict[str, int]
    generated: str
    files: list[Path] = field(default_factory=list)
    superseded: int = 0  # cells measured again in a later run: only the latest is shown
    machine: list[Path] = field(default_factory=list)  # the memory bandwidth probes over the run [png, svg]


def load_results(paths: Sequence[Path | str], root: Path | str = "results") -> Loaded:
    folders = storage.run_folders(paths, root)
    rows = storage.load([Path(p) for p in paths] or folders, root)
    return Loaded(rows, storage.run_metas(folders), folders)


def default_out_dir(folders: Sequence[Path], root: Path | str = "results") -> Path:
    """`<run>/report` for one run, so the report travels with its data; else a new dated folder."""
    if len(folders) == 1:
        return Path(folders[0]) / "report"
    return Path(root) / f"report-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}"


def select_ops(rows: pd.DataFrame, ops: Sequence[str] = ()) -> pd.DataFrame:
    present = sorted(rows["op"].dropna().unique())
    if not present:
        raise UsageError("these results hold no rows")
    missing = [op for op in ops if op not in present]
    if missing:
        raise UsageError(f"no results for {', '.join(missing)}; these results have: {', '.join(present)}")
    return rows[rows["op"].isin(ops)] if ops else rows


def environment(rows: pd.DataFrame, metas: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, str]]:
    """One entry per run: facts from its rows, filled in from its run.json where the rows lack them."""
    by_run = {str(m.get("run_id")): m for m in metas}
    run_ids = list(dict.fromkeys([*map(str, rows["run_id"].dropna().unique()), *by_run]))
    entries = []
    for run_id in run_ids or ["?"]:
        part = rows[rows["run_id"].astype(str) == run_id] if run_ids else rows
        meta = by_run.get(run_id, {})
        entry = {label: _facts(part, meta, name) for name, label in ENV_FIELDS.items()}
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
    return ", ".join(sorted(set(values))) or "unknown"


def _fmt_value(value: Any) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _ms(value: Any) -> str:
    return "" if value is None or pd.isna(value) else f"{value * 1e3:.4g}"


def _correct(ok: Any, rel: Any) -> str:
    if ok is None or pd.isna(ok):
        return ""
    err = "" if rel is None or pd.isna(rel) else f" (rel {rel:.1e})"
    return ("yes" if ok else "NO") + err


def op_table(rows: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """The operator's cells as display strings, in chart order: device, pass, params, axis, impl."""
    df, _ = charts.with_groups(rows.assign(speedup=charts.speedups(rows, baseline)))
    axis = str(df["axis"].dropna().iloc[0]) if df["axis"].notna().any() else "axis"
    df = _chart_order(df)
    table = pd.DataFrame({
        "device": df["device"].map(lambda d: charts.DEVICE_LABELS.get(d, d)),
        "pass": df["pass"].map(lambda p: charts.PASS_LABELS.get(p, p)),
        "params": df["group"], axis: df["axis_value"].map(_fmt_value), "impl": df["impl"],
        "status": [f"{st} (noisy)" if pd.notna(n) and bool(n) else st for st, n in zip(df["status"], df["noisy"])],
        "median ms": df["median_s"].map(_ms), "IQR ms": df["iqr_s"].map(_ms),
        f"speedup vs {baseline}": df["speedup"].map(lambda s: "" if pd.isna(s) else f"{s:.2f}x"),
        "correct": [_correct(c, r) for c, r in zip(df["correct"], df["max_rel_err"])],
    })
    if df["pct_of_peak"].notna().any():
        table["% of peak"] = df["pct_of_peak"].map(lambda p: "" if pd.isna(p) else f"{p:.1f}")
    if df["peak_mem_bytes"].notna().any():  # memory decides the largest batch that fits
        table["peak MiB"] = df["peak_mem_bytes"].map(lambda b: "" if pd.isna(b) else f"{b / 2**20:.1f}")
    if "page_faults" in df and df["page_faults"].notna().any():  # fresh memory first touched per call
        table["page faults"] = df["page_faults"].map(lambda f: "" if pd.isna(f) else f"{f:.0f}")
    if "sys_s" in df and df["sys_s"].notna().any():  # the OS's share of "median ms" (all threads)
        table["OS ms"] = df["sys_s"].map(_ms)
    if "host_s" in df and df["host_s"].notna().any():  # GPU: the host's time to issue the call
        table["host ms"] = df["host_s"].map(_ms)
    if "mem_gbps" in df and df["mem_gbps"].notna().any():  # CPU: what the machine gave at the time
        table["machine GB/s"] = df["mem_gbps"].map(lambda g: "" if pd.isna(g) else f"{g:.1f}")
    return table.drop(columns=[c for c in ("params",) if not table[c].astype(bool).any()])


def _chart_order(df: pd.DataFrame) -> pd.DataFrame:
    rank = {name: i for i, name in enumerate(charts.DEVICES + charts.PASSES)}
    keys = df.assign(_d=df["device"].map(rank), _p=df["pass"].map(rank))
    return keys.sort_values(["_d", "device", "_p", "pass", "group", "axis_value", "impl"], na_position="last")


def failure_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Every cell that did not produce a time, with its status and the message that says why."""
    df, _ = charts.with_groups(rows)
    df = _chart_order(df[df["status"].isin(charts.FAILED) | df["status"].isna()])
    return pd.DataFrame({
        "device": df["device"].map(lambda d: charts.DEVICE_LABELS.get(d, d)),
        "pass": df["pass"].map(lambda p: charts.PASS_LABELS.get(p, p)),
        "params": df["group"], "axis": [f"{a}={_fmt_value(v)}" for a, v in zip(df["axis"], df["axis_value"])],
        "impl": df["impl"], "status": df["status"].fillna("missing"), "message": df["message"].fillna(""),
    })


def _slug(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(parts))


def _section(rows: pd.DataFrame, op: str, target: str, out_dir: Path, requested: str | None,
             peaks: Mapping[str, Mapping[str, float]]) -> Section:
    title = op if target in ("op", "", "None") else f"{op} / {target}"
    baseline, note = charts.resolve_baseline(rows["impl"].dropna(), requested)
    drawn = {
        "time": charts.timing_figure(rows, title),
        "speedup": charts.speedup_figure(rows, title, baseline),
        "roofline": charts.roofline_figure(rows, title, peaks),
    }
    figures = {kind: charts.save(fig, out_dir / "figures" / _slug(op, target, kind))
               for kind, fig in drawn.items() if fig is not None}
    return Section(op, target, title, baseline, note, figures, op_table(rows, baseline), failure_table(rows))


def measured_peaks(rows: pd.DataFrame, metas: Sequence[Mapping[str, Any]] = ()) -> dict[str, dict[str, float]]:
    """Peak GB/s and GFLOP/s per device, as `benchctl run` stored them in run.json from the machine's
    calibration; {} when the rows have no rates to compare with them."""
    if not rows["gbps"].notna().any():
        return {}
    found = [storage.meta_fact(m, "peaks") for m in metas]
    peaks: dict[str, dict[str, float]] = {}
    for by_device in (f for f in found if isinstance(f, dict)):
        for device, values in by_device.items():
            if isinstance(values, dict):
                peaks.setdefault(device, {}).update({k: float(v) for k, v in values.items() if v})
    return peaks


def stored_references(metas: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each operator's reference implementation as `benchctl run` stored it in run.json (the default
    baseline: naflex_posembed has no `py`, its seed's baseline is `loop`); later runs win."""
    found: dict[str, str] = {}
    for refs in (storage.meta_fact(m, "references") for m in metas):
        if isinstance(refs, dict):
            found.update({str(op): str(impl) for op, impl in refs.items()})
    return found


def build(rows: pd.DataFrame, out_dir: Path, metas: Sequence[Mapping[str, Any]] = (),
          baselines: Mapping[str, str] | None = None, ops: Sequence[str] = (),
          peaks: Mapping[str, Mapping[str, float]] | None = None) -> Report:
    """Charts for every operator and target in `rows`, then index.html and summary.md in `out_dir`."""
    rows, superseded = latest_only(select_ops(rows, ops).assign(target=lambda d: d["target"].fillna("op").astype(str)))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    wanted = dict(baselines or {})  # "*" applies to every operator without its own entry
    references = stored_references(metas)
    peaks = measured_peaks(rows, metas) if peaks is None else peaks
    sections = [_section(part, str(op), str(target), out_dir,
                         wanted.get(str(op), wanted.get("*", references.get(str(op)))), peaks)
                for (op, target), part in rows.groupby(["op", "target"], sort=True)]
    statuses = {str(k): int(v) for k, v in rows["status"].fillna("missing").value_counts().items()}
    machine = machine_chart.bandwidth_figure(rows, peaks.get("cpu", {}).get("read_gbps"))
    report = Report(out_dir, sections, environment(rows, metas), statuses,
                    datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), superseded=superseded,
                    machine=charts.save(machine, out_dir / "figures" / "machine-bandwidth") if machine else [])
    pages = {out_dir / "index.html": render_html(report), out_dir / "summary.md": render_markdown(report)}
    for path, text in pages.items():
        path.write_text(text, encoding="utf-8")
    figures = [*report.machine, *(p for s in sections for paths in s.figures.values() for p in paths)]
    return replace(report, files=[*pages, *figures])


def latest_only(rows: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """One row per cell when merged runs repeat one (a re-run after a fix): the latest run's row, since
    run ids sort by start time; and how many older rows were dropped."""
    key = ["op", "target", "impl", "device", "dtype", "params", "pass"]
    ordered = rows.sort_values("run_id", kind="stable", na_position="first")
    kept = ordered.drop_duplicates(key, keep="last").sort_index()
    return kept, len(rows) - len(kept)


def md_text(value: Any) -> str:
    """Text from outside (messages, names, params) made literal in Markdown: HTML in it is escaped, and a
    pipe or newline would break a table row, a backtick or bracket would open code or a link."""
    text = html.escape(str(value), quote=False).replace("\n", " ")
    for char in "\\|`*[]":
        text = text.replace(char, "\\" + char)
    return text


def _md_table(table: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(map(md_text, table.columns)) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(map(md_text, row)) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def _env_table(report: Report) -> pd.DataFrame:
    return pd.DataFrame(report.environment, columns=[*ENV_FIELDS.values(), BANDWIDTH])


def _status_line(report: Report) -> str:
    line = ", ".join(f"{n} {status}" for status, n in sorted(report.statuses.items()))
    return line + (f" ({report.superseded} older rows of cells measured again in a later run not shown)"
                   if report.superseded else "")


def render_markdown(report: Report) -> str:
    out = ["# benchctl report", "", f"Generated {report.generated}. Cells: {_status_line(report)}.", "",
           "## Environment", "", _md_table(_env_table(report)), ""]
    if report.machine:
        out += [f"![machine memory bandwidth]({report.machine[0].relative_to(report.out_dir).as_posix()})", ""]
    for s in report.sections:
        out += [f"## {md_text(s.title)}", "", f"Baseline for speedups: {md_text(s.baseline)}."
                + (f" ({md_text(s.note)})" if s.note else ""), ""]
        out += [f"![{md_text(s.title)} {kind}]({paths[0].relative_to(report.out_dir).as_posix()})" for kind, paths in s.figures.items()]
        out += ["", _md_table(s.table), ""]
        if len(s.failures):
            out += [f"### Cells without a time ({len(s.failures)})", "", _md_table(s.failures), ""]
    return "\n".join(out)


CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1400px;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:2px 8px}
th{background:#f0f0f0}td{text-align:left}figure{margin:1em 0}img{max-width:100%}.note{color:#a60}"""


def _img(report: Report, kind: str, paths: list[Path], title: str) -> str:
    data = base64.b64encode(paths[0].read_bytes()).decode("ascii")
    links = " · ".join(f'<a href="{html.escape(p.relative_to(report.out_dir).as_posix())}">{p.suffix[1:].upper()}</a>'
                       for p in paths)
    return (f'<figure><img alt="{html.escape(title)} {kind}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(kind)} · {links}</figcaption></figure>")


def _html_table(table: pd.DataFrame) -> str:
    return table.to_html(index=False, border=0, escape=True, na_rep="")


def render_html(report: Report) -> str:
    body = [f"<h1>benchctl report</h1><p>Generated {report.generated}. Cells: {html.escape(_status_line(report))}.</p>",
            "<p>" + " · ".join(f'<a href="#{_slug(s.op, s.target)}">{html.escape(s.title)}</a>'
                               for s in report.sections) + "</p>",
            "<h2>Environment</h2>", _html_table(_env_table(report))]
    if report.machine:
        body.append(_img(report, "memory bandwidth probes", report.machine, "machine"))
    for s in report.sections:
        note = f' <span class="note">({html.escape(s.note)})</span>' if s.note else ""
        body += [f"<h2 id=\"{_slug(s.op, s.target)}\">{html.escape(s.title)}</h2>",
                 f"<p>Baseline for speedups: <code>{html.escape(s.baseline)}</code>{note}</p>"]
        body += [_img(report, kind, paths, s.title) for kind, paths in s.figures.items()]
        body.append(_html_table(s.table))
        if len(s.failures):
            body += [f"<h3>Cells without a time ({len(s.failures)})</h3>", _html_table(s.failures)]
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>benchctl report</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")

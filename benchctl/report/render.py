"""The report's pages: `index.html` (charts embedded as base64, so it opens from disk anywhere and
survives being mailed around) and `summary.md`. Every text from outside (names, params, messages) is
escaped for the page it goes into."""

from __future__ import annotations

import base64
import html
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd

from benchctl.report.contents import Report
from benchctl.report.fastest import WORDS
from benchctl.report.profiles import FILE_ROLES, ProfileEntry
from benchctl.report.tables import BANDWIDTH, ENV_COLUMNS


def slug(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(parts))


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
    return pd.DataFrame(report.environment, columns=[*ENV_COLUMNS.values(), BANDWIDTH])


def _status_line(report: Report) -> str:
    line = ", ".join(f"{n} {status}" for status, n in sorted(report.statuses.items()))
    return line + (f" ({report.superseded} older rows of cells measured again in a later run not shown)"
                   if report.superseded else "")


def render_markdown(report: Report) -> str:
    out = ["# benchctl report", "", f"Generated {report.generated}. Passes: {_status_line(report)}.", ""]
    if not (fastest := _fastest_table(report)).empty:
        out += [f"## {FASTEST_TITLE}", "", _md_table(fastest), "", f"*{md_text(WORDS.capitalize())}.*", ""]
    if report.notes:
        out += [f"## {NOTES_TITLE}", "", *(f"- **{md_text(n.heading)}.** {_md_note(n.text)}" for n in report.notes), ""]
    out += ["## Environment", "", _md_table(_env_table(report)), ""]
    if report.machine:
        out += [f"![machine memory bandwidth]({report.machine[0].relative_to(report.out_dir).as_posix()})", ""]
    if report.load:
        out += [f"![machine load and canary]({report.load[0].relative_to(report.out_dir).as_posix()})", ""]
    if report.working_set:
        out += [f"![passes against a copy of their size]({report.working_set[0].relative_to(report.out_dir).as_posix()})",
                ""]
    for s in report.sections:
        out += [f"## {md_text(s.title)}", "", f"Baseline for speedups: {md_text(s.baseline)}."
                + (f" ({md_text(s.note)})" if s.note else ""), ""]
        out += [f"![{md_text(s.title)} {kind}]({paths[0].relative_to(report.out_dir).as_posix()})" for kind, paths in s.figures.items()]
        out += ["", *(f"*{md_text(line)}*" for line in (*s.absent, *s.legend) if line), "", _md_table(s.table), ""]
        if len(s.failures):
            out += [f"### Cells without a time ({len(s.failures)})", "", _md_table(s.failures), ""]
    return "\n".join(out + _profiles_markdown(report))


CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1400px;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:2px 8px}
th{background:#f0f0f0}td{text-align:left}figure{margin:1em 0}img{max-width:100%}.note,.notes b{color:#a60}.notes li{margin:.3em 0}
details svg{max-width:100%;height:auto}.wide{overflow-x:auto}"""


def _img(report: Report, kind: str, paths: list[Path], title: str) -> str:
    data = base64.b64encode(paths[0].read_bytes()).decode("ascii")
    links = " · ".join(f'<a href="{html.escape(p.relative_to(report.out_dir).as_posix())}">{p.suffix[1:].upper()}</a>'
                       for p in paths)
    return (f'<figure><img alt="{html.escape(title)} {kind}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(kind)} · {links}</figcaption></figure>")


def _boxed(table: str) -> str:
    """An HTML table in a box of the page's width that scrolls sideways where the table is wider (a sweep's 21
    columns, a long path in a message), so that the page itself never does."""
    return f'<div class="wide">{table}</div>'


def html_table(table: pd.DataFrame) -> str:
    return _boxed(table.to_html(index=False, border=0, escape=True, na_rep=""))


def _table_of(head: str, rows: str) -> str:
    """A table whose header cells and rows are written here (they hold links)."""
    return _boxed(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")


def _history_link(report: Report) -> list[str]:
    if report.history is None:
        return []
    href = _href(report, report.history)
    return [f'<p>These cells across runs and commits: <a href="{html.escape(href)}">history</a>.</p>']


PROFILE_COLUMNS = ["cell", "pass", "profiler", "when", "profiler's cost", "most self time", "files"]
PROFILES_TITLE = "Profiles"
FLAME_GRAPHS = 3  # the newest profiles whose flame graph the page shows in it, not only links to
FLAME_GRAPH = FILE_ROLES["flamegraph"]


def _href(report: Report, path: Path) -> str:
    return Path(os.path.relpath(path, report.out_dir)).as_posix()


def _profile_cells(p: ProfileEntry) -> list[str]:
    return [p.label, p.pass_name, p.profiler, p.created.replace("T", " "), p.cost, p.top]


def _profiles_markdown(report: Report) -> list[str]:
    if not report.profiles:
        return []
    rows = [[*map(md_text, _profile_cells(p)), " · ".join(f"[{role}]({_href(report, path)})"
                                                         for role, path in p.files.items())] for p in report.profiles]
    table = ["| " + " | ".join(PROFILE_COLUMNS) + " |", "|" + "---|" * len(PROFILE_COLUMNS),
             *("| " + " | ".join(row) + " |" for row in rows)]
    return [f"## {PROFILES_TITLE}", "", *table, ""]


def _profiles_html(report: Report) -> list[str]:
    if not report.profiles:
        return []
    head = "".join(f"<th>{html.escape(c)}</th>" for c in PROFILE_COLUMNS)
    rows = []
    for p in report.profiles:
        links = " · ".join(f'<a href="{html.escape(_href(report, path))}">{html.escape(role)}</a>'
                           for role, path in p.files.items())
        cells = "".join(f"<td>{html.escape(c)}</td>" for c in _profile_cells(p))
        rows.append(f"<tr>{cells}<td>{links}</td></tr>")
    return [f'<h2 id="{slug(PROFILES_TITLE)}">{PROFILES_TITLE}</h2>',
            _table_of(head, "".join(rows)), *_flame_graphs(report)]


def _flame_graphs(report: Report) -> list[str]:
    """The newest FLAME_GRAPHS flame graphs, in the page as SVG, so that hovering over a box shows its share
    there too. One benchctl did not draw (py-spy's own, with its script) or cannot read stays a link."""
    out = []
    for p in [p for p in report.profiles if FLAME_GRAPH in p.files][:FLAME_GRAPHS]:
        try:
            svg = p.files[FLAME_GRAPH].read_text()
        except (OSError, UnicodeDecodeError):
            continue
        if "<svg" in svg and "<script" not in svg:
            what = f"{FLAME_GRAPH}: {p.label} {p.pass_name}, {p.created.replace('T', ' ')}"
            out.append(f"<details open><summary>{html.escape(what)}</summary>{svg[svg.index('<svg'):]}</details>")
    return out


NOTES_TITLE = "What the numbers carry"
FASTEST_TITLE = "Fastest, by this run's speedups"
FASTEST_COLUMNS = ("operator", "device and pass", "fastest")


def _fastest_table(report: Report) -> pd.DataFrame:
    """Every section's answers (fastest.py), one row per device and pass, in the sections' order."""
    return pd.DataFrame([(s.title, a.title, a.text) for s in report.sections for a in s.fastest],
                        columns=list(FASTEST_COLUMNS))


def _fastest_html(report: Report) -> list[str]:
    """The answers first (`_fastest_table`), each operator a link to its section."""
    table = _fastest_table(report)
    if table.empty:
        return []
    head = "".join(f"<th>{c}</th>" for c in FASTEST_COLUMNS)
    rows = "".join(f'<tr><td><a href="#{slug(op)}">{html.escape(op)}</a></td><td>{html.escape(where)}</td>'
                   f"<td>{html.escape(text)}</td></tr>" for op, where, text in table.itertuples(index=False))
    return [f"<h2>{FASTEST_TITLE}</h2>", _table_of(head, rows),
            f'<p class="note">{html.escape(WORDS.capitalize())}.</p>']


CODE_SPAN = re.compile(r"(`[^`]+`)")  # a `command` in a note


def _md_note(line: str) -> str:
    """A note made literal in Markdown (`md_text`) but for its `command`s, which stay code spans."""
    return "".join(part if CODE_SPAN.fullmatch(part) else md_text(part) for part in CODE_SPAN.split(line))


def _code_spans(escaped: str) -> str:
    """A note's `command` (its backticks) as code on the page, as a Markdown viewer shows it."""
    return CODE_SPAN.sub(lambda m: f"<code>{m.group(1)[1:-1]}</code>", escaped)


def _notes_html(report: Report) -> list[str]:
    if not report.notes:
        return []
    items = "".join(f"<li><b>{html.escape(n.heading)}.</b> {_code_spans(html.escape(n.text))}</li>"
                    for n in report.notes)
    return [f"<h2>{NOTES_TITLE}</h2>", f'<ul class="notes">{items}</ul>']


def render_html(report: Report) -> str:
    body = [f"<h1>benchctl report</h1><p>Generated {report.generated}. "
            f"Passes: {html.escape(_status_line(report))}.</p>",
            "<p>" + " · ".join([f'<a href="#{slug(s.title)}">{html.escape(s.title)}</a>' for s in report.sections]
                               + [f'<a href="#{slug(PROFILES_TITLE)}">{PROFILES_TITLE}</a>'] * bool(report.profiles))
            + "</p>",
            *_history_link(report), *_fastest_html(report), *_notes_html(report), "<h2>Environment</h2>",
            html_table(_env_table(report))]
    if report.machine:
        body.append(_img(report, "memory bandwidth probes", report.machine, "machine"))
    if report.load:
        body.append(_img(report, "other processes' load and the machine's canary", report.load, "machine"))
    if report.working_set:
        body.append(_img(report, "each pass's GB/s against a copy of its size", report.working_set, "machine"))
    for s in report.sections:
        note = f' <span class="note">({html.escape(s.note)})</span>' if s.note else ""
        body += [f"<h2 id=\"{slug(s.title)}\">{html.escape(s.title)}</h2>",
                 f"<p>Baseline for speedups: <code>{html.escape(s.baseline)}</code>{note}</p>"]
        body += [_img(report, kind, paths, s.title) for kind, paths in s.figures.items()]
        body += [f'<p class="note">{html.escape(line)}</p>' for line in (*s.absent, *s.legend) if line]
        body.append(html_table(s.table))
        if len(s.failures):
            body += [f"<h3>Cells without a time ({len(s.failures)})</h3>", html_table(s.failures)]
    body += _profiles_html(report)
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>benchctl report</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")

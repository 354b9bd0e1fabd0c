"""Text from outside (exception messages, names, params, paths) is printed literally on the console and
escaped in the HTML and Markdown report, whatever it holds; a sweep never stops because of it."""

from __future__ import annotations

import html
import io
import re
import subprocess
import sys

from hypothesis import given, settings, strategies as st
from rich.cells import cell_len
from rich.console import Console

from benchctl import console
from benchctl.report import page as report
from benchctl.report.render import md_text
from benchctl.results import storage

# Printable text with the characters that mean something to rich, HTML or Markdown, often. Marks and
# modifiers of zero width are left out: a terminal cannot show them alone, markup or not; so are letters a
# terminal gives no cell (the Hangul fillers, U+3164 and U+FFA0: a table of one came out empty).
HOSTILE = st.text(alphabet=st.sampled_from(list("[]/\\|`*_<>&\"'#!() ab=:1\n")) | st.characters(
    blacklist_categories=("Cs", "Cc", "Cf", "Co", "Cn", "Mn", "Mc", "Me", "Sk", "Zl", "Zp")).filter(cell_len),
    min_size=1, max_size=60).filter(str.strip)


def rendered(thing) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=400, markup=False, highlight=False, emoji=False, color_system=None).print(
        thing, soft_wrap=True)
    return buffer.getvalue()


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_the_consoles_print_emoji_codes_as_written():
    """A plain string's `:fire:` or `:A:` (a hypothesis example) stays text on benchctl's consoles."""
    for shown in (console.out, console.err):
        with shown.capture() as captured:
            shown.print("cell x:A: at :fire:")
        assert captured.get() == "cell x:A: at :fire:\n"


@settings(max_examples=200, deadline=None)
@given(HOSTILE)
def test_console_lines_print_text_literally(text):
    for line in (console.styled("error: ", "bold red", text), text):
        assert squash(text) in squash(rendered(line))


@settings(max_examples=100, deadline=None)
@given(HOSTILE, HOSTILE)
def test_table_titles_headers_and_cells_print_text_literally(title, value):
    table = console.table(title, [value], [[value]])
    table.box = None  # no frame characters to tell apart from the text
    cleaned = squash(rendered(table))  # a table folds long cells over lines
    assert squash(title) in cleaned and cleaned.count(squash(value)) >= 2


@settings(max_examples=100, deadline=None)
@given(HOSTILE)
def test_progress_shows_the_current_cell_literally(text):
    bar = console.progress()
    task = bar.add_task("cells", total=1, current=text, left="about 4 min left")
    column = bar.columns[-1]
    assert squash(column.render(bar.tasks[task]).plain) == squash(text)
    assert bar.columns[-2].render(bar.tasks[task]).plain == "about 4 min left"


@settings(max_examples=200, deadline=None)
@given(HOSTILE)
def test_markdown_text_is_escaped(text):
    md = md_text(text)
    assert "<" not in md and ">" not in md and "\n" not in md
    assert not re.search(r"(?<!\\)[|`\[\]]", md.replace("\\\\", ""))  # each special character is escaped


def test_a_report_escapes_hostile_names_and_messages(tmp_path):
    evil = "<script>alert(1)</script> [bold]x[/] | `code` [link](http://x)"
    rows = [{"op": "faulty", "target": "op", "impl": "py", "device": "cpu", "dtype": "float32",
             "params": '{"batch_size": 8}', "axis": "batch_size", "axis_value": 8.0, "batch_size": 8,
             "pass": "forward", "status": "ok", "n": 3, "median_s": 1e-3, "samples_s": [1e-3] * 3},
            {"op": "faulty", "target": "op", "impl": evil, "device": "cpu", "dtype": "float32",
             "params": '{"batch_size": 8}', "axis": "batch_size", "axis_value": 8.0, "batch_size": 8,
             "pass": "forward", "status": "error", "message": evil}]
    writer = storage.RunWriter(tmp_path, "20240101-000000-aaaaaa", {})
    writer.write(rows)
    writer.finish()
    built = report.build(storage.load_run(writer.dir), tmp_path / "out")
    page = (built.out_dir / "index.html").read_text()
    assert "<script>" not in page and html.escape(evil) in page
    md = (built.out_dir / "summary.md").read_text()
    assert "<script>" not in md and md_text(evil) in md


def test_a_bracketed_error_message_does_not_stop_the_sweep(tmp_path, fixture_ops, fixture_ops_dir):
    BRACKETED = sys.modules["benchctl_ops.faulty"].BRACKETED  # the message the implementation raises

    cmd = [sys.executable, "-m", "benchctl", "run", "py,brackets", "cpu", "--op", "faulty", "--ops-dir",
           str(fixture_ops_dir), "--batch-sizes", "4,8,16", "--passes", "forward", "--min-time", "0",
           "--warmup-time", "0", "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert BRACKETED in squash(proc.stderr) or squash(BRACKETED) in squash(proc.stderr)
    run = storage.latest_run(tmp_path)
    assert storage.run_meta(run)["state"] == "complete"
    df = storage.load_run(run)
    got = {(r.impl, r.batch_size): r.status for r in df.itertuples()}
    assert got == {("py", 4): "ok", ("py", 8): "ok", ("py", 16): "ok",
                   ("brackets", 4): "ok", ("brackets", 8): "error", ("brackets", 16): "error"}
    assert set(df.loc[df["status"] == "error", "message"].map(lambda m: BRACKETED in m)) == {True}


def test_a_sweep_that_fails_is_marked_failed_with_its_reason(tmp_path, fixture_ops_dir, monkeypatch):
    from click.testing import CliRunner

    from benchctl.cli import cli

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(storage.RunWriter, "write", broken)
    result = CliRunner().invoke(cli, ["run", "py", "cpu", "--op", "faulty", "--ops-dir", str(fixture_ops_dir),
                                      "--batch-sizes", "4", "--passes", "forward", "--min-time", "0",
                                      "--warmup-time", "0", "--in-process", "--out", str(tmp_path)])
    assert result.exit_code != 0
    meta = storage.run_meta(storage.latest_run(tmp_path))
    assert meta["state"] == "failed" and "No space left on device" in meta["reason"]


def test_a_repeated_log_line_is_due_once_in_its_interval():
    now = [0.0]
    due = console.every(10.0, clock=lambda: now[0])
    said = []
    for t in (0.0, 1.0, 9.9, 10.0, 15.0, 20.5):
        now[0] = t
        said.append(due())
    assert said == [True, False, False, True, False, True]


def test_an_open_table_folds_only_the_columns_it_may_wrap():
    """compare's ten columns in a box at 160 columns wrapped every name (`grid_sample/samp` `le`): open, only the
    verdict folds and each other cell stays whole on its row's first line."""
    names = ["patch_resample/resample", "py-imagegrad", "image_size=4096", "forward_backward", "-70.9% [-72,-70]"]
    verdict = "unsure (the machine changed speed (canary -15%))"
    buffer = io.StringIO()
    Console(file=buffer, width=120, color_system=None).print(
        console.table(None, [*"abcde", "verdict"], [[*names, verdict]], wrap=("verdict",)))
    first, *folded = [line for line in buffer.getvalue().splitlines()[2:] if line.strip()]
    assert all(name in first for name in names) and len(folded) >= 1
    assert squash(first + "".join(folded)).endswith(squash(verdict))

"""The history page from a synthetic history on disk: a chart per operator pass, the step in the steps
table with its commit's message, the commits table; opened in headless Chromium; and the report of one
run links to it once runs of the same machine kind sit beside it."""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib.image
import pytest

from benchctl.report import history_page, page as report
from benchctl.analysis import history, steps

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from history_runs import COMMITS, STEP_AT, write_history  # noqa: E402
from test_browser import CHROMIUM, _resolves, browser_page  # noqa: E402


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    base = tmp_path_factory.mktemp("history")
    shas = write_history(base / "results", base / "repo", impls=("py", "fused"))
    all_series = history.series(history.load(root=base / "results"))
    found = steps.all_steps(all_series)
    said: list[str] = []
    index = history_page.build(all_series, found, history.messages(all_series), base / "results" / "history",
                               said.append)
    return index, shas, found, said


def test_the_page_has_a_chart_per_pass_and_the_steps_with_their_messages(made):
    index, shas, found, said = made
    text = index.read_text()
    (png,) = (index.parent / "figures").glob("*.png")
    assert matplotlib.image.imread(png).shape[1] > 600
    assert len(found) == 2 and {s.series.cell["impl"] for s in found} == {"py", "fused"}
    assert text.count("<img ") == 1 and text.count(f"change {STEP_AT}") == 3  # two steps, one commit row
    assert said == ["history: drawing the charts (0 of 1 done)", "history: drawing the charts (1 of 1 done)"]
    assert f"runs. {steps.summary(found)}.</p>" in text
    # a row per step and per commit (the headers' rows are <tr style=...>)
    assert all(sha[:8] in text for sha in shas) and text.count("<tr>") == len(found) + COMMITS


def test_the_history_page_opens_in_chromium(made, tmp_path):
    index, _, _, _ = made
    with browser_page() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        view = browser.new_page(viewport={"width": 1400, "height": 1000})
        problems: list[str] = []
        view.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
        view.on("pageerror", lambda exc: problems.append(str(exc)))
        view.goto(index.as_uri(), wait_until="load")
        images = view.eval_on_selector_all("img", "els => els.map(e => e.complete && e.naturalWidth > 0)")
        links = view.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        shot = tmp_path / "history.png"
        view.screenshot(path=str(shot), full_page=True)
        text = view.inner_text("body")
        browser.close()
    assert images == [True] and links and all(map(_resolves, links)) and problems == []
    assert "slower" in text and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_run_report_links_to_the_history_of_its_machine_kind(made):
    index, _, _, _ = made
    root = index.parent.parent
    run = sorted(p for p in root.iterdir() if p.name.startswith("2024"))[0]
    loaded = report.load_results([run])
    built = report.build(loaded.rows, report.default_out_dir(loaded.folders), loaded.metas,
                         history=history_page.for_run(run))
    html = (built.out_dir / "index.html").read_text()
    assert 'href="../../history/index.html"' in html
    assert (built.out_dir / "../../history/index.html").resolve() == index.resolve()


def test_a_lone_run_has_no_history(tmp_path):
    root = tmp_path / "results"
    write_history(root, tmp_path / "repo")
    for run in sorted(p for p in root.iterdir())[1:]:
        for f in run.iterdir():
            f.unlink()
        run.rmdir()
    (run,) = list(root.iterdir())
    assert history_page.for_run(run) is None


def test_cells_that_follow_the_machine_are_drawn_and_listed(tmp_path):
    write_history(tmp_path / "results", tmp_path / "repo", probed=True)
    all_series = history.series(history.load(root=tmp_path / "results"))
    index = history_page.build(all_series, steps.all_steps(all_series), {}, tmp_path / "page")
    text = index.read_text()
    assert "<h2>What moved the cells between runs of the same code</h2>" in text and text.count("<img ") == 2
    assert matplotlib.image.imread(index.parent / "figures" / "follows.png").shape[1] > 400  # one panel
    assert "<p>1 of 1 cells' times follow the machine across their runs of the same code" in text
    assert "<td>memory probe</td>" in text and "<td>-1.00</td>" in text and "<td>10</td>" in text


def test_steps_at_commits_that_did_not_touch_the_code_are_folded_under_one_line(tmp_path):
    """Every run records the same code digest: the steps are the machine's, not the code's."""
    write_history(tmp_path / "results", tmp_path / "repo", impls=("py", "fused"), probed=True)
    all_series = history.series(history.load(root=tmp_path / "results"))
    found = steps.all_steps(all_series)
    assert found and all(s.code_unchanged for s in found)
    text = history_page.build(all_series, found, history.messages(all_series), tmp_path / "page").read_text()
    steps_part = text[text.index("<h2>Steps, newest first</h2>"):text.index("<h2>What moved")]
    assert "<p>None where the cell's code changed.</p>" in steps_part
    assert f"<details><summary>{len(found)} at commits that did not touch the cell's code" in steps_part
    assert steps_part.count("<tr>") == len(found)  # each of them in the folded table

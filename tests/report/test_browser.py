"""The HTML report in a real browser: headless Chromium (the system's package, driven by playwright) opens
index.html; every image loads, every link resolves, the console stays clean; a screenshot is kept.

.ci/run installs Debian's chromium; where it or playwright is missing, the test skips and says which.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from benchctl.report import page as report
from benchctl.profile import flame
from benchctl.profile.stacks import parse_collapsed, speedscope
from test_page import row, standard_rows, write_run
from test_profiles import FIXTURE, write_profile

LONG_PATH = "/data/" + "_".join(["imagenet_train_shard"] * 30) + ".npy"
CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


def browser_page():
    """A headless Chromium page, or a skip that says what is missing."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    if CHROMIUM is None:
        pytest.skip("no Chromium on PATH (Debian: apt-get install chromium)")
    return sync_api.sync_playwright()


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    """A report with every kind of content: charts, failed cells, hostile text in a message, a path too long for
    the page's width."""
    rows = standard_rows() + [{**row("cpp", "cpu", "forward", 64, status="error"),
                               "message": "cannot read [/data/x.npy] <script>alert(1)</script> & more"},
                              {**row("cpp", "cpu", "backward", 64, status="error"), "message": LONG_PATH}]
    root = tmp_path_factory.mktemp("results")
    run = write_run(root, "20240101-000000-browse", rows)
    profile = write_profile(root, "spy", "hoconv2d", "py-spy", 1.5).parent  # its flame graph is in the page
    stacks = parse_collapsed(FIXTURE.read_text())
    flame.write(stacks, "hoconv2d/module py cpu backward", profile / "flamegraph.svg")
    (profile / "speedscope.json").write_text(json.dumps(speedscope(stacks, "hoconv2d")))
    loaded = report.load_results([run])
    built = report.build(loaded.rows, report.default_out_dir(loaded.folders), loaded.metas, profiles_root=root)
    return built.out_dir / "index.html"


def test_the_report_opens_in_chromium_with_every_image_and_link_working(index, tmp_path):
    with browser_page() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        problems: list[str] = []
        page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.on("requestfailed", lambda req: problems.append(f"{req.url}: {req.failure}"))
        page.goto(index.as_uri(), wait_until="load")
        images = page.eval_on_selector_all("img", "els => els.map(e => [e.src, e.complete && e.naturalWidth > 0])")
        links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        boxes = page.eval_on_selector_all("details svg title", "els => els.length")
        graph_width = page.eval_on_selector("details svg", "e => e.getBoundingClientRect().width")
        page_width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        path_box = page.evaluate("p => [...document.querySelectorAll('.wide')].filter(b => b.textContent.includes(p))"
                                 ".map(b => [b.scrollWidth, b.clientWidth])", LONG_PATH)
        dialogs: list[str] = []
        page.on("dialog", lambda d: dialogs.append(d.message))
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        text = page.inner_text("body")
        browser.close()
    assert images and all(ok for _, ok in images), [src for src, ok in images if not ok]
    assert not [href for href in links if not _resolves(href)]
    assert problems == [] and dialogs == []
    assert boxes == 22 and 0 < graph_width <= 1400  # the fixture's boxes, each with its hover text, in the page
    assert page_width[0] <= page_width[1]  # the page never scrolls sideways...
    assert len(path_box) == 1 and path_box[0][0] > path_box[0][1]  # ...the table too wide for it scrolls in its box
    assert "cannot read [/data/x.npy] <script>alert(1)</script> & more" in text  # shown as text, never run
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _resolves(href: str) -> bool:
    """A file link names a file that exists; an in-page anchor is fine; the report has no web links."""
    url = urlparse(href)
    return url.scheme == "file" and Path(unquote(url.path)).exists()

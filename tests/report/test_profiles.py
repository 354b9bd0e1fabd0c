"""The profiles of a report's operators (benchctl.report.profiles): manifests written by the profiler's own
writer, found for the report's operators only, and linked from both pages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchctl.ops.cells import Cell
from benchctl.profile import flame
from benchctl.profile import profilers as profiling
from benchctl.profile.stacks import parse_collapsed, top_frames
from benchctl.report import page as report
from benchctl.report import profiles
from benchctl.results import storage
from tests.report.test_page import row, write_run

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "profile_stacks.txt"
TORCH_OPS = ({"name": "aten::fill_", "pct": 43.0}, {"name": "aten::convolution_backward", "pct": 21.2},
             {"name": "aten::add_", "pct": 13.0}, {"name": "aten::mul", "pct": 4.0})


def write_profile(root: Path, name: str, op: str, profiler: str, slowdown: float, ran: float | None = None,
                  other_cores: float | None = None, device: str = "cpu", flush_caches: bool = False) -> Path:
    """A manifest as `benchctl profile` writes it: 4 repetitions, 0.1 s each alone (on the CPU all of it);
    under the profiler the thread ran `ran` times as long, and others kept `other_cores` busy, where measured."""
    cell = Cell.make(op, "module", "py", device, "float32", {"batch_size": 8}, ("backward",))
    top = top_frames(parse_collapsed(FIXTURE.read_text())) if profiler == "py-spy" else None
    files = {"flamegraph": "flamegraph.svg", "speedscope": "speedscope.json"} if top else {"trace": "trace.json"}
    result = profiling.ProfileResult(root / storage.PROFILES_DIR / name, profiler, 4, 0.4 * slowdown, files, top,
                                     top_ops=() if top else TORCH_OPS, unprofiled_s=0.1,
                                     cpu_s=None if ran is None else 0.4 * ran, unprofiled_cpu_s=0.1,
                                     other_cores=other_cores)
    result.out_dir.mkdir(parents=True)
    return profiling.write_manifest(profiling.ProfileRequest(cell, "backward", flush_caches=flush_caches), result)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write_profile(tmp_path, "a-spy", "hoconv2d", "py-spy", 7.0)
    write_profile(tmp_path, "b-torch", "hoconv2d", "torch", 1.3, ran=1.3, other_cores=1.0)
    write_profile(tmp_path, "c-other", "lstm_cell", "py-spy", 1.0)
    (tmp_path / storage.PROFILES_DIR / "d-broken").mkdir()
    (tmp_path / storage.PROFILES_DIR / "d-broken" / storage.PROFILE_MANIFEST).write_text("{not json")
    return tmp_path


def test_the_report_operators_profiles_with_their_top_operators(root: Path) -> None:
    found = profiles.find(root, {"hoconv2d"})
    assert sorted(p.profiler for p in found) == ["py-spy", "torch"]  # not lstm_cell's, not the broken file
    spy = next(p for p in found if p.profiler == "py-spy")
    # The fixture's ATen ops by self share: zero_ 30, mul_Tensor 15, copy_ 10 of 65 timed samples.
    assert spy.top == "zero_ 46%, mul_Tensor 23%, copy_ 15%"
    assert spy.slowdown == pytest.approx(7.0) and spy.slowed and spy.cost == "7.0x (shares may be bent)"
    assert set(spy.files) == {"flame graph", "speedscope", storage.PROFILE_MANIFEST}
    torch_profile = next(p for p in found if p.profiler == "torch")
    assert torch_profile.top == "aten::fill_ 43%, aten::convolution_backward 21%, aten::add_ 13%"
    # all of its cost in its thread, and profiled beside other work
    assert torch_profile.cost == "1.3x, 0% of it off the CPU (shared the machine)" and not torch_profile.slowed
    assert profiles.find(root / "nowhere", {"hoconv2d"}) == []


def test_a_gpu_torch_profile_names_the_operators_by_their_kernels_time(tmp_path: Path) -> None:
    manifest = write_profile(tmp_path, "gpu", "hoconv2d", "torch", 1.1)
    data = json.loads(manifest.read_text())
    data["top_ops"] = [{"name": "add_kernel", "pct": 75.0, "device": True}, {"name": "aten::add", "pct": 75.0},
                       {"name": "mul_kernel", "pct": 25.0, "device": True}, {"name": "aten::mul", "pct": 25.0}]
    manifest.write_text(json.dumps(data))
    assert profiles.find(tmp_path, {"hoconv2d"})[0].top == "aten::add 75%, aten::mul 25%"  # each kernel's time once


def test_a_profile_on_cold_caches_says_so_beside_its_pass(tmp_path: Path) -> None:
    write_profile(tmp_path, "warm", "hoconv2d", "py-spy", 1.0)
    write_profile(tmp_path, "cold", "hoconv2d", "py-spy", 1.0, flush_caches=True)
    write_profile(tmp_path, "cold-gpu", "hoconv2d", "torch", 1.0, device="cuda", flush_caches=True)
    passes = {p.files[storage.PROFILE_MANIFEST].parent.name: p.pass_name for p in profiles.find(tmp_path, {"hoconv2d"})}
    assert passes == {"warm": "backward", "cold": "backward, caches flushed", "cold-gpu": "backward, L2 flushed"}


def test_both_pages_link_each_profiles_files(root: Path) -> None:
    run = write_run(root, "20240101-000000-aaaaaa", [row("py", "cpu", "backward", 8)])
    loaded = report.load_results([run])
    built = report.build(loaded.rows, root / "rep", loaded.metas, profiles_root=root)
    assert len(built.profiles) == 2
    page = (root / "rep" / "index.html").read_text()
    hrefs = re.findall(r'href="([^"#]+)"', page)
    spy = [h for h in hrefs if "a-spy" in h]
    assert sorted(Path(h).name for h in spy) == ["flamegraph.svg", storage.PROFILE_MANIFEST, "speedscope.json"]
    assert all((root / "rep" / h).resolve() == (root / storage.PROFILES_DIR / "a-spy" / Path(h).name).resolve()
               for h in spy)
    assert "7.0x (shares may be bent)" in page and 'href="#Profiles"' in page
    summary = (root / "rep" / "summary.md").read_text()
    assert "## Profiles" in summary and "[flame graph](../profiles/a-spy/flamegraph.svg)" in summary
    assert "lstm_cell" not in summary


def test_the_html_page_shows_the_newest_flame_graphs_benchctl_drew(root: Path) -> None:
    stacks = parse_collapsed(FIXTURE.read_text())
    flame.write(stacks, "hoconv2d/module py cpu backward", root / storage.PROFILES_DIR / "a-spy" / "flamegraph.svg")
    run = write_run(root, "20240101-000000-aaaaaa", [row("py", "cpu", "backward", 8)])
    loaded = report.load_results([run])
    report.build(loaded.rows, root / "rep", loaded.metas, profiles_root=root)
    page = (root / "rep" / "index.html").read_text()
    assert page.count("<details open><summary>flame graph: hoconv2d") == 1  # the torch profile has none
    assert "<title>timed loop: 65 of 65 samples, 100.0% [94, 100]</title>" in page  # the hover text, in the page
    assert "<?xml" not in page


def test_a_flame_graph_with_a_script_stays_a_link(root: Path) -> None:
    (root / storage.PROFILES_DIR / "a-spy" / "flamegraph.svg").write_text("<svg><script>init()</script></svg>")
    run = write_run(root, "20240101-000000-aaaaaa", [row("py", "cpu", "backward", 8)])
    loaded = report.load_results([run])
    report.build(loaded.rows, root / "rep", loaded.metas, profiles_root=root)
    page = (root / "rep" / "index.html").read_text()
    assert "<details" not in page and "<script" not in page and "a-spy/flamegraph.svg" in page


def test_a_report_without_profiles_has_no_profiles_section(tmp_path: Path) -> None:
    run = write_run(tmp_path, "20240101-000000-aaaaaa", [row("py", "cpu", "backward", 8)])
    loaded = report.load_results([run])
    report.build(loaded.rows, tmp_path / "rep", loaded.metas, profiles_root=tmp_path)
    assert "Profiles" not in (tmp_path / "rep" / "index.html").read_text()
    assert profiles.find(tmp_path, {"hoconv2d"}) == []

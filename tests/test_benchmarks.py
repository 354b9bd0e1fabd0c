"""The benchmark scripts' own logic that a GPU run depends on, checked here so that no GPU time is lost to it."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def _module(name: str, monkeypatch):
    """benchmarks/NAME.py loaded as a module (registered while the test runs: its dataclasses look it up)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(p.stem for p in BENCHMARKS.glob("*.py")))
def test_every_benchmark_script_loads(name, monkeypatch):
    """What each script imports from benchctl is still there (a renamed or moved name fails here, not on a
    GPU machine whose minutes are counted)."""
    assert callable(_module(name, monkeypatch).main)


def test_the_cuda_ab_bench_stages_every_header_the_checkout_s_kernels_include(tmp_path, monkeypatch):
    """`--own` builds the checkout's hoconv2d_cuda.cu from one folder: each header it includes, and each
    header those include, must be staged beside it."""
    bench = _module("hoconv2d_cuda_ab_bench", monkeypatch)
    monkeypatch.setattr(bench.tempfile, "gettempdir", lambda: str(tmp_path))
    staged = bench.stage(bench.OWN, 0)
    wanted = {name for f in staged.iterdir() for name in INCLUDE.findall(f.read_text())}
    assert "hoconv2d_tile.h" in wanted and wanted <= {f.name for f in staged.iterdir()}


def test_the_cuda_ab_bench_takes_a_version_folder_as_gpu_checks_makes_it(tmp_path, monkeypatch):
    """gpu_checks.sh stages a version of hoconv2d_variants with the headers it includes; the checkout has one
    more (hoconv2d_tile.h), which an older version neither has nor needs."""
    bench = _module("hoconv2d_cuda_ab_bench", monkeypatch)
    script = (BENCHMARKS / "gpu_checks.sh").read_text()
    copied = re.search(r"^\s*cp (extensions/\S+ .*) \$d$", script, re.M).group(1).split()
    version = tmp_path / "b6"
    version.mkdir()
    for path in copied:
        (version / Path(path).name).write_text((BENCHMARKS.parent / path).read_text())
    variants = BENCHMARKS / "hoconv2d_variants" / "hoconv2d_backward_cuda.cu"
    (version / "hoconv2d_cuda.cu").write_text(variants.read_text())
    files = bench.version_files(version)
    assert [f.name for f in files] == ["hoconv2d_cuda.cu", "hoconv2d.h", "hoconv2d_checks.h", "benchctl_hd.h"]
    included = set(INCLUDE.findall(files[0].read_text()))
    assert included <= {f.name for f in files}
    with pytest.raises(SystemExit, match="no hoconv2d_cuda.cu there"):
        bench.version_files(tmp_path)

"""A user's own C++ extension operator, end to end through the command line: a float32-only kernel with a
number among its inputs (tests/fixtures/extension_ops/fmadd.py) is built, checked, run, reported on and
profiled from an --ops-dir, as a user outside the repository would."""

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchctl.cache import CACHE_ENV
from benchctl.cli import cli
from benchctl.results import storage

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "extension_ops"


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The fixture operator copied outside the repository, with a cache of its own."""
    home = tmp_path_factory.mktemp("user")
    shutil.copytree(FIXTURE, home / "ops")
    return {"ops": str(home / "ops"), "home": home, "env": {CACHE_ENV: str(home / "cache")}}


def invoke(user: dict, *args: str):
    return CliRunner(env=user["env"]).invoke(cli, [*args, "--ops-dir", user["ops"]])


def test_build_compiles_the_users_sources_into_the_cache(user):
    result = invoke(user, "build", "fmadd")
    assert result.exit_code == 0, result.output
    assert any(line.startswith("built benchctl_fmadd_cpu") for line in result.stdout.splitlines())
    assert list((user["home"] / "cache").rglob("*.so"))
    again = invoke(user, "build", "fmadd")
    assert any(line.startswith("loaded benchctl_fmadd_cpu") for line in again.stdout.splitlines())


def test_check_judges_the_float32_kernel_at_its_own_dtype(user):
    result = invoke(user, "check", "cpp", "cpu", "--op", "fmadd")
    assert result.exit_code == 0, result.output
    assert "float32" in result.output and "opcheck" in result.output
    assert "skipped: gradcheck needs float64; cpp supports" in result.output  # the table wraps the rest
    assert "skipped: skipped" not in result.output
    assert result.output.count("pass") == 2 and "FAIL" not in result.output  # reference and opcheck


def test_run_report_and_profile(user):
    out = user["home"] / "results"
    result = invoke(user, "run", "all", "cpu", "--op", "fmadd", "--quick", "--min-time", "0.01",
                    "--max-time", "0.2", "--warmup-time", "0", "--out", str(out))
    assert result.exit_code == 0, result.output
    rows = storage.load(root=out)
    assert set(rows["status"]) == {"ok"} and set(rows["impl"]) == {"py", "cpp"} and len(rows) == 12
    assert rows["correct"].all()
    float64 = invoke(user, "run", "py,cpp", "cpu", "--op", "fmadd", "--dtype", "float64", "--batch-sizes", "4",
                     "--min-time", "0.01", "--warmup-time", "0", "--out", str(user["home"] / "f64"))
    f64 = storage.load(root=user["home"] / "f64")
    unavailable = f64[f64["impl"] == "cpp"]
    assert float64.exit_code == 0 and set(f64[f64["impl"] == "py"]["status"]) == {"ok"}
    assert set(unavailable["status"]) == {"unavailable"} and len(unavailable) == 3
    assert set(unavailable["message"]) == {"cpp supports float32 only, not float64"}

    report = CliRunner(env=user["env"]).invoke(cli, ["report", "--root", str(out)])
    assert report.exit_code == 0, report.output
    page = (storage.latest_run(out) / storage.REPORT_DIR / "summary.md").read_text()
    assert "fmadd" in page and "cpp" in page

    prof = user["home"] / "prof"
    result = invoke(user, "profile", "fmadd", "cpp", "cpu", "--profiler", "torch", "--duration", "0.3",
                    "--out", str(prof))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in prof.iterdir()) == ["flamegraph.svg", "op_stacks.txt", "profile.json", "top_ops.csv",
                                                      "trace.json"]
    assert "fmadd_ext::fmadd" in (prof / "top_ops.csv").read_text()  # the user's kernel, by its op name

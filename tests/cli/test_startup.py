"""Start-up: usage errors are answered before torch is imported, and reading runs never imports it."""

import subprocess
import sys

import pytest

from benchctl.results.storage import RunWriter

ROW = {"op": "hoconv2d", "target": "filter", "impl": "py", "device": "cpu", "dtype": "float32",
       "params": '{"batch_size": 1}', "axis": "batch_size", "axis_value": 1.0, "batch_size": 1,
       "pass": "forward", "status": "ok", "n": 3, "median_s": 0.002, "samples_s": [0.001, 0.002, 0.004]}

# Prints whether torch was imported once the command has ended (click's standalone mode exits).
PROBE = ("import atexit, sys; atexit.register(lambda: print('TORCH', 'torch' in sys.modules, file=sys.stderr)); "
         "from benchctl.cli import main; sys.argv = ['benchctl'] + sys.argv[1:]; main()")


def benchctl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, message", [
    (("run", "py", "tpu"), "unknown device 'tpu'"),
    (("run", "py", "cpu", "--passes", "fwd"), "unknown pass 'fwd'"),
    (("run", "py", "cpu", "--dtype", "float8"), "unknown dtype 'float8'"),
    (("run", "py", "cpu", "--param", "H"), "--param 'H': expected KEY=VALUE"),
    (("check", "py", "tpu"), "unknown device 'tpu'"),
    (("profile", "hoconv2d", "py", "tpu"), "unknown device 'tpu'"),
    (("profile", "hoconv2d", "py", "cpu", "--memory"), "--memory needs --profiler torch"),
])
def test_usage_errors_do_not_import_torch(args, message):
    result = benchctl(*args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "TORCH False" in result.stderr


def test_report_and_compare_of_existing_runs_do_not_import_torch(tmp_path):
    for run_id in ("a", "b"):
        writer = RunWriter(tmp_path, run_id, {})
        writer.write([ROW])
        writer.finish()
    report = benchctl("report", str(tmp_path / "a"), "--out", str(tmp_path / "out"))
    assert report.returncode == 0 and "TORCH False" in report.stderr, report.stderr
    compare = benchctl("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert compare.returncode == 0 and "TORCH False" in compare.stderr, compare.stderr

"""`benchctl build` through click's CliRunner: a real build of hoconv2d, an unknown operator, and a
compile error shown as one line plus the compiler's error lines."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchctl.cache import CACHE_ENV
from benchctl.ops import build
from benchctl.cli import cli


def test_build_hoconv2d() -> None:
    result = CliRunner().invoke(cli, ["build", "hoconv2d"])
    assert result.exit_code == 0, result.output
    line = next(l for l in result.stdout.splitlines() if "benchctl_hoconv2d_cpu" in l)
    assert line.startswith(("built ", "loaded ")) and line.endswith(" s")
    assert "building benchctl_hoconv2d_cpu ..." in result.stderr


def test_second_build_is_cached() -> None:
    runner = CliRunner()
    runner.invoke(cli, ["build", "hoconv2d"])
    result = runner.invoke(cli, ["build", "hoconv2d"])
    assert result.exit_code == 0
    assert "loaded benchctl_hoconv2d_cpu (cached)" in result.stdout


def test_unknown_operator_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["build", "no_such_op"])
    assert result.exit_code == 2
    assert "no extension sources for 'no_such_op'" in result.stderr and "hoconv2d" in result.stderr


def test_compile_error_shows_the_compiler_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "extensions"
    (root / "broken_cli").mkdir(parents=True)
    (root / "broken_cli" / "broken.cpp").write_text("int broken() { return undeclared_name_in_broken_cpp; }\n")
    monkeypatch.setattr(build, "EXTENSIONS_DIR", root)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    result = CliRunner().invoke(cli, ["build"])
    assert result.exit_code == 1
    assert "error: building benchctl_broken_cli_cpu failed" in result.stderr
    assert "undeclared_name_in_broken_cpp" in result.stderr
    assert "1 library failed to build: broken_cli (cpu)" in result.stderr


def test_operators_build_side_by_side_up_to_jobs_and_every_failure_is_named() -> None:
    from benchctl.cli import build as build_cli

    together = threading.Barrier(2, timeout=10)  # passes only if two builds run at once
    def build_op(label, make):
        together.wait()
        return ["cuda"] if label == "b" else []
    chosen = [("a", None), ("b", None)]
    assert build_cli.build_all(chosen, build_op, jobs=2) == [("b", "cuda")]
    order = []
    assert build_cli.build_all(chosen, lambda label, make: order.append(label) or [], jobs=1) == []
    assert order == ["a", "b"]
    assert build_cli.default_jobs() >= 1


def test_help_lists_the_options() -> None:
    result = CliRunner().invoke(cli, ["build", "--help"])
    assert result.exit_code == 0
    assert "--cuda / --no-cuda" in result.output and "--verbose" in result.output


def test_an_extension_declared_beside_a_users_operator_file_builds_and_checks() -> None:
    """examples/ops/sqadd.py declares its sources (examples/ops/sqadd/) as benchctl's operators do."""
    examples = str(Path(__file__).resolve().parents[2] / "examples" / "ops")
    result = CliRunner().invoke(cli, ["build", "sqadd", "--ops-dir", examples])
    assert result.exit_code == 0, result.output
    assert any(line.startswith(("built benchctl_sqadd_cpu", "loaded benchctl_sqadd_cpu"))
               for line in result.stdout.splitlines())
    result = CliRunner().invoke(cli, ["check", "cpp", "cpu", "--op", "sqadd", "--ops-dir", examples])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("pass") == 4  # float32, float64, gradcheck, opcheck


def test_resources_builds_the_cuda_library_then_shows_each_kernels_registers_and_spills(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from benchctl.cli import build as build_cli
    from benchctl.ops import resources
    from tests.ops.test_resources import PTXAS

    kinds_built = []
    monkeypatch.setattr(build_cli, "_build_op", lambda label, make, kinds, verbose: kinds_built.append(kinds) or [])
    monkeypatch.setattr(resources, "of_library", lambda lib: resources.parse(PTXAS) if lib.kind == "cuda" else [])
    result = CliRunner().invoke(cli, ["build", "hoconv2d", "--resources"])
    assert result.exit_code == 0, result.output
    assert kinds_built == [("cpu", "cuda")]  # --resources implies --cuda
    assert "hoconv2d: CUDA kernels as ptxas compiled them" in result.stdout
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in result.stdout.splitlines()
            if "backward_k_kernel<float, 7, 4>" in line]
    assert rows == [["backward_k_kernel<float, 7, 4>", "sm_80", "64", "50%", "16 / 16", "16", "17024", "1"],
                    ["backward_k_kernel<float, 7, 4>", "sm_90", "64", "50%", "12 / 12", "16", "17024", "1"]]


def test_resources_shows_each_triton_kernel_config_with_its_occupancy_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchctl.cli import build as build_cli
    from benchctl.ops import resources, triton_resources
    from benchctl.ops.resources import KernelResources

    from tests.ops.test_resources import PTXAS

    monkeypatch.setattr(build_cli, "_build_op", lambda label, make, kinds, verbose: [])
    monkeypatch.setattr(resources, "of_library", lambda lib: resources.parse(PTXAS))
    asked = []
    narrow = KernelResources("lstm_pointwise_fwd BLOCK=32 w1", "sm_90", 33, 0, 0, 0, 0, 0, warps_per_block=1)
    spilt = KernelResources("lstm_pointwise_bwd BLOCK=64 w4", "sm_90", 32, 8, 8, 8, 0, 0, warps_per_block=4)
    monkeypatch.setattr(triton_resources, "of_operator",
                        lambda op, dirs: asked.append(op) or [("triton float32", narrow), ("triton float32", spilt)])
    result = CliRunner().invoke(cli, ["build", "lstm_cell", "hoconv2d", "--resources"])
    assert result.exit_code == 0, result.output
    assert asked == ["hoconv2d", "lstm_cell"]
    titles = [line.strip() for line in result.stdout.splitlines() if "kernels as" in line]
    assert titles == [f"{op}: {what}" for op in ("hoconv2d", "lstm_cell") for what in (
        "CUDA kernels as ptxas compiled them", "Triton kernels as Triton compiled them (default params)")]
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in result.stdout.splitlines()
            if "triton float32:" in line]
    narrow_row = ["triton float32: lstm_pointwise_fwd BLOCK=32 w1", "sm_90", "33", "50%", "0 / 0", "0", "0", "0"]
    spilt_row = ["triton float32: lstm_pointwise_bwd BLOCK=64 w4", "sm_90", "32", "100%", "8 / 8", "8", "0", "0"]
    assert rows == 2 * [narrow_row, spilt_row]


def test_resources_of_a_name_with_neither_sources_nor_triton_kernels_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["build", "nope", "--resources"])
    assert result.exit_code == 2
    assert "no extension sources or Triton kernels for 'nope'; choose from:" in result.output
    assert "lstm_cell" in result.output and "Traceback" not in result.output


def test_an_operator_whose_kernels_cannot_be_read_does_not_hide_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchctl.cli import build as build_cli
    from benchctl.errors import BenchError
    from benchctl.ops import resources, triton_resources
    from benchctl.ops.resources import KernelResources

    def of_operator(op: str, dirs: tuple[str, ...]) -> list:
        if op == "hoconv2d":
            raise BenchError("compiling hoconv2d's Triton kernels failed: hoconv_fwd for sm_80: NameError: x")
        return [("triton float32", KernelResources("lstm_pointwise_bwd w4", "sm_90", 30, 0, 0, 0, 0, 0, 4))]

    monkeypatch.setattr(build_cli, "_build_op", lambda label, make, kinds, verbose: [])
    monkeypatch.setattr(resources, "of_library", lambda lib: [])
    monkeypatch.setattr(triton_resources, "of_operator", of_operator)
    result = CliRunner().invoke(cli, ["build", "hoconv2d", "lstm_cell", "--resources"])
    assert result.exit_code == 1
    assert "error: compiling hoconv2d's Triton kernels failed: hoconv_fwd for sm_80: NameError: x" in result.output
    assert "lstm_pointwise_bwd w4" in result.stdout  # the operator after it still shows
    assert result.output.strip().endswith("error: the kernels of hoconv2d could not be read (above)")

"""The package's layers hold: import-linter's contracts (pyproject.toml), and reading results needs no torch."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "0 broken" in proc.stdout


def test_results_and_report_load_without_torch():
    code = ("import sys, benchctl.results.storage, benchctl.analysis.compare, benchctl.analysis.summary, "
            "benchctl.report.page, benchctl.report.charts; assert 'torch' not in sys.modules, 'torch imported'")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_modules_and_functions_stay_small():
    """One job per module (at most 300 lines) and small functions (at most 40 lines)."""
    import ast

    too_big = []
    for path in [*(REPO / "benchctl").rglob("*.py"), *(REPO / "implementations").rglob("*.py")]:
        text = path.read_text()
        if text.count("\n") > 300:
            too_big.append(f"{path.relative_to(REPO)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 40:
                too_big.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}: "
                               f"{node.end_lineno - node.lineno + 1} lines")
    assert not too_big, too_big

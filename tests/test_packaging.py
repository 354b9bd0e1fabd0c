"""A wheel, installed away from the checkout, has every operator and its C++/CUDA sources.

The wheel is built from a copy of the sources (so no build/ or egg-info lands in the checkout) and
installed with `pip install --no-deps --target`, which reuses the dependencies this Python already has;
the commands then run from an empty folder with only the installed copy on PYTHONPATH. About 20 s here
(2 cores): 1 s to build, 0.5 s to install, 3 s for `list`, 3 s for the paths, 13 s for `check py cpu`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The built-in operators, found as the registry finds them: each `<name>.py` or `<name>/__init__.py` in
# implementations/ not named with a leading `_`; those with C++/CUDA sources have a folder in extensions/.
OPERATORS = {p.stem for p in (REPO / "implementations").iterdir() if not p.name.startswith(("_", "."))
             and (p.suffix == ".py" or (p / "__init__.py").is_file())}
EXTENSION_OPS = {p.name for p in (REPO / "extensions").iterdir()
                 if p.is_dir() and (any(p.glob("*.cpp")) or any(p.glob("*.cu")))}
SOURCES = ("pyproject.toml", "README.md", "benchctl", "implementations", "extensions")
# What the installed copy resolves; printed as JSON by a child process.
WHERE = """
import json, benchctl
from benchctl.ops import build, registry
ops = registry.discover()
print(json.dumps({"package": benchctl.__file__, "ops_dir": str(registry.BUILTIN_OPS_DIR),
                  "extensions_dir": str(build.EXTENSIONS_DIR), "extension_ops": build.extension_ops(),
                  "sources": {name: op.source for name, op in ops.items()}}))
"""

pytestmark = pytest.mark.slow


def checkout_files(folder: str, suffixes: tuple[str, ...]) -> set[str]:
    root = REPO / folder
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.suffix in suffixes and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the folder it is installed into)."""
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif (REPO / name).exists():
            shutil.copy(REPO / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run([*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(tmp / "dist"), str(src)], check=True, timeout=120, capture_output=True)
    (wheel,) = (tmp / "dist").glob("benchctl-*.whl")
    site = tmp / "site"
    subprocess.run([*pip, "install", "--quiet", "--no-deps", "--no-index", "--no-compile", "--target", str(site),
                    str(wheel)], check=True, timeout=120, capture_output=True)
    return wheel, site


def run_installed(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "BENCHCTL_OPS_PATH"}  # the built-in operators only
    env["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_operators_are_found_in_the_checkout():
    """Every operator has its folder in implementations/ and every extension folder is an operator's."""
    assert len(OPERATORS) >= 2 and EXTENSION_OPS and EXTENSION_OPS <= OPERATORS


def test_the_wheel_holds_the_package_the_operators_and_their_sources(installed):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    under = lambda prefix: {n.removeprefix(prefix) for n in names if n.startswith(prefix)}  # noqa: E731
    assert checkout_files("benchctl", (".py",)) <= under("benchctl/")  # every subpackage is listed
    assert checkout_files("implementations", (".py",)) == under("benchctl/implementations/")
    assert checkout_files("extensions", (".cpp", ".cu", ".cuh", ".h")) == under("benchctl/extensions/")
    assert len(under("benchctl/extensions/")) >= 18 and "benchctl/extensions/common/benchctl_hd.h" in names


def test_the_installed_benchctl_lists_and_checks_every_operator(installed, tmp_path):
    _, site = installed
    where = run_installed(site, tmp_path, "-c", WHERE)
    assert where.returncode == 0, where.stderr
    found = json.loads(where.stdout)
    # The installed copy runs, with its own operators and sources, not the checkout's.
    for key in ("package", "ops_dir", "extensions_dir"):
        assert Path(found[key]).is_relative_to(site), (key, found[key])
    assert not Path(found["package"]).is_relative_to(REPO)
    assert set(found["sources"]) == OPERATORS
    assert all(Path(s).is_relative_to(site / "benchctl" / "implementations") for s in found["sources"].values())
    assert set(found["extension_ops"]) == EXTENSION_OPS

    # The console script pip wrote, run by this Python.
    listed = run_installed(site, tmp_path, str(site / "bin" / "benchctl"), "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert {r["operator"] for r in rows} == OPERATORS
    assert {r["operator"] for r in rows if r["device"] == "cpu" and r["available"]} == OPERATORS

    checked = run_installed(site, tmp_path, "-m", "benchctl", "check", "py", "cpu")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("pass") >= 12 and "fail" not in checked.stdout

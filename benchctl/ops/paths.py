"""Where the built-in operators (`implementations/`) and their C++/CUDA sources (`extensions/`) are.

A checkout keeps both folders at the top of the repository, and an editable install runs from the
checkout; a wheel carries the same folders inside the package (pyproject.toml maps them to
`benchctl/implementations` and `benchctl/extensions`). The rest of benchctl takes the paths from here.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def data_dir(name: str) -> Path:
    """`benchctl/<name>` when installed from a wheel, else `<repository>/<name>`."""
    installed = PACKAGE_DIR / name
    return installed if installed.is_dir() else PACKAGE_DIR.parent / name


IMPLEMENTATIONS_DIR = data_dir("implementations")
EXTENSIONS_DIR = data_dir("extensions")

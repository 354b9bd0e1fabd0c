"""The one folder benchctl keeps things in between runs: compiled extensions (extensions/) and this
machine's calibration. BENCHCTL_CACHE moves it; the default is ~/.cache/benchctl."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "BENCHCTL_CACHE"


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "benchctl")

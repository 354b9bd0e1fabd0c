"""Which commit the measured code is at: the repository of the folder an operator's file was loaded from
(a user's --ops-dir, or benchctl's own implementations/). Asked once per folder per process."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from benchctl.ops import registry
from benchctl.results import commits


def code_facts(op_name: str | None) -> dict[str, Any]:
    """The code columns (results/schema.py) for rows of operator `op_name`; empty when it is unknown here
    or its folder is not in a git repository."""
    op = registry.operators().get(op_name or "")
    if op is None or not op.source:
        return {}
    return dict(_folder_facts(str(Path(op.source).resolve().parent)))


@lru_cache(maxsize=None)
def _folder_facts(folder: str) -> tuple[tuple[str, Any], ...]:
    return tuple(commits.head(folder).items())

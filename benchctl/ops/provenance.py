"""Which code was measured: the commit of the repository of the folder an operator's file was loaded from
(a user's --ops-dir, or benchctl's own implementations/), asked once per folder per process; and the
digest of each cell's own code and of its partner's (digest.py), taken once per process."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from benchctl.ops import digest, registry
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


def cell_digests(row: Any) -> dict[str, Any]:
    """The digest columns for a row of a pass (results/schema.py): its code's, and its partner's where paired."""
    codes = {"impl_code": row.get("impl"), "partner_code": row.get("paired_with")}
    return {column: digest.cell_code(row.get("op"), row.get("target"), impl)
            for column, impl in codes.items() if isinstance(impl, str) and impl}

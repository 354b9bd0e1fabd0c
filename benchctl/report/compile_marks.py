"""What torch.compile did, in the report: rings on the time chart where a compiled implementation recompiled
for a size, and the compile columns of an operator's table (compile time, recompiles, graph breaks, dynamic
shapes). Rows without the @compile modifier's columns (other implementations, older runs) add nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from benchctl.analysis.summary import recompiled
from benchctl.vocab import Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes

RING_LABEL = "torch.compile recompiled here"


def mark_recompiles(ax: "Axes", cell: pd.DataFrame) -> None:
    """A black ring around each timed point whose cell recompiled (times in ms, as the timing panel)."""
    if "recompiles" not in cell:
        return
    ok = cell[(cell["status"] == Status.OK) & cell["median_s"].notna()]
    hit = ok[[recompiled(r) for r in ok.to_dict("records")]]
    if hit.empty:
        return
    art = ax.scatter(hit["axis_value"].to_numpy(dtype=float), hit["median_s"].to_numpy(dtype=float) * 1e3,
                     s=120, facecolors="none", edgecolors="black", linewidths=1.2, zorder=6, label=RING_LABEL)
    art.set_gid("recompiled")


def table_columns(df: pd.DataFrame) -> dict[str, list[str]]:
    """The compile columns of an operator's table, where any of its rows is compiled by the modifier."""
    if "recompiles" not in df or df["recompiles"].isna().all():
        return {}
    rows = df.to_dict("records")
    return {"compile s": [_number(r.get("compile_s"), "{:.2f}") if _compiled(r) else "" for r in rows],
            "recompiles (sweep total)": [_recompiles(r) for r in rows],
            "graph breaks": [_breaks(r) for r in rows],
            "dynamic shapes": [_yes_no(r.get("dynamic_shapes")) if _compiled(r) else "" for r in rows]}


def _compiled(row: dict[str, Any]) -> bool:
    return not pd.isna(row.get("recompiles"))


def _number(value: Any, form: str) -> str:
    return "" if value is None or pd.isna(value) else form.format(value)


def _recompiles(row: dict[str, Any]) -> str:
    if not _compiled(row):
        return ""
    return f"{int(row['recompiles'])} ({_number(row.get('recompiles_total'), '{:.0f}')})"


def _breaks(row: dict[str, Any]) -> str:
    count, reason = row.get("graph_breaks"), row.get("graph_break_reason")
    if not _compiled(row) or count is None or pd.isna(count):
        return ""
    return f"{int(count)}: {reason}" if count and isinstance(reason, str) else f"{int(count)}"


def _yes_no(value: Any) -> str:
    return "" if value is None or pd.isna(value) else ("yes" if value else "no")

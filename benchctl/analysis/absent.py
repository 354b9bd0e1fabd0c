"""What could not run: a device where nothing ran, and implementations that ran nowhere on a device where others did,
each one line with its reason in place of table rows, chart panels and markers (`run`'s tables, the report)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from benchctl.results.schema import CELL_COLUMNS
from benchctl.vocab import Status


@dataclass(frozen=True)
class Absent:
    """A device on which nothing could run, or implementations that could run nowhere on a device where others did
    (`impls`; every row of theirs there unavailable, for one reason): one line, not tables, chart panels or markers."""

    device: str
    cells: int
    reason: str
    impls: tuple[str, ...] = ()

    def line(self) -> str:
        what = f"{', '.join(self.impls)} on {self.device}" if self.impls else self.device
        cells = f"{self.cells} cell{'' if self.cells == 1 else 's'}"
        return f"{what}: not available here ({cells} recorded unavailable: {self.reason})"

    def holds(self, rows: pd.DataFrame) -> pd.Series:
        """Which of `rows` this line stands for."""
        held = rows["device"] == self.device
        return held & rows["impl"].isin(self.impls) if self.impls else held


def absent(rows: pd.DataFrame) -> list[Absent]:
    """The devices whose every row is unavailable, then on the others the implementations whose every row is, those
    of one reason in one line; each with its cell count and (for a device) its most common reason."""
    found = []
    for device, group in rows.groupby("device", sort=True):
        if _none_ran(group):
            found.append(Absent(str(device), _cells(group), _reason(group)))
            continue
        never = group[group.groupby("impl")["status"].transform(lambda s: bool((s == Status.UNAVAILABLE).all()))]
        for reason, same in never.groupby(_messages(never), sort=True):
            found.append(Absent(str(device), _cells(same), str(reason), tuple(sorted(same["impl"].unique()))))
    return found


def _none_ran(rows: pd.DataFrame) -> bool:
    return bool(len(rows)) and bool((rows["status"] == Status.UNAVAILABLE).all())


def _cells(rows: pd.DataFrame) -> int:
    return len(rows.drop_duplicates(list(CELL_COLUMNS)))


def _messages(rows: pd.DataFrame) -> pd.Series:
    return rows["message"].fillna("") if "message" in rows else pd.Series("", index=rows.index)


def _reason(rows: pd.DataFrame) -> str:
    reason = _messages(rows).mode()
    return str(reason.iloc[0]) if len(reason) else ""


def present(rows: pd.DataFrame, lines: list[Absent]) -> pd.DataFrame:
    """The rows none of the `absent` lines stands for."""
    held = pd.Series(False, index=rows.index)
    for line in lines:
        held |= line.holds(rows)
    return rows[~held]

"""What the cells of one point share in a worker: their data sets (fresh.py) and the reference's outputs on
each (audit.py).

A point's implementations are measured one after another, and each made these anew: the target's whole
inputs three more times, to take one small input from each, and the reference at the timed size on every
data set. In a quick sweep that was about a sixth of the wall time. Both depend on the point and the seed
alone (and the data sets' input, `key`), never on the implementation, so the last point's are kept, and
only the last point's: its data sets are one small input each, its references the size of the outputs
and gradients.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class PointData:
    point: tuple[Any, ...]
    data: dict[str, list[torch.Tensor]] = field(default_factory=dict)  # by input name: each data set's copy
    references: dict[str | None, dict[int, Any]] = field(default_factory=dict)  # by key, then data set

    def references_for(self, key: str | None) -> dict[int, Any]:
        """The reference's runs on the data sets copied into `key` (None: the cell's own data), by data set."""
        return self.references.setdefault(key, {})


_last: PointData | None = None


def of(point: tuple[Any, ...]) -> PointData:
    """The point's shared data: the held one when `point` is the last point asked for, else a new one."""
    global _last
    if _last is None or _last.point != point:
        _last = PointData(point)
    return _last

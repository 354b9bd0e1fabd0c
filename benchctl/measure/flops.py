"""FLOPs of a pass as torch counts them: torch.utils.flop_counter.FlopCounterMode around one untimed call.

FlopCounterMode knows the FLOPs of matmuls, convolutions and attention; it sees nothing inside a custom
C++/CUDA op, and pointwise work counts zero. So a pass whose count is zero (a custom kernel, an
elementwise operator) keeps the FLOPs its operator declares; rows say which (`flops_source`).
"""

from __future__ import annotations

from typing import Callable

# Imported with this module, before a worker limits its address space: the import maps ~190 MiB, which
# would otherwise come out of the first cell's memory limit.
from torch.utils.flop_counter import FlopCounterMode

from benchctl.measure.clocks import Thunk


def counted(setup: Callable[[], Thunk]) -> float:
    """The FLOPs torch counts in one call of the pass (its untimed setup, e.g. a backward's forward,
    runs outside the counter); 0.0 when it counts none or cannot trace the call."""
    thunk = setup()
    try:
        with FlopCounterMode(display=False) as counter:
            thunk()
    except Exception:  # a call the counter's dispatch mode cannot follow: the declared count stands
        return 0.0
    return float(counter.get_total_flops())

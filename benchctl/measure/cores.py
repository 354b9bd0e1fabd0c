"""The CPU a cell's calls were given, and what they took of it.

torch's intra-op thread count is global to the worker, set once (run --threads, else torch's default): an
implementation that sets it (torch.set_num_threads in its call, its import or its prepare) would change
the conditions of every later cell in the worker, its partner's in a pair first. `Held` reads the count
before the cell and sets it back after, and the cell's rows say so; each timed row's `threads` is the count
given.

The cores a pass's calls kept busy (`cpu_cores`): the CPU seconds of the process's threads over the wall time
of its timed calls (clocks.OsReader, read outside the clock). torch's own work keeps at most its threads busy
(its OpenMP team spins between parallel regions, so even serial torch code reads near them); a call that
keeps more busy ran threads of its own (a std::thread pool, an OpenMP team of its own size, Python threads),
and its time is not comparable with implementations held to the threads given (schema.beyond_threads).
Threads started after the cell's first call, and work handed to other processes, are not counted here.
"""

from __future__ import annotations

from typing import Sequence

import torch

from benchctl.analysis.verdict import threads_words
from benchctl.measure.clocks import OsUsage
from benchctl.measure.result import PassResult
from benchctl.measure.stats import join_messages
from benchctl.results.schema import beyond_threads


def busy(usage: Sequence[OsUsage]) -> float | None:
    """The cores the calls kept busy on average: their CPU seconds over their wall time (None: none timed)."""
    wall = sum(u.wall_s for u in usage)
    return sum(u.cpu_s for u in usage) / wall if wall > 0 else None


class Held:
    """torch's thread count as the worker gave it to a cell (read when made), held for the cell's rows."""

    def __init__(self) -> None:
        self.given = torch.get_num_threads()

    def judged(self, results: list[PassResult]) -> list[PassResult]:
        """The cell's rows with the count given, and what its calls did to it or beyond it; the count is set
        back where they changed it."""
        found = torch.get_num_threads()
        if found != self.given:
            torch.set_num_threads(self.given)
        out = []
        for result in results:
            said = self.doubts(result, found)
            result = result.with_(threads=self.given) if result.threads is not None else result  # a timed row's
            out.append(result.with_(message=join_messages(result.message, *said)) if said else result)
        return out

    def doubts(self, result: PassResult, found: int) -> list[str]:
        said = []
        if found != self.given:
            said.append(f"its code set torch's threads to {found} (given {self.given}; set back after the cell): "
                        "its time is not comparable with the others'")
        if beyond_threads(result.cpu_cores, self.given):
            said.append(f"its calls kept {result.cpu_cores:.2f} CPU cores busy with torch given "
                        f"{threads_words(self.given)}: it ran threads of its own, so its time is not comparable "
                        "with the others'")
        return said

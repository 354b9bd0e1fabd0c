"""What torch.compile did during one cell, read from Dynamo's own records: its compilation metrics (one per
frame compiled, with the reason when it was a recompilation and the shapes of its graph, symbolic where
dynamic) and its graph-break counter (reason -> count).

A cell's worker runs one cell at a time, so every frame compiled between a cell's start and its end was
compiled for that cell: the first call at a new size, and the correctness gate's calls at its own shapes.
The running total counts this process's recompilations so far, all compiled implementations together; a
sweep's cells run in one worker process (each of `--processes` workers sees every cell in the same order),
so it is the sweep's running total (docs/compile.md).
"""

from __future__ import annotations

import ast
from collections import Counter
from typing import Any, Callable, Iterable

REASON_CHARS = 300  # a graph break's reason is cut to this length in a row

_recompiles_so_far = 0  # this process's recompilations, every compiled implementation


class CompileWatch:
    """Counts a compiled implementation's recompilations and graph breaks per cell. A cell that compiled
    nothing ran the code its last compilation made: it keeps that compilation's graph breaks and shapes."""

    def __init__(self) -> None:
        self._last: dict[str, Any] = {"graph_breaks": None, "graph_break_reason": None, "dynamic_shapes": None}

    def __call__(self) -> Callable[[], dict[str, Any]]:
        """Start watching a cell; the function returned gives its columns when the cell ends."""
        from torch._dynamo.utils import counters, get_compilation_metrics

        before = get_compilation_metrics()
        breaks = Counter(counters["graph_break"])

        def finish() -> dict[str, Any]:
            global _recompiles_so_far
            compiled = [m for m in get_compilation_metrics() if not any(m is b for b in before)]
            recompiles = sum(1 for m in compiled if m.recompile_reason)
            _recompiles_so_far += recompiles
            if compiled:
                self._last = _what_compiled(compiled, Counter(counters["graph_break"]) - breaks)
            return {"recompiles": recompiles, "recompiles_total": _recompiles_so_far, **self._last}

        return finish


def _what_compiled(compiled: list[Any], new_breaks: Counter[str]) -> dict[str, Any]:
    """The graph breaks Dynamo hit while compiling (the first one's reason) and whether a graph it made
    had symbolic sizes (dynamic shapes)."""
    first = next(iter(new_breaks), None)
    return {"graph_breaks": sum(new_breaks.values()), "graph_break_reason": _reason(first) if first else None,
            "dynamic_shapes": any(_symbolic(m.graph_node_shapes) for m in compiled)}


def _symbolic(shapes: dict[str, Iterable[Any]] | str | None) -> bool:
    """A graph's node shapes hold a symbol (e.g. "s77") where a size is dynamic. Dynamo records them as
    a dict, or as that dict's text once its metrics are logged."""
    if isinstance(shapes, str):
        shapes = ast.literal_eval(shapes) if shapes else None
    return any(isinstance(d, str) for dims in (shapes or {}).values() for d in (dims or ()))


def _reason(text: str) -> str:
    """Dynamo's graph-break text in one line: its title and its explanation."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    explained = next((line.removeprefix("Explanation:").strip() for line in lines
                      if line.startswith("Explanation:")), "")
    return (f"{lines[0]}: {explained}" if explained else lines[0] if lines else text)[:REASON_CHARS]

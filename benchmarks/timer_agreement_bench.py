"""benchctl's median against torch.utils.benchmark.Timer on the same callable, in one process, per pass.

    .venv/bin/python benchmarks/timer_agreement_bench.py [--repeats 3] [--min-time 0.5]

For each cell below and each pass, one callable is built as `run` builds it. The backward reuses one
graph (retain_graph) so that both timers call exactly the same thing; `run` itself builds a fresh graph
before each backward, outside the clock. benchctl's side is `measure` with the CPU clock and the default
policy (convergence to +-1%); Timer's is blocked_autorange with the same thread count. The two alternate
`--repeats` times and the table gives the median of each and their ratio.

One difference is by design: benchctl stops its clock before the call's output (and a forward's graph) is
freed, while Timer's blocks free each output inside the timed loop. The last column times benchctl's
loop on a callable that frees its output before returning: where it meets Timer, freeing is the gap.
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.utils.benchmark as tb

from benchctl.measure.cuda_graph import repeatable_thunk
from benchctl.measure.execute import prepare
from benchctl.measure.clocks import CpuClock
from benchctl.measure.timing import Policy, measure
from benchctl.ops import registry
from benchctl.ops.cells import Cell
from benchctl.vocab import PASSES

CELLS = [("hoconv2d", "filter", "cpp", {"batch_size": 4}),
         ("hoconv2d", "filter", "py", {"batch_size": 4}),
         ("lstm_cell", "cell", "cpp", {"batch_size": 64}),
         ("lstm_cell", "cell", "py", {"batch_size": 64})]


def three(thunk, min_time: float) -> tuple[float, float, float]:
    """benchctl's median, Timer's, and benchctl's on a callable that frees its output inside the clock."""
    ours = measure(lambda: thunk, CpuClock(usage=None), Policy(min_time=min_time)).median
    timer = tb.Timer("thunk()", globals={"thunk": thunk}, num_threads=torch.get_num_threads())
    frees = lambda: (thunk(), None)[1]  # noqa: E731  (the output is dropped before the clock stops)
    freed = measure(lambda: frees, CpuClock(usage=None), Policy(min_time=min_time)).median
    return ours, timer.blocked_autorange(min_run_time=min_time).median, freed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=0.5)
    args = parser.parse_args()
    registry.discover()
    print("| cell | pass | benchctl ms | Timer ms | benchctl / Timer | freeing timed too / Timer |\n"
          "|---|---|---|---|---|---|")
    for op, target, impl, params in CELLS:
        cell = Cell.make(op, target, impl, "cpu", "float32", {**registry.get(op).params, **params})
        prepared = prepare(cell.resolve())
        for pass_name in PASSES:
            thunk = repeatable_thunk(prepared.call, prepared.inputs, prepared.grads, pass_name, prepared.accumulate)
            runs = [three(thunk, args.min_time) for _ in range(args.repeats)]
            ours, theirs, freed = (statistics.median(side) for side in zip(*runs))
            print(f"| {op} {impl} {params} | {pass_name} | {ours * 1e3:.4g} | {theirs * 1e3:.4g} | "
                  f"{ours / theirs:.3f} | {freed / theirs:.3f} |", flush=True)


if __name__ == "__main__":
    main()

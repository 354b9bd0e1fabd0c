"""The GPU timer check of the self-test: on two CUDA cells, one host-bound (B=1) and one GPU-bound
(B=16), benchctl's CUDA-event median against torch.utils.benchmark.Timer's on the same call, in one
process. Prints a table row per cell and pass; exits 1 when one differs by more than AGREE (or without a
GPU, 2)."""

from __future__ import annotations

import statistics
import sys

AGREE = 0.05
OP, TARGET, IMPL = "hoconv2d", "filter", "cuda"
BATCHES = (1, 16)


def main() -> None:
    import torch
    import torch.utils.benchmark as tb

    from benchctl.measure.clocks import CudaEventClock
    from benchctl.measure.cuda_graph import repeatable_thunk
    from benchctl.measure.execute import prepare
    from benchctl.measure.timing import Policy, measure
    from benchctl.ops import registry
    from benchctl.ops.cells import Cell
    from benchctl.vocab import PASSES

    if not torch.cuda.is_available():
        sys.exit("timer agreement: no CUDA device")
    registry.discover()
    worst = 0.0
    print("| cell | pass | CUDA events ms | host ms | Timer ms | ratio |\n|---|---|---|---|---|---|")
    for batch in BATCHES:
        params = {**registry.get(OP).params, "batch_size": batch}
        prepared = prepare(Cell.make(OP, TARGET, IMPL, "cuda", "float32", params).resolve())
        for pass_name in PASSES:
            thunk = repeatable_thunk(prepared.call, prepared.inputs, prepared.grads, pass_name, prepared.accumulate)
            clock = CudaEventClock()
            ours = measure(lambda: thunk, clock, Policy(min_time=0.5)).median
            host = statistics.median(clock.host_per_call)
            theirs = tb.Timer("thunk()", globals={"thunk": thunk}).blocked_autorange(min_run_time=0.5).median
            worst = max(worst, abs(ours / theirs - 1))
            print(f"| {OP} {IMPL} B={batch} | {pass_name} | {ours * 1e3:.4g} | {host * 1e3:.4g} | "
                  f"{theirs * 1e3:.4g} | {ours / theirs:.3f} |")
    print(f"largest difference {worst:.1%} (agreement: within {AGREE:.0%})")
    sys.exit(0 if worst <= AGREE else 1)


if __name__ == "__main__":
    main()

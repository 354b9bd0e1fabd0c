"""Does the machine's memory bandwidth explain a memory-bound kernel's timing noise? One process, in turn.

    .venv/bin/python benchmarks/membw_bench.py [--op hoconv2d] [--target filter] [--impl cpp]
        [--param batch_size=16] [--pairs 20] [--min-time 0.5]

Alternates `benchctl.machine.membw.probe()` (the probe `run` takes before and after each CPU pass) with a
torch.utils.benchmark median of one forward call, and prints each pair and their correlation. A
strongly negative correlation says the timing moves with what the host's other tenants leave, not
with the implementation: read such cells' ratios with `--rounds`, and `compare` runs only when their
`mem_gbps` agree.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch
import torch.utils.benchmark as tb

from benchctl.machine import membw
from benchctl.ops import registry
from benchctl.ops.cells import Cell
from benchctl.measure.execute import prepare


def forward_call(op_name: str, target_name: str, impl_name: str, params: dict):
    """The cell's forward as a no-argument callable, its inputs built and prepared as `run` does."""
    try:
        op = registry.get(op_name)
        reason = op.implementations[impl_name].unavailable_reason("cpu")
        cell = Cell.make(op_name, target_name, impl_name, "cpu", "float32", {**op.params, **params})
        op.target(target_name)  # an unknown target fails here, as one clear line
    except KeyError as exc:
        raise SystemExit(f"no such cell: {exc}") from None
    if reason:
        raise SystemExit(f"{op_name} {impl_name} is unavailable here: {reason}")
    return prepare(cell.resolve()).call


def pairs(call, count: int, min_time: float) -> tuple[list[float], list[float]]:
    gbps, seconds = [], []
    for _ in range(count):
        before = membw.probe()
        timer = tb.Timer("call()", globals={"call": call}, num_threads=torch.get_num_threads())
        seconds.append(timer.blocked_autorange(min_run_time=min_time).median)
        gbps.append((before + membw.probe()) / 2)
    return gbps, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", default="hoconv2d")
    parser.add_argument("--target", default="filter")
    parser.add_argument("--impl", default="cpp")
    parser.add_argument("--param", action="append", default=["batch_size=16"], help="KEY=VALUE (JSON value)")
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--min-time", type=float, default=0.5)
    args = parser.parse_args()
    registry.discover()
    params = {k: json.loads(v) for k, v in (p.split("=", 1) for p in args.param)}
    gbps, seconds = pairs(forward_call(args.op, args.target, args.impl, params), args.pairs, args.min_time)
    print(f"{args.op}/{args.target} {args.impl} forward {params}, {torch.get_num_threads()} threads")
    print("probe GB/s ", " ".join(f"{g:5.1f}" for g in gbps))
    print("forward ms ", " ".join(f"{s * 1e3:5.2f}" for s in seconds))
    print(f"correlation {np.corrcoef(gbps, seconds)[0, 1]:+.2f}; forward {min(seconds) * 1e3:.2f}-"
          f"{max(seconds) * 1e3:.2f} ms at {min(gbps):.0f}-{max(gbps):.0f} GB/s")


if __name__ == "__main__":
    main()

"""Two versions of hoconv2d's CPU kernel in one process, their backward timed in alternation: a change
to the kernel judged on a machine whose speed moves every few seconds.

    git show HEAD~1:extensions/hoconv2d/hoconv2d_cpu.cpp > /tmp/old.cpp
    .venv/bin/python benchmarks/hoconv2d_ab_bench.py /tmp/old.cpp extensions/hoconv2d/hoconv2d_cpu.cpp

Each source is built as its own library with its ops under a namespace of their own (`ab0`, `ab1`), so
both load side by side. Their results must agree first. Then each round times both on the same inputs
back to back (the order alternating from round to round) at B=16 (the weights from memory) and at
B=4 with 64 rows (the weights within the L3), and the old/new ratio of each round is kept: the median
of those ratios is the figure, paired as `--rounds` pairs a sweep's.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

import torch
from torch.utils import cpp_extension

from benchctl.ops import toolchain
from benchctl.ops.paths import EXTENSIONS_DIR

# The namespace the library opens and its kernels attach to (`hoconv2d` now, `benchctl` in older versions).
NAMESPACE = re.compile(r"(TORCH_LIBRARY(?:_FRAGMENT|_IMPL)?)\(\w+,")
SHAPES = {"B=16 (memory)": (16, 224), "B=4, 64 rows (L3)": (4, 64)}  # (batch, rows); C=3, W=224, k=5
C, W, K = 3, 224, 5
CALLS = {"B=16 (memory)": 10, "B=4, 64 rows (L3)": 60}  # per version per round


def load(source: Path, n: int) -> Callable:
    """The backward op of `source`, built under namespace ab<n>."""
    text = NAMESPACE.sub(f"\\1(ab{n},", source.read_text())
    build = Path(tempfile.gettempdir()) / "benchctl-ab" / f"v{n}"
    build.mkdir(parents=True, exist_ok=True)
    src = build / "hoconv2d_cpu.cpp"
    if not src.exists() or src.read_text() != text:
        src.write_text(text)
    cpp_extension.load(name=f"benchctl_ab{n}", sources=[str(src)], extra_cflags=list(toolchain.CFLAGS),
                       extra_ldflags=list(toolchain.ldflags()), build_directory=str(build), is_python_module=False,
                       extra_include_paths=[str(EXTENSIONS_DIR / "hoconv2d"), str(EXTENSIONS_DIR / "common")])
    return getattr(torch.ops, f"ab{n}").hoconv2d_filter_backward


def inputs(batch: int, rows: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(0)
    return (torch.randn(batch, C, rows, W, generator=gen), torch.randn(batch, C, rows, W, generator=gen),
            torch.randn(batch, K * K, rows, W, generator=gen))  # grad_out, x, weights


def median_time(fn: Callable[[], object], calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    ops = [load(args.old, 0), load(args.new, 1)]
    data = {name: inputs(*shape) for name, shape in SHAPES.items()}
    small = data["B=4, 64 rows (L3)"]
    for a, b in zip(ops[0](*small), ops[1](*small)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    print("| cells | old ms | new ms | old/new (median of rounds) | range |\n|---|---|---|---|---|")
    for name, args_ in data.items():
        times: list[list[float]] = [[], []]
        for r in range(args.rounds):
            for v in ((0, 1) if r % 2 == 0 else (1, 0)):
                times[v].append(median_time(lambda: ops[v](*args_), CALLS[name]))
        ratios = [old / new for old, new in zip(*times)]
        print(f"| {name} | {statistics.median(times[0]) * 1e3:.2f} | {statistics.median(times[1]) * 1e3:.2f} | "
              f"{statistics.median(ratios):.3f} | {min(ratios):.3f}-{max(ratios):.3f} |")


if __name__ == "__main__":
    main()

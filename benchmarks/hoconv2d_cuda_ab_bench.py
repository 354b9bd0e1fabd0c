"""Two versions of hoconv2d's CUDA kernels in one process on one GPU, timed in alternating rounds.

    mkdir -p /tmp/old && for f in hoconv2d/hoconv2d_cuda.cu hoconv2d/hoconv2d.h hoconv2d/hoconv2d_checks.h \\
        common/benchctl_hd.h; do git show HEAD~1:extensions/$f > /tmp/old/$(basename $f); done
    .venv/bin/python benchmarks/hoconv2d_cuda_ab_bench.py /tmp/old

A version is a folder holding hoconv2d_cuda.cu and the headers it includes; the second defaults to the
checkout's own (extensions/). Each is built as its own library under a namespace of its own (`ab0`,
`ab1`) with the op schemas declared beside it, so both load side by side. Their results must agree
first. Then each round times both on the same inputs (the order alternating from round to round), each
the mean of CUDA-event-timed calls, at the seed's sizes (C=3, 224x224, k=5); the old/new ratio of each
round is kept, and the median of those ratios is the figure. GB/s is the bytes each pass must move
(the operator's declared bytes) over the median time.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Callable

import torch

from benchctl.ops import toolchain
from benchctl.ops.paths import EXTENSIONS_DIR

C, H, W, K = 3, 224, 224, 5
BATCHES = (16, 64)
CALLS = 20  # timed calls per version per round
SCHEMA = """#include <torch/library.h>
TORCH_LIBRARY(ab{n}, m) {{
  m.def("hoconv2d_filter(Tensor x, Tensor weights) -> Tensor");
  m.def("hoconv2d_filter_backward(Tensor grad_out, Tensor x, Tensor weights) -> (Tensor, Tensor)");
}}
"""
OWN = [EXTENSIONS_DIR / "hoconv2d" / name for name in ("hoconv2d_cuda.cu", "hoconv2d.h", "hoconv2d_checks.h")]
OWN.append(EXTENSIONS_DIR / "common" / "benchctl_hd.h")


def load(files: list[Path], n: int) -> tuple[Callable, Callable]:
    """The forward and backward ops of one version, built under namespace ab<n>."""
    build = Path(tempfile.gettempdir()) / "benchctl-cuda-ab" / f"v{n}"
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir(parents=True)
    for f in files:
        (build / f.name).write_text(f.read_text().replace("(benchctl,", f"(ab{n},"))
    (build / "schema.cpp").write_text(SCHEMA.format(n=n))
    toolchain.cpp_extension().load(
        name=f"benchctl_cuda_ab{n}", sources=[str(build / "hoconv2d_cuda.cu"), str(build / "schema.cpp")],
        extra_cflags=list(toolchain.CFLAGS), extra_cuda_cflags=list(toolchain.CUDA_CFLAGS),
        extra_ldflags=list(toolchain.ldflags()), build_directory=str(build), is_python_module=False,
        extra_include_paths=[str(build), *toolchain.nvidia_wheel_includes()], with_cuda=True)
    ops = getattr(torch.ops, f"ab{n}")
    return ops.hoconv2d_filter, ops.hoconv2d_filter_backward


def inputs(batch: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator(device="cuda").manual_seed(0)
    make = lambda *shape: torch.randn(*shape, device="cuda", generator=gen)  # noqa: E731
    return make(batch, C, H, W), make(batch, K * K, H, W), make(batch, C, H, W)  # x, weights, grad_out


def mean_time(fn: Callable[[], object], calls: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / calls


def pass_bytes(batch: int, backward: bool) -> float:
    x, wt = batch * C * H * W, batch * K * K * H * W
    return 4.0 * ((3 * x + 2 * wt) if backward else (2 * x + wt))


def agree(versions: list[tuple[Callable, Callable]]) -> None:
    x, wt, g = inputs(2)
    (f0, b0), (f1, b1) = versions
    torch.testing.assert_close(f0(x, wt), f1(x, wt), rtol=1e-4, atol=1e-4)
    for a, b in zip(b0(g, x, wt), b1(g, x, wt)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="folder with the old hoconv2d_cuda.cu and its headers")
    parser.add_argument("new", type=Path, nargs="?", help="the same for the new one (default: the checkout's)")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    names = [f.name for f in OWN]
    versions = [load([args.old / n for n in names], 0),
                load([args.new / n for n in names] if args.new else OWN, 1)]
    agree(versions)
    print(f"{torch.cuda.get_device_name()}, float32, C={C}, {H}x{W}, k={K}; {args.rounds} rounds of {CALLS} calls")
    print("| pass | B | old ms | new ms | old GB/s | new GB/s | old/new (median of rounds) | range |")
    print("|---|---|---|---|---|---|---|---|")
    for batch in BATCHES:
        x, wt, g = inputs(batch)
        for name, backward in (("forward", False), ("backward", True)):
            calls = [(lambda f=f: f(x, wt)) if not backward else (lambda b=b: b(g, x, wt)) for f, b in versions]
            times: list[list[float]] = [[], []]
            for r in range(args.rounds):
                for v in ((0, 1) if r % 2 == 0 else (1, 0)):
                    times[v].append(mean_time(calls[v], CALLS))
            ratios = [old / new for old, new in zip(*times)]
            old, new = statistics.median(times[0]), statistics.median(times[1])
            gbs = pass_bytes(batch, backward) / 1e9
            print(f"| {name} | {batch} | {old * 1e3:.4g} | {new * 1e3:.4g} | {gbs / old:.0f} | {gbs / new:.0f} | "
                  f"{statistics.median(ratios):.3f} | {min(ratios):.3f}-{max(ratios):.3f} |")


if __name__ == "__main__":
    main()

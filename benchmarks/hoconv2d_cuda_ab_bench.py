"""Versions of hoconv2d's CUDA kernels in one process on one GPU, timed in turning rounds.

    mkdir -p /tmp/old && for f in hoconv2d/hoconv2d_cuda.cu hoconv2d/hoconv2d.h hoconv2d/hoconv2d_checks.h \\
        hoconv2d/hoconv2d_tile.h common/benchctl_hd.h; do git show HEAD~1:extensions/$f > /tmp/old/$(basename $f); done
    .venv/bin/python benchmarks/hoconv2d_cuda_ab_bench.py /tmp/old --own

A version is a folder holding hoconv2d_cuda.cu and the headers it includes (`--own` adds the
checkout's, extensions/). Each is built as its own library under a namespace of its own (`ab0`, `ab1`,
...) with the op schemas declared beside it, so all load side by side; they compile side by side, one
process each. Every version's results must match the first's (the baseline), at the seed's shape and at
an odd shape for k = 3, 5, 7 and 9, with its outputs' memory filled with NaN before each call (so an
element left unwritten fails); a version that does not match is named and left out. Then each round times every version on the same inputs (the order
turning by one from round to round), each the mean of CUDA-event-timed calls, at the seed's sizes (C=3,
224x224, k=5); the baseline/version ratio of each round is kept, and the median of those ratios is the
figure. GB/s is the bytes each pass must move (the operator's declared bytes) over the median time.
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
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
# The namespace a version's kernels attach to (`hoconv2d` now, `benchctl` in older versions), renamed per version.
NAMESPACE = re.compile(r"(TORCH_LIBRARY_IMPL)\(\w+,")
OWN = [EXTENSIONS_DIR / "hoconv2d" / "hoconv2d_cuda.cu", *sorted((EXTENSIONS_DIR / "hoconv2d").glob("*.h")),
       EXTENSIONS_DIR / "common" / "benchctl_hd.h"]


def version_files(folder: Path) -> list[Path]:
    """A version's hoconv2d_cuda.cu and those of the checkout's headers it has (an older version lacks
    the newer ones, e.g. hoconv2d_tile.h, and includes none of them)."""
    if not (folder / OWN[0].name).is_file():
        raise SystemExit(f"{folder}: no {OWN[0].name} there")
    return [folder / f.name for f in OWN if (folder / f.name).is_file()]


def stage_dir(n: int) -> Path:
    return Path(tempfile.gettempdir()) / "benchctl-cuda-ab" / f"v{n}"


def stage(files: list[Path], n: int) -> Path:
    """Version n's sources, renamed to namespace ab<n>, in its build folder (rewritten only when changed)."""
    build = stage_dir(n)
    build.mkdir(parents=True, exist_ok=True)
    texts = {f.name: NAMESPACE.sub(f"\\1(ab{n},", f.read_text()) for f in files}
    texts["schema.cpp"] = SCHEMA.format(n=n)
    for name, text in texts.items():
        if not (build / name).exists() or (build / name).read_text() != text:
            (build / name).write_text(text)
    return build


def build(files: list[Path], n: int) -> None:
    """Compile (and load) version n; run in a process of its own so that versions compile side by side."""
    where = stage(files, n)
    toolchain.cpp_extension().load(
        name=f"benchctl_cuda_ab{n}", sources=[str(where / "hoconv2d_cuda.cu"), str(where / "schema.cpp")],
        extra_cflags=list(toolchain.CFLAGS), extra_cuda_cflags=list(toolchain.CUDA_CFLAGS),
        extra_ldflags=list(toolchain.ldflags()), build_directory=str(where), is_python_module=False,
        extra_include_paths=[str(where), *toolchain.nvidia_wheel_includes()], with_cuda=True)


def load(files: list[Path], n: int) -> tuple[Callable, Callable]:
    """The forward and backward ops of one version, under namespace ab<n> (built already: a cache hit)."""
    build(files, n)
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


def poisoned(fn: Callable[[], object], sizes: list[int]) -> object:
    """fn() after blocks of the outputs' sizes were filled with NaN and freed: the caching allocator hands
    them to the outputs, so an element a kernel leaves unwritten reads NaN, not an earlier version's value."""
    blocks = [torch.full((n,), float("nan"), device="cuda") for n in sizes]
    del blocks
    return fn()


def agree(versions: list[tuple[Callable, Callable]], labels: list[str]) -> list[int]:
    """The versions that match the first: the seed's shape, and an odd one (borders) for k = 3, 5, 7, 9.
    A version that does not is named, with its first mismatch, and left out of the timing."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    make = lambda *shape: torch.randn(*shape, device="cuda", generator=gen)  # noqa: E731
    (f0, b0), kept = versions[0], [0]
    cases = [(2, C, H, W, K)] + [(3, 2, 13, 37, k) for k in (3, 5, 7, 9)]
    inputs_ = [(make(b, c, h, w), make(b, k * k, h, w), make(b, c, h, w)) for b, c, h, w, k in cases]
    for n, (f1, b1) in enumerate(versions[1:], start=1):
        try:
            for x, wt, g in inputs_:
                torch.testing.assert_close(poisoned(lambda: f1(x, wt), [x.numel()]), f0(x, wt), rtol=1e-5, atol=1e-5)
                got = poisoned(lambda: b1(g, x, wt), [x.numel(), wt.numel()])
                for a, want in zip(got, b0(g, x, wt)):
                    torch.testing.assert_close(a, want, rtol=1e-5, atol=1e-5)
            kept.append(n)
        except AssertionError as error:
            print(f"v{n} ({labels[n]}) left out: it does not match v0 at x {tuple(x.shape)}, k*k {wt.shape[1]}: "
                  + str(error).splitlines()[0])
    return kept


def rounds(calls: list[Callable[[], object]], count: int) -> list[list[float]]:
    """Each version's mean time per round; the order turns by one version from round to round."""
    times: list[list[float]] = [[] for _ in calls]
    for r in range(count):
        for i in range(len(calls)):
            v = (i + r) % len(calls)
            times[v].append(mean_time(calls[v], CALLS))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", type=Path, nargs="+",
                        help="folders, each with a hoconv2d_cuda.cu and its headers; the first is the baseline")
    parser.add_argument("--own", action="store_true", help="add the checkout's own kernels as the last version")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--build-only", action="store_true", help="compile every version, then stop")
    parser.add_argument("--resources", action="store_true",
                        help="compile every version, then show ptxas's registers, spills and shared memory of "
                             "its float32 kernels at the seed's k and C, and stop (no GPU needed)")
    parser.add_argument("--once", type=int, metavar="B",
                        help="call the first and the last version's forward and backward once at batch B, then "
                             "stop (for ncu; give it the versions the A/B had, so their builds are reused)")
    args = parser.parse_args()
    sources = [version_files(folder) for folder in args.versions] + ([OWN] if args.own else [])
    with multiprocessing.get_context("spawn").Pool(len(sources)) as pool:
        pool.starmap(build, [(files, n) for n, files in enumerate(sources)])
    if args.resources:
        show_resources(len(sources), [str(f) for f in args.versions] + (["own"] if args.own else []))
    if args.build_only or args.resources:
        return
    versions = [load(files, n) for n, files in enumerate(sources)]
    if args.once:
        x, wt, g = inputs(args.once)
        for f, b in (versions[0], versions[-1]):
            f(x, wt), b(g, x, wt)
        torch.cuda.synchronize()
        return
    labels = [str(f) for f in args.versions] + (["own"] if args.own else [])
    table(versions, agree(versions, labels), labels, args.rounds)


def show_resources(count: int, labels: list[str]) -> None:
    """What ptxas gave each version's float32 kernels at k=5, C=3: the forward's, and the backward's (with
    those not fixed to a k)."""
    from benchctl.ops import resources

    seed = re.compile(rf"^.*<float(, {K}(, {C})?|, hoconv2d::GradXAt)?>$")
    print("| version | kernel | arch | registers | warps | spill stores / loads B | shared B |")
    print("|---|---|---|---|---|---|---|")
    for n in range(count):
        where = stage_dir(n)
        kernels = resources.of_build(where, [where / "hoconv2d_cuda.cu"], f"v{n}")
        names = resources.names([k.kernel for k in kernels])
        for k in kernels:
            if seed.search(names[k.kernel]):
                print(f"| v{n} ({labels[n]}) | {names[k.kernel]} | {k.arch} | {k.registers} | "
                      f"{k.occupancy_limit():.0%} | {k.spill_stores} / {k.spill_loads} | {k.shared} |")


def table(versions: list[tuple[Callable, Callable]], kept: list[int], labels: list[str], count: int) -> None:
    """The Markdown table of the kept versions: each pass and batch timed in `count` turning rounds."""
    print(f"{torch.cuda.get_device_name()}, float32, C={C}, {H}x{W}, k={K}; {count} rounds of {CALLS} calls")
    print("versions: " + ", ".join(f"v{n} = {labels[n]}" for n in kept))
    print("| pass | B | version | ms | GB/s | v0/this (median of rounds) | range |")
    print("|---|---|---|---|---|---|---|")
    for batch in BATCHES:
        x, wt, g = inputs(batch)
        for name, backward in (("forward", False), ("backward", True)):
            calls = [(lambda f=f: f(x, wt)) if not backward else (lambda b=b: b(g, x, wt))
                     for f, b in (versions[n] for n in kept)]
            times = rounds(calls, count)
            gbs = pass_bytes(batch, backward) / 1e9
            for n, series in zip(kept, times):
                ratios = [base / t for base, t in zip(times[0], series)]
                median = statistics.median(series)
                print(f"| {name} | {batch} | v{n} | {median * 1e3:.4g} | {gbs / median:.0f} | "
                      f"{statistics.median(ratios):.3f} | {min(ratios):.3f}-{max(ratios):.3f} |")

if __name__ == "__main__":
    main()

"""Forward / backward / forward+backward times of the sampling operators, ratios taken in one run.

    .venv/bin/python benchmarks/sampling_bench.py grid_sample --threads 1
    .venv/bin/python benchmarks/sampling_bench.py patch_resample

Each implementation is built and prepared exactly as `benchctl run` does (the operator's own input
factory and `prepare`), then timed with torch.utils.benchmark.Timer. Backward is the harness's own
(`benchctl.measure.passes.backward_from`: the inputs' gradients, or `backward` for a graph with leaves of its
own), timed on a retained graph so only the backward runs.
The implementations are measured in interleaved rounds and each cell keeps the smallest round
median: on a shared machine, another process can only make a round slower, never faster. Prints a
markdown table per operator.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

import torch
from torch.utils.benchmark import Timer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchctl.ops import registry  # noqa: E402
from benchctl.measure.passes import backward_from, grad_inputs, has_own_leaves  # noqa: E402
from benchctl.ops.registry import Case, Operator  # noqa: E402

PASSES = ("forward", "backward", "forward_backward")
DEFAULTS: dict[str, dict[str, Any]] = {
    "grid_sample": {"sizes": [256, 1024, 4096], "impls": ["py", "py+cl", "py-imagegrad", "cpp"],
                    "base": "py"},
    "naflex_posembed": {"sizes": [64, 256], "impls": ["loop", "gridsample", "cpp"], "base": "loop"},
    "patch_resample": {"sizes": [8, 12, 16, 24], "impls": ["vmap", "bmm"], "base": "vmap"},
}


def thunks(op: Operator, impl_name: str, params: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """One callable per pass on freshly built, prepared inputs (float32, CPU, seed 0).

    `NAME+cl` is implementation NAME given a channels-last copy of the input "image": the layout
    the extension's `prepare` makes, so its share of a speedup can be told from the kernel's.
    """
    target = op.targets[0]
    impl = op.implementations[impl_name.removesuffix("+cl")]
    inputs = target.make_inputs(Case(params, torch.float32, "cpu", 0))
    if impl.prepare is not None:
        inputs = impl.prepare(inputs)
    if impl_name.endswith("+cl"):
        inputs = {**inputs, "image": inputs["image"].contiguous(memory_format=torch.channels_last)}
    def forward() -> Any:
        return target.call(impl.fn, inputs)

    out = forward()
    grads = (torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=out.dtype),)
    accumulate = has_own_leaves(out, inputs)
    retained, once = (backward_from(inputs, grads, accumulate, retain_graph=r) for r in (True, False))
    leaves = grad_inputs(inputs) if accumulate else []  # only `backward` fills .grad

    def backward(run: Callable[[Any], object], result: Any) -> None:
        run(result)
        for leaf in leaves:  # keep .grad from accumulating across repetitions
            leaf.grad = None

    return {
        "forward": forward,
        "backward": lambda: backward(retained, out),
        "forward_backward": lambda: backward(once, forward()),
    }


def median_ms(fn: Callable[[], Any], min_run_time: float) -> float:
    # Timer runs with 1 thread unless told otherwise: pass the process's setting on.
    timer = Timer("fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median * 1e3


def measure(op: Operator, impls: list[str], params: dict[str, Any], rounds: int,
            min_run_time: float) -> dict[tuple[str, str], float]:
    """{(impl, pass): best round median in ms} for one parameter point."""
    prepared = {name: thunks(op, name, params) for name in impls}
    for fns in prepared.values():  # warm up: first calls allocate, build, cache
        for fn in fns.values():
            fn()
    best: dict[tuple[str, str], float] = {}
    for _ in range(rounds):
        for name, fns in prepared.items():
            for pass_name, fn in fns.items():
                ms = median_ms(fn, min_run_time)
                best[(name, pass_name)] = min(ms, best.get((name, pass_name), float("inf")))
    return best


def fmt(ms: float) -> str:
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def table(op: Operator, impls: list[str], base: str, results: dict[Any, dict[tuple[str, str], float]]) -> str:
    """Markdown: one row per (pass, impl), one column per swept value; ratio = base time / impl time."""
    keys = list(results)
    head = "| pass | impl | " + " | ".join(f"{op.axis}={k}" for k in keys) + " |"
    lines = [head, "|" + "---|" * (len(keys) + 2)]
    for pass_name in PASSES:
        for name in impls:
            cells = []
            for k in keys:
                ms = results[k][(name, pass_name)]
                ratio = results[k][(base, pass_name)] / ms
                cells.append(fmt(ms) if name == base else f"{fmt(ms)} ({ratio:.2g}x)")
            lines.append(f"| {pass_name} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("op", choices=sorted(DEFAULTS))
    ap.add_argument("--sizes", help="comma list of values of the operator's axis parameter")
    ap.add_argument("--impls", help="comma list (default: all CPU implementations)")
    ap.add_argument("--param", action="append", default=[], help="KEY=VALUE (int) for other params")
    ap.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-run-time", type=float, default=0.5, help="seconds per Timer measurement")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    op = registry.discover()[args.op]
    spec = DEFAULTS[args.op]
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else spec["sizes"]
    impls = args.impls.split(",") if args.impls else spec["impls"]
    base = spec["base"] if spec["base"] in impls else impls[0]
    extra = {k: int(v) for k, v in (p.split("=", 1) for p in args.param)}
    results = {}
    for size in sizes:
        params = {**op.params, **extra, op.axis: size}
        results[size] = measure(op, impls, params, args.rounds, args.min_run_time)
        print(f"measured {op.axis}={size}", file=sys.stderr)
    fixed = ", ".join(f"{k}={v}" for k, v in {**op.params, **extra}.items() if k != op.axis)
    print(f"### {op.name} ({fixed}), CPU float32, {torch.get_num_threads()} threads, median ms "
          f"(speedup vs {base})\n")
    print(table(op, impls, base, results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

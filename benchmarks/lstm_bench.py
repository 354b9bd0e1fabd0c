"""Small stand-alone timing of the lstm_cell variants with torch.utils.benchmark, all in one run.

    .venv/bin/python benchmarks/lstm_bench.py [--shapes 64x64,256x64] [--min-time 0.5] [--device cpu]

For each (batch B, hidden H) shape and each available implementation: the first forward+backward call
(what the harness records as compile_s: TorchScript profiling/specialisation, torch.compile codegen,
or nothing for eager/C++), then the median forward, backward and forward+backward times, and each
one's speedup over `py` measured in the same process: the median of the rounds' own ratios, as the
harness pairs rounds (a machine that changes speed mid-run slows both sides of a round alike). Prints a
markdown table. Many short rounds pair the implementations closely in time:

    .venv/bin/python benchmarks/lstm_bench.py --shapes 64x64 --impls py,cpp --rounds 80 --min-time 40
"""

from __future__ import annotations

import argparse
import statistics
import time
import timeit
from dataclasses import dataclass
from typing import Callable

import torch
import torch.utils.benchmark as tb

from benchctl.ops import registry
from benchctl.ops.registry import Case
from benchctl.analysis import speedup as speedups

IMPLS = ("py", "jit", "compile", "cpp", "cuda")
PASSES = ("fwd", "bwd", "fwd+bwd")


@dataclass(frozen=True)
class Row:
    impl: str
    batch: int
    hidden: int
    first_s: float
    median_s: dict[str, float]
    round_medians_s: dict[str, list[float]]

    def timing(self, name: str) -> dict:
        """One pass as the harness's speedup reads a row."""
        return {"median_s": self.median_s[name], "round_medians_s": self.round_medians_s[name]}


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _clock(device: str) -> Callable[[], float]:
    """perf_counter that first waits for queued GPU work, so a sample covers the kernels it launched."""

    def clock() -> float:
        _sync(device)
        return time.perf_counter()

    return clock


STMTS = {  # pass -> (timed statement, untimed setup)
    "fwd": ("fn(*args)", "pass"),
    "bwd": ("torch.autograd.grad(outs, args, grads)", "outs = fn(*args)"),
    "fwd+bwd": ("torch.autograd.grad(fn(*args), args, grads)", "pass"),
}


def _samples(fn: Callable, args: list[torch.Tensor], grads: list[torch.Tensor], name: str,
             seconds: float) -> list[float]:
    """Per-call seconds of one pass from short blocks (~2 ms): on a shared machine a block hit by a
    context switch is an outlier the median ignores, where one long block would average it in."""
    stmt, setup = STMTS[name]
    env = {"fn": fn, "args": args, "grads": grads, "torch": torch}
    deadline = time.perf_counter() + seconds
    samples: list[float] = []
    if name == "bwd":
        # A fresh graph per sample, built in `setup` (untimed); re-running one retained graph is
        # refused by torch.compile's donated buffers. tb.Timer.timeit adds warm-up runs of `stmt`
        # on the same setup, so here one sample is one stdlib timeit run: setup, then stmt once.
        sampler = timeit.Timer(stmt=stmt, setup=setup, timer=_clock(args[0].device.type), globals=env)
        while time.perf_counter() < deadline or len(samples) < 5:
            samples.append(sampler.timeit(1))
        return samples
    timer = tb.Timer(stmt=stmt, setup=setup, globals=env, num_threads=torch.get_num_threads())
    number = max(1, int(2e-3 / max(timer.timeit(1).median, 1e-7)))
    while time.perf_counter() < deadline or len(samples) < 5:
        samples.append(timer.timeit(number).median)
    return samples


@dataclass
class Subject:
    """One implementation at one shape, ready to time: its inputs and its first-call duration."""

    impl: str
    batch: int
    hidden: int
    fn: Callable
    args: list[torch.Tensor]
    grads: list[torch.Tensor]
    first_s: float
    samples: dict[str, list[list[float]]]  # pass -> each round's samples


def first_call(op: registry.Operator, impl: str, batch: int, hidden: int, device: str) -> Subject:
    case = Case({"batch_size": batch, "H": hidden, "I": None}, torch.float32, device)
    implementation = op.implementations[impl]
    inputs = op.target("cell").make_inputs(case)
    if implementation.prepare:
        inputs = implementation.prepare(inputs)  # loads/builds the extension: not part of first call
    args = list(inputs.values())
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(batch, hidden, generator=gen).to(device) for _ in range(2)]
    start = time.perf_counter()
    torch.autograd.grad(implementation.fn(*args), args, grads)  # JIT work happens here
    _sync(device)
    first = time.perf_counter() - start
    return Subject(impl, batch, hidden, implementation.fn, args, grads, first, {p: [] for p in PASSES})


def measure_round(subjects: list[Subject], min_time: float) -> None:
    """One short measurement of every subject and pass; rounds interleave, so a burst of load
    from other processes hits all implementations alike and the ratios stay comparable."""
    for s in subjects:
        for name in PASSES:
            s.samples[name].append(_samples(s.fn, s.args, s.grads, name, min_time))


def to_row(s: Subject) -> Row:
    pooled = {p: statistics.median([x for r in rounds for x in r]) for p, rounds in s.samples.items()}
    per_round = {p: [statistics.median(r) for r in rounds] for p, rounds in s.samples.items()}
    return Row(s.impl, s.batch, s.hidden, s.first_s, pooled, per_round)


def available(op: registry.Operator, device: str, impls: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    usable, skipped = [], {}
    for name in impls:
        reason = op.implementations[name].unavailable_reason(device)
        if reason:
            skipped[name] = reason
        else:
            usable.append(name)
    return usable, skipped


def table(rows: list[Row]) -> str:
    head = "| B | H | impl | first call (s) | fwd (µs) | bwd (µs) | fwd+bwd (µs) | fwd+bwd vs py |"
    lines = [head, "|" + "---|" * 8]
    base = {(r.batch, r.hidden): r for r in rows if r.impl == "py"}
    for r in rows:
        py = base.get((r.batch, r.hidden))
        speedup = f"{speedups.speedup(py.timing('fwd+bwd'), r.timing('fwd+bwd')):.2f}x" if py else "-"
        times = " | ".join(f"{r.median_s[p] * 1e6:.1f}" for p in PASSES)
        lines.append(f"| {r.batch} | {r.hidden} | {r.impl} | {r.first_s:.3f} | {times} | {speedup} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="64x64,1x64,256x64,64x256,256x256", help="BxH list")
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds per pass, split over the rounds")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median taken)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--impls", default=",".join(IMPLS), help="comma list (py is the baseline)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    registry.discover()
    op = registry.get("lstm_cell")
    usable, skipped = available(op, args.device, tuple(args.impls.split(",")))
    rows = []
    for shape in args.shapes.split(","):
        batch, hidden = (int(v) for v in shape.split("x"))
        subjects = [first_call(op, impl, batch, hidden, args.device) for impl in usable]
        for _ in range(args.rounds):
            measure_round(subjects, args.min_time / args.rounds)
        rows += [to_row(s) for s in subjects]
    print(f"torch {torch.__version__}, device {args.device}, threads {torch.get_num_threads()}, float32\n")
    print(table(rows))
    for r in (r for r in rows if r.impl == "py" and len(r.round_medians_s["fwd+bwd"]) > 1):
        medians = r.round_medians_s["fwd+bwd"]
        print(f"\n- B={r.batch} H={r.hidden}: py's fwd+bwd rounds took {min(medians) * 1e6:.0f}-"
              f"{max(medians) * 1e6:.0f} µs (how far the machine moved over the run)")
    for name, reason in skipped.items():
        print(f"\n- `{name}` unavailable: {reason}")


if __name__ == "__main__":
    main()

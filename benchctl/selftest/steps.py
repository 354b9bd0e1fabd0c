"""What the self-test runs: each step is a command line, as a user would type it, and what it proves."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

# Quick sweeps, each pass sampled for at most 0.3 s: the sweeps prove that each timing mode runs and gives
# ok rows, so they need not converge. On an H100 their host-bound passes ran to the default limits, 90
# passes in 140 s a sweep, and the self-test did not fit in a 15-minute GPU session; sampled so, two
# operators' sweep took 73-84 s there (the build and references around the passes). Eager timing sweeps two
# operators; --flush-l2 and --cuda-graph, compared with it cell by cell, the seed's kernel alone.
QUICK = ["--quick", "--max-time", "0.3", "--warmup-time", "0.2"]
EAGER_OPS, MODE_OPS = ("hoconv2d", "grid_sample"), ("hoconv2d",)
EAGER = "quick GPU sweep"  # the sweep the others are compared with


@dataclass(frozen=True)
class Step:
    name: str
    argv: tuple[str, ...]
    proves: str
    results: str | None = None  # the folder of the run it writes, when it is a sweep
    shows_output: bool = False  # its last output lines are a figure of the verdict


def benchctl(*args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "benchctl", *args)


def ops(names: tuple[str, ...]) -> list[str]:
    return [word for name in names for word in ("--op", name)]


def steps(out: Path, tests: Path | None) -> list[Step]:
    """Every step, in order; the GPU tests only where the test suite is at hand (a checkout)."""
    sweep = lambda name, *flags: Step(  # noqa: E731
        " ".join([EAGER, *flags]),
        benchctl("run", "all", "gpu", *QUICK, *ops(MODE_OPS if flags else EAGER_OPS), "--out", str(out / name), *flags),
        "CUDA-event timing, host_s, peak CUDA memory" if not flags else f"timing with {' '.join(flags)}",
        str(out / name))
    found = [Step("GPU tests", (sys.executable, "-m", "pytest", "-q", "-m", "gpu", str(tests)),
                  "every CUDA implementation against the float64 reference; CUDA graph capture; NVML")] if tests else []
    return found + [
        Step("check all gpu", benchctl("check", "all", "gpu"), "reference, gradcheck and opcheck on the GPU"),
        sweep("eager"), sweep("flush-l2", "--flush-l2"), sweep("cuda-graph", "--cuda-graph"),
        Step("profile (py-spy)", benchctl("profile", "hoconv2d", "cuda", "gpu", "--duration", "2",
                                          "--out", str(out / "profile-py-spy")), "py-spy on a GPU cell"),
        Step("profile (torch)", benchctl("profile", "hoconv2d", "cuda", "gpu", "--profiler", "torch", "--duration",
                                         "2", "--out", str(out / "profile-torch")), "kernel times from torch.profiler"),
        Step("maxbatch", benchctl("maxbatch", "hoconv2d", "cuda", "gpu", "--limit", "4096", "--out",
                                  str(out / "maxbatch")), "the largest batch that fits in GPU memory"),
        Step("timer agreement", (sys.executable, "-m", "benchctl.selftest.timer"),
             "the CUDA-event median within 5% of torch.utils.benchmark.Timer on the same calls (host- and GPU-bound)",
             shows_output=True),
    ]

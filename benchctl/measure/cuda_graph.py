"""CUDA-graph timing (`run --cuda-graph`): the timed call is captured once in a CUDA graph and each sample
is one replay of it between two CUDA events, so the host's launch overhead is left out, as triton's
do_bench_cudagraph does. Eager timing (CudaEventClock alone) shows what an eager model pays; the graph's
figure is what the kernels cost, or what a captured model pays.

A pass is captured as one reusable callable: the forward, the backward of one forward output kept for the
whole cell (retain_graph, so the same graph is replayed), or forward and backward together. A call that
cannot be captured (a host sync, a CPU tensor, dynamic shapes) raises GraphCaptureError, whose message
the cell's row carries; nothing else in the sweep changes.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from benchctl.measure.passes import Inputs, Output, backward_from, make_setup
from benchctl.measure.clocks import CudaEventClock, Thunk
from benchctl.vocab import Pass

WARMUP_CALLS = 3  # on a side stream before capture, as torch.cuda.graph asks (lazy init, autotuning)


class GraphCaptureError(RuntimeError):
    """The call could not be captured in a CUDA graph."""


def repeatable_thunk(call: Callable[[], Output], inputs: Inputs, grads: Any, pass_name: str,
                     accumulate: bool = False) -> Thunk:
    """The pass as one callable that can be called (and captured) again and again."""
    if pass_name != Pass.BACKWARD:
        return make_setup(call, inputs, grads, pass_name, accumulate)()
    run_backward = backward_from(inputs, grads, accumulate, retain_graph=True)
    outs: list[Output] = []

    def thunk() -> object:
        if not outs:  # the forward, once, on the stream of the first call: capture's own (see capture)
            outs.append(call())
        return run_backward(outs[0])

    return thunk


@functools.cache
def capture_stream() -> Any:
    """The one side stream that every warm-up, backward's forward and capture runs on."""
    import torch

    return torch.cuda.Stream()


def capture(thunk: Thunk) -> Thunk:
    """Warm `thunk` up on the side stream, capture it in a CUDA graph on that same stream, return the
    graph's replay. One stream for all: autograd runs a backward op on the stream its forward op ran on,
    and a capture refuses a backward whose forward ran on a stream outside it (the default stream)."""
    import torch

    try:
        side = capture_stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_CALLS):
                thunk()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=side):
            kept = thunk()  # the graph's outputs live in its memory pool; keep them with the graph
    except Exception as exc:
        raise GraphCaptureError(f"cannot be captured in a CUDA graph: {type(exc).__name__}: {exc}") from exc
    graph.kept = kept  # type: ignore[attr-defined]
    return graph.replay


class CudaGraphClock:
    """Times each thunk as replays of its CUDA graph, captured on first sight, between CUDA events.

    `events` times a replay as it times an eager call; `capture_fn` defaults to `capture` (tests pass
    fakes). Only the graph of the latest thunk (one pass of the cell) is kept: the clock lives for the
    whole cell, and each graph's memory pool holds its outputs and saved activations on the GPU."""

    def __init__(self, events: CudaEventClock, capture_fn: Callable[[Thunk], Thunk] = capture):
        self.events = events
        self.capture_fn = capture_fn
        self.current: tuple[Thunk, Thunk] | None = None  # (thunk, its replay)

    @property
    def host_per_call(self) -> list[float]:
        return self.events.host_per_call

    @property
    def stray_per_call(self) -> list[float]:
        return self.events.stray_per_call

    def time(self, thunk: Thunk) -> float:
        if self.current is None or self.current[0] is not thunk:
            self.current = None  # the last pass's graph and its pool go before the next capture
            self.current = (thunk, self.capture_fn(thunk))
        return self.events.time(self.current[1])

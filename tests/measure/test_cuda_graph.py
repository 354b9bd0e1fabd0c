"""CUDA-graph timing with fakes (no GPU here): one capture per pass, samples are replays between events,
a call that cannot be captured becomes a clear error row; on a GPU, the real capture of a cell."""

import contextlib
import functools

import pytest
import torch

from benchctl.measure import cuda_graph
from benchctl.measure.cuda_graph import CudaGraphClock, GraphCaptureError, capture, repeatable_thunk
from benchctl.measure.execute import Settings, _time_pass
from benchctl.measure.result import PassResult
from benchctl.measure.clocks import CudaEventClock
from benchctl.measure.timing import Policy, measure


class FakeEvent:
    def __init__(self, times):
        self.times = times

    def record(self):
        self.t = self.times.pop(0)

    def synchronize(self):
        pass

    def elapsed_time(self, end) -> float:
        return end.t - self.t


def events(times_ms):
    return CudaEventClock(event_factory=lambda: FakeEvent(times_ms), synchronize=lambda: None, spin=lambda s: None,
                          counter=lambda: 0)


def test_a_thunk_is_captured_once_and_each_sample_is_one_replay():
    captured, replayed = [], []

    def fake_capture(thunk):
        captured.append(thunk)
        return lambda: replayed.append(thunk)

    clock = CudaGraphClock(events([0.0, 1.0, 5.0, 6.5, 9.0, 10.0]), fake_capture)
    thunk = lambda: None  # noqa: E731
    m = measure(lambda: thunk, clock, Policy(warmup=1, warmup_time=0, min_samples=2, min_time=0, ci_target=0))
    assert captured == [thunk] and replayed == [thunk] * 3  # warm-up and two samples, one capture
    assert m.warmup_s == pytest.approx((0.001,)) and m.samples == pytest.approx((0.0015, 0.001))


def test_a_pass_s_graph_is_let_go_when_the_next_pass_is_captured():
    import weakref

    class Replay:
        def __call__(self):
            pass

    captured = []

    def fake_capture(thunk):
        replay = Replay()
        captured.append(weakref.ref(replay))
        return replay

    clock = CudaGraphClock(events([0.0, 1.0] * 3), fake_capture)
    forward, backward = (lambda: None), (lambda: None)
    clock.time(forward), clock.time(backward), clock.time(backward)
    # the clock lives for the cell: the forward's graph (and its GPU memory pool) goes, the backward's stays
    assert len(captured) == 2 and captured[0]() is None and captured[1]() is not None


def test_a_call_that_cannot_be_captured_is_an_error_row_that_says_so(builtin_ops):
    from benchctl.measure.execute import prepare
    from benchctl.ops.cells import Cell

    def refuses(thunk):
        raise GraphCaptureError("cannot be captured in a CUDA graph: RuntimeError: operation not permitted "
                                "when stream is capturing")

    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": 1, "C": 3, "H": 8, "W": 8, "k": 3})
    prepared = prepare(cell.resolve())
    row = _time_pass(PassResult(), prepared, "forward", Settings(probe_bandwidth=False),
                     CudaGraphClock(events([]), refuses)).to_row()
    assert row["status"] == "error" and row["pass"] == "forward"
    assert row["message"].startswith("GraphCaptureError: cannot be captured in a CUDA graph: RuntimeError")


def test_a_watched_gpu_pass_runs_on_fakes_to_an_ok_row_with_the_gpu_s_clock(builtin_ops, monkeypatch):
    """What a `--cuda-graph` sweep does to a pass on a GPU, run here on fakes: the pass timed as graph
    replays over fake events, watched by a clock guard over a fake NVML; the row comes out ok, with the
    GPU's clock and the host side."""
    from benchctl.machine.gpu_clocks import ClockGuard
    from benchctl.measure import execute
    from benchctl.ops.cells import Cell
    from gpu_fakes import FakeNvml

    monkeypatch.setattr(execute.gpu_clocks, "guard", lambda device: ClockGuard(FakeNvml(clocks=[1980, 1400])))
    cell = Cell.make("hoconv2d", "filter", "py", "cpu", "float32", {"batch_size": 1, "C": 3, "H": 8, "W": 8, "k": 3})
    clock = CudaGraphClock(events([float(i) for i in range(10**4)]), lambda thunk: thunk)  # 1 ms a replay
    policy = Policy(warmup=1, warmup_time=0, min_samples=5, min_time=0, max_samples=5, ci_target=0)
    settings = Settings(probe_bandwidth=False, measure_memory=False, policy=policy)
    row = _time_pass(PassResult(), execute.prepare(cell.resolve()), "forward", settings, clock, watch=True).to_row()
    assert row["status"] == "ok" and row["median_s"] == pytest.approx(0.001) and row["host_s"] == 0.0
    assert row["sm_clock_mhz"] == 1400 and row["throttled"]  # the guard's samples after its first
    assert clock.stray_per_call is clock.events.stray_per_call and len(clock.stray_per_call) == 6  # warm-up + 5


def test_every_row_says_how_its_calls_were_timed(builtin_ops):
    from benchctl.measure.clocks import CpuClock
    from benchctl.measure.execute import _timing, run_cell
    from benchctl.ops.cells import Cell

    graph = CudaGraphClock(events([0.0, 1.0]), lambda thunk: thunk)
    assert _timing(graph, "cuda", Settings(flush_l2=True)) == {"timing_mode": "cuda_graph", "flush_l2": True}
    assert _timing(graph.events, "cuda", Settings()) == {"timing_mode": "eager", "flush_l2": False}
    assert _timing(CpuClock(), "cpu", Settings()) == {"timing_mode": "eager", "flush_l2": False}
    assert _timing(None, "cpu", Settings(flush_l2=True)) == {"timing_mode": "eager", "flush_l2": True}
    # the untimed rows too (without a GPU: unavailable), so a graph run's tables and charts hold its failures
    # beside its times
    cell = Cell.make("hoconv2d", "filter", "cuda", "cuda", "float32", {"batch_size": 1, "C": 3, "H": 8, "W": 8, "k": 3})
    quick = Policy(warmup=1, warmup_time=0, min_samples=3, min_time=0, max_samples=3, ci_target=0)
    rows = [r.to_row() for r in run_cell(cell, Settings(cuda_graph=True, policy=quick, probe_bandwidth=False))]
    assert {(r["timing_mode"], r["flush_l2"]) for r in rows} == {("cuda_graph", False)}
    triton = Cell.make("hoconv2d", "filter", "triton", "cpu", "float32", {"batch_size": 1, "C": 3, "H": 8, "W": 8, "k": 3})
    rows = [r.to_row() for r in run_cell(triton, Settings(flush_l2=True, policy=quick, probe_bandwidth=False))]
    assert {(r["status"], r["timing_mode"], r["flush_l2"]) for r in rows} == {("unavailable", "eager", True)}


def test_the_backward_thunk_reuses_one_graph_so_it_can_be_replayed():
    x = torch.randn(4, requires_grad=True)
    calls = []

    def call():
        calls.append(1)
        return x * x

    thunk = repeatable_thunk(call, {"x": x}, (torch.ones(4),), "backward")
    first, second = thunk(), thunk()  # the retained graph: no new forward, the same gradient
    assert len(calls) == 1 and torch.equal(first[0], second[0]) and torch.equal(first[0], 2 * x.detach())


class FakeStream:
    def __init__(self, name):
        self.name = name

    def wait_stream(self, other):
        pass


class FakeGraph:
    def replay(self):
        pass


class FakeCuda:
    """torch.cuda's streams and graph capture, reduced to the name of the current stream."""

    def __init__(self, monkeypatch):
        self.now = "default"
        monkeypatch.setattr(torch.cuda, "Stream", lambda: FakeStream("side"))
        monkeypatch.setattr(torch.cuda, "current_stream", lambda: FakeStream(self.now))
        monkeypatch.setattr(torch.cuda, "stream", self.stream)
        monkeypatch.setattr(torch.cuda, "CUDAGraph", FakeGraph)
        # torch.cuda.graph captures on a side stream of its own unless given one
        monkeypatch.setattr(torch.cuda, "graph", lambda graph, stream=None: self.stream(stream or FakeStream("own")))
        monkeypatch.setattr(cuda_graph, "capture_stream", functools.cache(cuda_graph.capture_stream.__wrapped__))

    @contextlib.contextmanager
    def stream(self, stream):
        before, self.now = self.now, stream.name
        yield
        self.now = before


def test_a_backward_is_warmed_up_and_captured_on_the_stream_its_forward_ran_on(monkeypatch):
    fake = FakeCuda(monkeypatch)
    x = torch.randn(4, requires_grad=True)
    forwards, calls = [], []

    def call():
        forwards.append(fake.now)
        return x * x

    thunk = repeatable_thunk(call, {"x": x}, (torch.ones(4),), "backward")
    capture(lambda: calls.append(fake.now) or thunk())
    # autograd runs a backward op on its forward op's stream, and a capture refuses one outside it
    assert forwards == ["side"] and calls == ["side"] * (cuda_graph.WARMUP_CALLS + 1)


@pytest.mark.gpu
def test_capture_on_a_gpu_replays_the_same_result():
    x = torch.randn(1024, device="cuda")
    out = {}

    def thunk():
        out["y"] = x * 2
        return out["y"]

    replay = capture(thunk)
    x.copy_(torch.ones_like(x))
    replay()
    torch.cuda.synchronize()
    assert torch.equal(out["y"], torch.full_like(x, 2.0))


@pytest.mark.gpu
def test_capture_of_a_backward_on_a_gpu_replays_its_gradient():
    x = torch.randn(1024, device="cuda", requires_grad=True)
    thunk = repeatable_thunk(lambda: x * x, {"x": x}, (torch.ones(1024, device="cuda"),), "backward")
    replay = capture(thunk)
    replay()
    torch.cuda.synchronize()
    (grad,) = replay.__self__.kept
    assert torch.allclose(grad, 2 * x.detach())


@pytest.mark.gpu
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "cuda-graph"])
def test_a_gpu_cell_runs_to_ok_rows_with_their_host_side(builtin_ops, graph):
    """The whole path a sweep takes on a GPU, eager and as graph replays: every pass ok, host time kept."""
    from benchctl.measure.execute import run_cell
    from benchctl.ops.cells import Cell

    params = {"batch_size": 2, "C": 3, "H": 32, "W": 32, "k": 5}
    cell = Cell.make("hoconv2d", "filter", "cuda", "cuda", "float32", params)
    policy = Policy(warmup=2, warmup_time=0.1, min_samples=5, min_time=0, max_samples=5, ci_target=0)
    rows = run_cell(cell, Settings(probe_bandwidth=False, cuda_graph=graph, policy=policy))
    assert [r["status"] for r in rows] == ["ok"] * len(rows) and rows, [r["message"] for r in rows]
    assert all(r["host_s"] > 0 and r["median_s"] > 0 for r in rows)
    assert {(r["timing_mode"], r["flush_l2"]) for r in rows} == {("cuda_graph" if graph else "eager", False)}

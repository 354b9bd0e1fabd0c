"""The process `benchctl profile` runs under a profiler: exactly the timing loop of one cell.

It builds the cell as `benchctl run` does (`execute.prepare`), then, with `--ready/--go`, says it is
ready and waits while py-spy attaches, then repeats `thunk = setup(); thunk()` for the requested
duration. The two steps run inside functions with distinctive names (`stacks.SETUP_FRAME`,
`stacks.TIMED_FRAME`) so the parent can tell samples in the timed thunk from samples in the untimed
setup and in start-up (imports, the first compile call). With `--flush-caches` the flush (measure/flush.py)
runs at the end of the untimed setup, so its samples and its operators are not the timed thunk's.

Its result (repetitions; wall, CPU and waiting seconds, alone and under the profiler; or the error)
goes to the `--summary` JSON file rather than stdout, because under py-spy the child's exit status and
output are not passed back.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, ContextManager, NamedTuple

import torch

from benchctl.errors import error_message
from benchctl.measure import execute
from benchctl.ops import registry
from benchctl.ops.cells import Cell
from benchctl.profile import handshake
from benchctl.profile.profilers import FILES, TORCH_MAX_REPS
from benchctl.profile.stacks import collapsed
from benchctl.profile.torch_events import TORCH_RANGE, op_stacks, top_ops
from benchctl.measure.clocks import Thunk
from benchctl.measure.flush import flusher
from benchctl.measure.passes import NO_BACKWARD
from benchctl.measure.interference import RunQueue
from benchctl.measure.timing import collector_off
from benchctl.vocab import Device, Status

Setup = Callable[[], Thunk]
UNPROFILED_S = 1.0  # the loop timed without a profiler for this long (at least one repetition)


def benchctl_untimed_setup(setup: Setup, sync: Callable[[], None], before: Callable[[], object]) -> Thunk:
    """Untimed in `benchctl run`; its name marks its samples (stacks.SETUP_FRAME). `before` runs last, as the
    clocks' hook does (with --flush-caches, the flush). CUDA: it waits for the kernels it queued (a backward's
    forward, the copy of the next data set, the flush), as the CUDA-event clock synchronises before its start
    event; else they ran in the timed range, and the timed thunk's wait counted them."""
    thunk = setup()
    before()
    sync()
    return thunk


def benchctl_timed_thunk(thunk: Thunk, sync: Callable[[], None]) -> None:
    """Timed in `benchctl run` (CUDA: including the wait for the kernels, as the CUDA-event clock)."""
    thunk()
    sync()


class Loop(NamedTuple):
    """What `run_loop` did: repetitions, and over the timed thunks, the wall seconds, the calling thread's
    CPU seconds (none while a profiler holds it stopped, or while it waits for a core) and the seconds it
    waited for a core (runnable, not running: its run-queue delay)."""
    reps: int
    timed_s: float
    cpu_s: float
    waited_s: float


def run_loop(setup: Setup, duration_s: float, sync: Callable[[], None], max_reps: int | None = None,
             timed_range: Callable[[], ContextManager[Any]] = contextlib.nullcontext,
             before: Callable[[], object] = lambda: None) -> Loop:
    """Repeats setup + thunk until `duration_s` has passed (at least once); `before` runs untimed before each
    thunk.
    The garbage collector is off as in `benchctl run`'s timing loop: on, its full collections (no Python
    frames that py-spy can read) took 1.5 s of a 2 s profile of hoconv2d's py backward."""
    reps, timed, cpu, waited = 0, 0.0, 0.0, 0.0
    queue = RunQueue(threads=[threading.get_native_id()])
    deadline = time.perf_counter() + duration_s
    with collector_off():
        while reps == 0 or (time.perf_counter() < deadline and (max_reps is None or reps < max_reps)):
            thunk = benchctl_untimed_setup(setup, sync, before)
            # The thread's CPU clock and run-queue delay are read outside the wall clock's reads, so that only
            # the call runs between those (as in `run`); theirs bracket it.
            ran, queued = time.thread_time(), queue.read()
            start = time.perf_counter()
            with timed_range():
                benchctl_timed_thunk(thunk, sync)
            timed += time.perf_counter() - start
            cpu += time.thread_time() - ran
            waited += queue.read() - queued
            reps += 1
    queue.close()
    return Loop(reps, timed, cpu, waited)


def _sync(device: str) -> Callable[[], None]:
    return torch.cuda.synchronize if device == Device.CUDA else (lambda: None)


def torch_profile(prepared: execute.Prepared, args: argparse.Namespace, before: Callable[[], object]) -> dict[str, Any]:
    """The loop under torch.profiler: a Chrome trace, the top operators (CSV) and the operator stacks the
    flame graph is drawn from (collapsed, in microseconds) in `--torch-out`."""
    from torch.profiler import ProfilerActivity, profile, record_function

    device = prepared.resolved.cell.device
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == Device.CUDA else [])
    setup = prepared.setup(args.pass_name)
    with profile(activities=activities, profile_memory=args.memory) as prof:
        loop = run_loop(setup, args.duration, _sync(device), TORCH_MAX_REPS, lambda: record_function(TORCH_RANGE),
                        before)
    out = Path(args.torch_out)
    prof.export_chrome_trace(str(out / FILES["trace"]))
    events = prof.events()
    rows = top_ops(events)
    stacks, of = op_stacks(events)
    (out / FILES["op_stacks"]).write_text(collapsed(stacks))
    with open(out / FILES["top_ops"], "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["name"])
        writer.writeheader()
        writer.writerows(rows)
    result: dict[str, Any] = {**loop._asdict(), "top_ops": rows, "op_stacks_of": of}
    if args.memory:
        from benchctl.measure.memory import peak_bytes

        result["peak_mem_bytes"] = peak_bytes(setup, device)
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    cell = Cell.from_json(args.cell)
    registry.discover(args.ops_dir, [cell.op])
    resolved = cell.resolve()
    reason = resolved.unavailable_reason()
    if reason:
        return {"status": Status.UNAVAILABLE, "error": reason}
    prepared = execute.prepare(resolved)
    if not prepared.has(args.pass_name):
        return {"status": Status.UNAVAILABLE, "error": f"{NO_BACKWARD} (profile --pass forward)"}
    setup = prepared.setup(args.pass_name)
    setup()()  # warm-up outside the markers and the profiler: the allocator's caches settle
    _sync(cell.device)()
    before = flusher(cell.device) if args.flush_caches else (lambda: None)
    # The same loop before any profiler is attached: what a repetition costs without one, so the parent
    # can say how much the profiler slowed it.
    alone = run_loop(setup, UNPROFILED_S, _sync(cell.device), before=before)
    unprofiled = {"unprofiled_reps": alone.reps, "unprofiled_s": alone.timed_s, "unprofiled_cpu_s": alone.cpu_s,
                  "unprofiled_waited_s": alone.waited_s}
    if args.ready:
        handshake.wait_for_go(Path(args.ready), Path(args.go))
    if args.torch_out:
        return {"status": Status.OK, **unprofiled, **torch_profile(prepared, args, before)}
    loop = run_loop(setup, args.duration, _sync(cell.device), before=before)
    return {"status": Status.OK, **unprofiled, **loop._asdict()}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchctl.profile.child")
    parser.add_argument("--cell", required=True, help="the Cell as JSON (Cell.to_json)")
    parser.add_argument("--pass", dest="pass_name", required=True)
    parser.add_argument("--duration", type=float, required=True)
    parser.add_argument("--summary", required=True, help="JSON file the result is written to")
    parser.add_argument("--ops-dir", action="append", default=[])
    parser.add_argument("--torch-out", default=None, help="run under torch.profiler, files into this folder")
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--flush-caches", action="store_true", help="cold caches before each repetition, untimed")
    parser.add_argument("--ready", default=None, help="file to create once the cell is built")
    parser.add_argument("--go", default=None, help="file to wait for before the loop starts")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        result = run(args)
    except Exception as exc:  # reported to the parent as one line, never lost with the child's stderr
        result = {"status": execute.status_of(exc), "error": error_message(exc)}
    Path(args.summary).write_text(json.dumps(result))
    return 0 if result["status"] == Status.OK else 1


if __name__ == "__main__":
    # Without the interpreter's teardown: its full garbage collection has no Python frames, and py-spy,
    # still attached, filed 1.1-1.5 s of samples of it under start-up (300 of 430 in a 2 s profile).
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

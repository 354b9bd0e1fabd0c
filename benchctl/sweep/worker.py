"""The worker process: imports torch once, then runs cells sent by the parent, one JSON line each.

Protocol on stdin/stdout (stdout is moved aside first, so anything an implementation prints goes to
stderr and cannot corrupt it): the first line is the setup, each further line a cell; each reply is
one line, signed (channel.py). The worker ignores SIGINT: the parent owns interruption and kills it. A worker
whose parent dies (kill -9) exits within a second, even in the middle of a cell, instead of running on.
"""

from __future__ import annotations

import faulthandler
import json
import os
import resource
import signal
import sys
import threading
import time

from benchctl import interpreter


def _limit_memory(extra_bytes: int | None) -> None:
    """Address-space limit above what the process maps now (torch and the libraries already loaded),
    so an allocation past it fails in this process instead of driving the machine into swap."""
    if not extra_bytes:
        return
    _grow()
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = mapped + int(extra_bytes)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _grow() -> None:
    """What the process maps for itself on its first cell, mapped before the limit is set above it: torch's
    intra-op threads (their stacks and malloc arenas) and the modules a first backward imports (autograd
    imports sympy). Left to the first cell, under the limit, they took most of it (16 threads: 1 row of
    64 MiB fitted under 640 MiB, 10 once they had started first), or failed the first backward that had
    room for its tensors but not for the import."""
    import torch

    x = torch.ones(64, 1 << 16, requires_grad=True)  # an elementwise op and a reduction over every thread
    out = (x * 2).sum(dim=1)
    torch.autograd.grad(out, [x], torch.ones_like(out))
    torch.ones(256, 256) @ torch.ones(256, 256)


def _exit_with_parent(poll_s: float = 1.0) -> None:
    """Watch the parent from a daemon thread; when it is gone (the worker is re-parented), exit at once."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)
    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent()
    # A segfault or abort leaves the Python stack on stderr (this thread's: not the parent watcher's); the
    # row carries the tail.
    faulthandler.enable(all_threads=False)
    proto = interpreter.reply_channel(buffering=1)

    from benchctl.ops import registry
    from benchctl.ops.cells import Cell
    from benchctl.measure import held, seal
    from benchctl.measure.execute import run_cell
    from benchctl.sweep import channel
    from benchctl.sweep.worker_spec import WorkerSpec

    seal.bind()  # the timing code as benchctl's own files made it, before any operator file is imported

    setup = json.loads(sys.stdin.readline())
    reply = channel.signer(setup.pop("key"))  # the key lives on only inside the signer's HMAC
    spec = WorkerSpec.from_setup(setup)
    start = held.ready(spec.threads, spec.settings.tf32)  # before any operator file is imported (measure/held.py)
    # The limit is inherited by subprocesses, so a caller that sets one builds extensions beforehand.
    _limit_memory(spec.mem_limit)
    proto.write(json.dumps({"ready": True}) + "\n")
    for seq, line in enumerate(sys.stdin):
        cell = Cell.from_json(line)
        registry.discover(spec.ops_dirs, [cell.op])  # only the operator the cell needs
        proto.write(reply(seq, [r.to_row() for r in run_cell(cell, spec.settings, start=start)]) + "\n")


if __name__ == "__main__":
    main()

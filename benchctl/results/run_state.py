"""Whether a run is still being written, and what a reader of a run that did not complete should know.

A run's metadata names the process writing it (host, pid, and when that pid started), so a reader on the same
host can tell a run still going from one whose writer was killed (`cut off`).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any, Sequence

from benchctl.vocab import RunState


def this_process() -> dict[str, Any]:
    """This process as a run's writer: what `writer_gone` reads back."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "pid_started": started(os.getpid())}


def started(pid: int) -> int | None:
    """When a process started (clock ticks since boot, /proc/PID/stat field 22): tells a live writer from
    a later process that reuses its pid. None when the process does not exist (or there is no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def writer_gone(writer: Any) -> bool:
    """Whether the process that wrote a running run has ended (only knowable on the same host)."""
    if not isinstance(writer, dict) or writer.get("host") != socket.gethostname():
        return False
    when = started(int(writer.get("pid", 0)))
    return when is None or when != writer.get("pid_started")


def unfinished(metas: Sequence[dict[str, Any]]) -> list[str]:
    """One line for each run that did not complete, saying what a reader of its rows should know."""
    said = {RunState.CUT_OFF: "was cut off (its writer died); its finished cells are loaded",
            RunState.INTERRUPTED: "was interrupted; its finished cells are loaded",
            RunState.FAILED: "failed", RunState.RUNNING: "is still running; the cells finished so far are loaded"}
    lines = []
    for meta in metas:
        state = meta.get("state")
        if state in said:
            reason = f" ({meta['reason']})" if meta.get("reason") else ""
            lines.append(f"run {meta.get('run_id')} {said[state]}{reason}")
    return lines

"""Profiles of one cell's timing loop: py-spy (native frames) or torch.profiler, in a child process.

py-spy attaches to the child once it has built its cell, and the child starts its loop once py-spy says it
samples (`handshake`): start-up stays out of the profile and the first sample comes at once. py-spy writes
collapsed stacks (`stacks.txt`), which name the code the child generated at run time from its perf map
(`perf_map`); from them `benchctl.profile.stacks` makes the top-frames tables and the speedscope JSON, and
`flame` draws the flame graph of the same timed samples (one py-spy: a second one for py-spy's own SVG
stopped the loop more often, and its fewer samples disagreed with the tables). The torch profiler runs in
the child, which writes the Chrome trace and the top operators itself. Nothing here prints.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchctl import interpreter
from benchctl.errors import BenchError
from benchctl.analysis.timed_alike import FLUSHED
from benchctl.machine import load
from benchctl.profile import flame, perf_map
from benchctl.profile.handshake import BUILD_GRACE_S, wait_attached, wait_ready
from benchctl.profile.stacks import (KEEP_ROWS, Stacks, TopFrames, collapsed, parse_collapsed, speedscope,
                                     top_frames)
from benchctl.results import storage
from benchctl.results.schema import BUSY_WARN_CORES
from benchctl.vocab import Pass, Status

if TYPE_CHECKING:  # cells imports torch, which the parent process has no need of
    from benchctl.ops.cells import Cell

RATE_HZ = 100  # py-spy's own default: each sample stops the loop while py-spy reads its stacks
SLOWED = 2.0  # a profiled loop this many times slower than alone: its shares may not be the loop's own
TORCH_MAX_REPS = 100  # each repetition adds every op to the Chrome trace: keep the file openable
MANIFEST = storage.PROFILE_MANIFEST
FILES = {"stacks": "stacks.txt", "flamegraph": "flamegraph.svg", "speedscope": "speedscope.json",
         "trace": "trace.json", "top_ops": "top_ops.csv", "op_stacks": "op_stacks.txt"}
_PERMISSION = re.compile(r"permission denied|operation not permitted|os error (1|13)\b|ptrace", re.I)
PTRACE_HINT = ("py-spy is not permitted to read the profiled process (it needs ptrace): run as root, "
               "start the container with --cap-add SYS_PTRACE, or allow it with "
               "`sysctl -w kernel.yama.ptrace_scope=0`")


@dataclass(frozen=True)
class ProfileRequest:
    cell: Cell
    pass_name: str = Pass.FORWARD_BACKWARD
    duration_s: float = 5.0
    rate_hz: int = RATE_HZ
    native: bool = True
    memory: bool = False
    ops_dirs: tuple[str, ...] = ()
    flush_caches: bool = False  # each repetition starts on cold caches (measure/flush.py), as `run --flush-caches`


@dataclass(frozen=True)
class ProfileResult:
    out_dir: Path
    profiler: str
    reps: int
    timed_s: float
    files: dict[str, str] = field(default_factory=dict)  # role -> file name inside out_dir
    top: TopFrames | None = None
    top_ops: tuple[dict[str, Any], ...] = ()
    peak_mem_bytes: float | None = None
    unprofiled_s: float | None = None  # one repetition's seconds in the same child, before the profiler came
    cpu_s: float | None = None  # the timed thunks' CPU seconds on the loop's thread, under the profiler
    unprofiled_cpu_s: float | None = None  # one repetition's CPU seconds on that thread, alone
    other_cores: float | None = None  # cores other processes kept busy meanwhile (median of 1 s samples)
    waited_s: float | None = None  # the timed thunks' seconds on that thread waiting for a core, under the profiler
    unprofiled_waited_s: float | None = None  # one repetition's seconds waiting for a core, alone

    @property
    def slowdown(self) -> float | None:
        """How many times longer a repetition took under the profiler than without it."""
        if not self.unprofiled_s or not self.reps:
            return None
        return self.timed_s / self.reps / self.unprofiled_s

    @property
    def shared(self) -> bool:
        """Profiled while other work kept a core busy: the loop's threads waited for it, as `run` warns."""
        return self.other_cores is not None and self.other_cores >= BUSY_WARN_CORES

    @property
    def ran(self) -> float | None:
        """How many times longer the loop's thread ran (CPU time) a repetition under the profiler than
        alone: over 1 where the profiler changed the work itself (caches, threads out of step)."""
        if not self.unprofiled_cpu_s or not self.reps or self.cpu_s is None:
            return None
        return self.cpu_s / self.reps / self.unprofiled_cpu_s

    @property
    def off_cpu(self) -> float | None:
        """The share of a profiled repetition's time its thread spent off the CPU beyond its share alone:
        held stopped while py-spy read its stacks, or waiting for a core the profiler took."""
        slowdown, ran = self.slowdown, self.ran
        if slowdown is None or ran is None:
            return None
        return max(0.0, 1.0 - ran / slowdown)

    @property
    def waiting(self) -> float | None:
        """The share of a profiled repetition's time its thread waited for a core (runnable, not running)
        beyond what it waits alone: part of `off_cpu`, the rest is time held stopped or blocked."""
        if self.waited_s is None or self.unprofiled_waited_s is None or not self.reps or not self.timed_s:
            return None
        return max(0.0, (self.waited_s / self.reps - self.unprofiled_waited_s) / (self.timed_s / self.reps))

    @property
    def slowed(self) -> bool:
        """Slowed enough that its shares may not be the loop's own (SLOWED)."""
        return self.slowdown is not None and self.slowdown >= SLOWED


def profiled(req: ProfileRequest) -> str:
    """The cell and pass a profile's pictures are titled with, and how its repetitions started where they
    started on cold caches: `... forward (caches flushed)`."""
    return f"{req.cell.label()} {req.pass_name}" + (f" ({FLUSHED[req.cell.device]})" if req.flush_caches else "")


def find_py_spy() -> str | None:
    """py-spy beside this Python first (a venv that is not activated), then on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("py-spy")


def child_command(req: ProfileRequest, summary: Path, torch_out: Path | None = None,
                  handshake: Path | None = None) -> list[str]:
    cmd = interpreter.module_command("benchctl.profile.child", "--cell", req.cell.to_json(),
                                     "--pass", req.pass_name, "--duration", str(req.duration_s), "--summary", str(summary))
    if handshake is not None:
        cmd += ["--ready", str(handshake / "ready"), "--go", str(handshake / "go")]
    for folder in req.ops_dirs:
        cmd += ["--ops-dir", str(folder)]
    if req.flush_caches:
        cmd.append("--flush-caches")
    if torch_out is not None:
        cmd += ["--torch-out", str(torch_out)] + (["--memory"] if req.memory else [])
    return cmd


def _run(cmd: list[str], req: ProfileRequest) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=req.duration_s + BUILD_GRACE_S,
                              env=interpreter.child_env())
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"profile of {req.cell.label()} timed out after {exc.timeout:.0f} s") from None


def _child_result(summary: Path, proc: subprocess.CompletedProcess[str], req: ProfileRequest) -> dict[str, Any]:
    """The child's summary, or a BenchError with the last line of stderr (py-spy's or the child's)."""
    if proc.returncode != 0 or not summary.exists():
        if _PERMISSION.search(proc.stderr):
            raise BenchError(PTRACE_HINT)
        last = ([ln.strip() for ln in proc.stderr.splitlines() if ln.strip()] or ["(no output)"])[-1]
        if not summary.exists():
            raise BenchError(f"profile of {req.cell.label()} failed: {last}")
    data = json.loads(summary.read_text())
    if data["status"] != Status.OK:
        status = "" if data["status"] == Status.ERROR else f"{data['status']}: "  # the message names the error
        raise BenchError(f"{req.cell.label()} {req.pass_name}: {status}{data['error']}")
    return data


def _record(py_spy: str, req: ProfileRequest, output: Path, tmp: Path) -> tuple[dict[str, Any], perf_map.JitSymbols]:
    """Start the child, attach py-spy once it is ready, let it run; the child's summary and the names of
    the code it generated."""
    summary, err, said_file = tmp / "summary.json", tmp / "stderr.txt", tmp / "py-spy.said"
    with open(err, "w") as stderr:  # a file: a pipe nobody reads fills and blocks
        child = subprocess.Popen(child_command(req, summary, handshake=tmp), stdout=subprocess.DEVNULL,
                                 stderr=stderr, env=interpreter.child_env(perf_map.child_env()))
        spy: subprocess.Popen[bytes] | None = None
        try:
            wait_ready(child, tmp / "ready")
            if child.poll() is None:  # else it failed building its cell, and its summary says why
                cmd = [py_spy, "record", "--pid", str(child.pid), "--format", "raw", "--rate", str(req.rate_hz),
                       "--output", str(output)] + ["--native"] * req.native
                with open(said_file, "w") as said:
                    spy = subprocess.Popen(cmd, stdout=said, stderr=stderr)
                wait_attached(spy, said_file)
            (tmp / "go").touch()
            child.wait(timeout=req.duration_s + BUILD_GRACE_S)
            if spy is not None:
                spy.wait(timeout=60)
        except subprocess.TimeoutExpired as exc:
            raise BenchError(f"profile of {req.cell.label()} timed out after {exc.timeout:.0f} s") from None
        finally:
            for proc in (child, spy):
                if proc is not None:
                    proc.kill()
            child.wait()
            symbols = perf_map.take(child.pid)
    said = err.read_text(errors="replace")
    data = _child_result(summary, subprocess.CompletedProcess([], child.returncode, "", said), req)
    if not output.exists():
        raise BenchError(PTRACE_HINT if _PERMISSION.search(said) else f"py-spy wrote no stacks: {said.strip()[-300:]}")
    return data, symbols


def profile_py_spy(req: ProfileRequest, out_dir: Path) -> ProfileResult:
    py_spy = find_py_spy()
    if py_spy is None:
        raise BenchError(f"py-spy not found (looked beside {sys.executable} and on PATH): "
                         "install it with `pip install py-spy`")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, load.Timeline() as timeline:
        data, symbols = _record(py_spy, req, out_dir / FILES["stacks"], Path(tmp))
    stacks = _stacks_named(out_dir, symbols)
    name = profiled(req)
    (out_dir / FILES["speedscope"]).write_text(json.dumps(speedscope(stacks, name)))
    files, top = {k: FILES[k] for k in ("stacks", "speedscope")}, top_frames(stacks)
    if top.samples["timed"]:  # the flame graph is of the timed samples: none, no picture
        flame.write(stacks, name, out_dir / FILES["flamegraph"])
        files["flamegraph"] = FILES["flamegraph"]
    result = ProfileResult(out_dir, "py-spy", data["reps"], data["timed_s"], files, top,
                           **_costs(data), other_cores=timeline.other_cores())
    write_manifest(req, result)
    return result


def _stacks_named(out_dir: Path, symbols: perf_map.JitSymbols) -> Stacks:
    """The stacks, with generated code named in them (the file rewritten)."""
    stacks_file = out_dir / FILES["stacks"]
    stacks = perf_map.name_stacks(parse_collapsed(stacks_file.read_text()), symbols)
    if symbols.starts:
        stacks_file.write_text(collapsed(stacks))
    return stacks


def profile_torch(req: ProfileRequest, out_dir: Path) -> ProfileResult:
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, load.Timeline() as timeline:
        summary = Path(tmp, "torch.json")
        data = _child_result(summary, _run(child_command(req, summary, out_dir), req), req)
    files = {k: FILES[k] for k in ("trace", "top_ops", "op_stacks")}
    if _draw_ops(req, out_dir, data.get("op_stacks_of")):
        files["flamegraph"] = FILES["flamegraph"]
    result = ProfileResult(out_dir, "torch", data["reps"], data["timed_s"], files,
                           top_ops=tuple(data["top_ops"][:KEEP_ROWS]), peak_mem_bytes=data.get("peak_mem_bytes"),
                           **_costs(data), other_cores=timeline.other_cores())
    write_manifest(req, result)
    return result


def _draw_ops(req: ProfileRequest, out_dir: Path, of: str | None) -> bool:
    """The torch profile's flame graph from the operator stacks the child wrote; False where they hold no time."""
    stacks = parse_collapsed((out_dir / FILES["op_stacks"]).read_text())
    if of is None or not stacks:
        return False
    title = f"{profiled(req)}: {of} time by operator"
    (out_dir / FILES["flamegraph"]).write_text(flame.op_svg(stacks, title, of))
    return True


def _costs(data: dict[str, Any]) -> dict[str, float | None]:
    """The child's summary as ProfileResult's cost fields: the loop alone per repetition (wall, CPU and
    waiting for a core), and the CPU and waiting seconds under the profiler."""
    reps = data["unprofiled_reps"]
    return {"unprofiled_s": data["unprofiled_s"] / reps, "unprofiled_cpu_s": data["unprofiled_cpu_s"] / reps,
            "cpu_s": data["cpu_s"], "unprofiled_waited_s": data["unprofiled_waited_s"] / reps,
            "waited_s": data["waited_s"]}


def write_manifest(req: ProfileRequest, result: ProfileResult) -> Path:
    """profile.json: what was profiled, how, the files, and the top tables (what `report` reads)."""
    data: dict[str, Any] = {
        "schema_version": 1, "profiler": result.profiler, "created": datetime.now().isoformat(timespec="seconds"),
        "cell": json.loads(req.cell.to_json()), "label": req.cell.label(), "pass": req.pass_name,
        "duration_s": req.duration_s, "rate_hz": req.rate_hz, "native": req.native, "memory": req.memory,
        "flush_caches": req.flush_caches,
        "reps": result.reps, "timed_s": result.timed_s, "unprofiled_s_per_rep": result.unprofiled_s,
        "slowdown": result.slowdown, "slowed": result.slowed, "cpu_s": result.cpu_s,
        "unprofiled_cpu_s_per_rep": result.unprofiled_cpu_s, "ran": result.ran, "off_cpu": result.off_cpu,
        "waited_s": result.waited_s, "unprofiled_waited_s_per_rep": result.unprofiled_waited_s,
        "waiting": result.waiting, "other_cores": result.other_cores, "shared": result.shared, "files": result.files,
        "top_ops": list(result.top_ops), "peak_mem_bytes": result.peak_mem_bytes,
        **(result.top.to_dict() if result.top else {}),
    }
    path = result.out_dir / MANIFEST
    path.write_text(json.dumps(data, indent=1))
    return path


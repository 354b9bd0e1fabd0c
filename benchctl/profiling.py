"""Profiles of one cell's timing loop: py-spy (native frames) or torch.profiler, in a child process.

py-spy records the child twice, because it cannot convert between its formats and the flame graph is
its own rendering: once as collapsed stacks (`stacks.txt`, from which the top-frames table and the
speedscope JSON are made here) and once as the flame graph SVG. Samples are sorted into the timed thunk,
the untimed setup and start-up by the marker functions the child runs them in (`profile_child`); the
tables count timed samples only, with benchctl's own frames folded away. Nothing here prints.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from benchctl.errors import BenchError

if TYPE_CHECKING:  # cells imports torch; the parsing half of this module must not need it
    from benchctl.cells import Cell

TIMED_FRAME = "benchctl_timed_thunk"
SETUP_FRAME = "benchctl_untimed_setup"
TORCH_RANGE = "benchctl.timed"
TORCH_MAX_REPS = 100  # each repetition adds every op to the Chrome trace: keep the file openable
HARNESS = "[benchctl harness]"
MANIFEST = "profile.json"
FILES = {"stacks": "stacks.txt", "flamegraph": "flamegraph.svg", "speedscope": "speedscope.json",
         "trace": "trace.json", "top_ops": "top_ops.csv"}
KEEP_ROWS = 50
# Python frames that are the harness, not the user's code: benchctl itself, `python -m`, click.
_HARNESS_FILE = re.compile(r"(^|/)(benchctl/|click/|runpy\.py$|<frozen runpy>$)")
_PY_LOCATION = re.compile(r"^(.*\.py|<[^>]*>):(\d+)$")
_PERMISSION = re.compile(r"permission denied|operation not permitted|os error (1|13)\b|ptrace", re.I)
PTRACE_HINT = ("py-spy is not permitted to read the profiled process (it needs ptrace): run as root, "
               "start the container with --cap-add SYS_PTRACE, or allow it with "
               "`sysctl -w kernel.yama.ptrace_scope=0`")

Stacks = list[tuple[list[str], int]]


@dataclass(frozen=True)
class Frame:
    function: str
    location: str  # Python file (without the line) or shared library
    native: bool
    line: int | None = None

    @property
    def key(self) -> str:
        return f"{self.function} ({self.location})" if self.location else self.function


def parse_frame(text: str) -> Frame:
    """`func (file.py:12)` or `symbol (libfoo.so)`; the location is the last parenthesis, because
    demangled C++ names contain parentheses of their own."""
    cut = text.rfind(" (")
    if not text.endswith(")") or cut < 0:
        return Frame(text, "", True)
    function, location = text[:cut], text[cut + 2 : -1]
    py = _PY_LOCATION.match(location)
    if py:
        return Frame(function, py.group(1), False, int(py.group(2)))
    if function.startswith("0x"):  # an unresolved address: merge them per library
        function = "??"
    return Frame(function, location, True)


def parse_collapsed(text: str) -> Stacks:
    """py-spy's raw format: one `frame;frame;...;leaf COUNT` line per distinct stack, root first."""
    stacks: Stacks = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rstrip().rpartition(" ")
        if not count.isdigit() or not stack:
            raise ValueError(f"line {number} is not a collapsed stack (`a;b;c COUNT`): {line[:80]!r}")
        stacks.append((stack.split(";"), int(count)))
    return stacks


def is_harness(frame: Frame) -> bool:
    return not frame.native and bool(_HARNESS_FILE.search(frame.location))


def classify(stack: list[str]) -> tuple[str, list[Frame]]:
    """(region, frames below the region's marker): timed, setup, or startup (no marker)."""
    frames = [parse_frame(f) for f in stack]
    names = [f.function for f in frames]
    for region, marker in (("timed", TIMED_FRAME), ("setup", SETUP_FRAME)):
        if marker in names:
            return region, frames[len(names) - names[::-1].index(marker):]
    return "startup", frames


@dataclass(frozen=True)
class FrameStat:
    frame: str
    function: str
    location: str
    native: bool
    samples: int
    pct: float


@dataclass(frozen=True)
class TopFrames:
    """Where the timed thunk's samples are: by self time (the leaf) and total time (on the stack)."""

    samples: dict[str, int]  # total, timed, setup, startup
    by_self: tuple[FrameStat, ...]
    by_total: tuple[FrameStat, ...]

    @staticmethod
    def from_dict(data: dict[str, Any]) -> "TopFrames":
        return TopFrames(dict(data["samples"]), tuple(FrameStat(**r) for r in data["top_self"]),
                         tuple(FrameStat(**r) for r in data["top_total"]))

    def to_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "top_self": [asdict(r) for r in self.by_self],
                "top_total": [asdict(r) for r in self.by_total]}


def top_frames(stacks: Stacks, limit: int = KEEP_ROWS) -> TopFrames:
    regions: Counter[str] = Counter({"total": 0, "timed": 0, "setup": 0, "startup": 0})
    self_n: Counter[Frame] = Counter()
    total_n: Counter[Frame] = Counter()
    harness = Frame(HARNESS, "", False)
    for stack, n in stacks:
        region, frames = classify(stack)
        regions["total"] += n
        regions[region] += n
        if region != "timed":
            continue
        # A sample whose own frame is benchctl's (the loop itself) is the harness's self time.
        self_n[harness if not frames or is_harness(frames[-1]) else frames[-1]] += n
        total_n.update({f: n for f in {f for f in frames if not is_harness(f)}})
    timed = regions["timed"]

    def rows(counts: Counter[Frame]) -> tuple[FrameStat, ...]:
        return tuple(FrameStat(f.key, f.function, f.location, f.native, c, 100.0 * c / timed)
                     for f, c in counts.most_common(limit))

    return TopFrames(dict(regions), rows(self_n), rows(total_n))


def short_name(function: str, width: int = 100) -> str:
    """A C++ name with template arguments collapsed to `<…>`, cut to `width`, for tables."""
    if not any(op in function for op in ("operator<", "operator>", "operator-")):
        out, depth = [], 0
        for ch in function:
            if ch == "<":
                out.append("<…" if depth == 0 else "")
                depth += 1
            elif ch == ">" and depth:
                depth -= 1
                out.append(">" if depth == 0 else "")
            elif depth == 0:
                out.append(ch)
        function = "".join(out)
    return function if len(function) <= width else function[: width - 1] + "…"


def speedscope(stacks: Stacks, name: str) -> dict[str, Any]:
    """speedscope's file format (a "sampled" profile, weights in samples) from collapsed stacks."""
    index: dict[str, int] = {}
    frames: list[dict[str, Any]] = []
    samples = []
    for stack, _ in stacks:
        for text in stack:
            if text not in index:
                f = parse_frame(text)
                index[text] = len(frames)
                frames.append({"name": f.function, "file": f.location, **({"line": f.line} if f.line else {})})
        samples.append([index[t] for t in stack])
    weights = [n for _, n in stacks]
    profile = {"type": "sampled", "name": name, "unit": "none", "startValue": 0, "endValue": sum(weights),
               "samples": samples, "weights": weights}
    return {"$schema": "https://www.speedscope.app/file-format-schema.json", "shared": {"frames": frames},
            "profiles": [profile], "name": name, "exporter": "benchctl"}


@dataclass(frozen=True)
class ProfileRequest:
    cell: Cell
    pass_name: str = "forward_backward"
    duration_s: float = 5.0
    rate_hz: int = 200
    native: bool = True
    memory: bool = False
    ops_dirs: tuple[str, ...] = ()


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


def default_out_dir(req: ProfileRequest, root: Path = Path("results/profiles")) -> Path:
    c = req.cell
    return root / f"{c.op}-{c.impl}-{c.device}-{req.pass_name}-{datetime.now():%Y%m%d-%H%M%S}"


def find_py_spy() -> str | None:
    """py-spy beside this Python first (a venv that is not activated), then on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("py-spy")


def child_command(req: ProfileRequest, summary: Path, torch_out: Path | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "benchctl.profile_child", "--cell", req.cell.to_json(),
           "--pass", req.pass_name, "--duration", str(req.duration_s), "--summary", str(summary)]
    for folder in req.ops_dirs:
        cmd += ["--ops-dir", str(folder)]
    if torch_out is not None:
        cmd += ["--torch-out", str(torch_out)] + (["--memory"] if req.memory else [])
    return cmd


def _run(cmd: list[str], req: ProfileRequest) -> subprocess.CompletedProcess[str]:
    try:  # generous: the child may first compile an extension
        return subprocess.run(cmd, capture_output=True, text=True, timeout=req.duration_s + 1800)
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"profile of {req.cell.label()} timed out after {exc.timeout:.0f} s") from None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


def _child_result(summary: Path, proc: subprocess.CompletedProcess[str], req: ProfileRequest) -> dict[str, Any]:
    """The child's summary, or a BenchError saying why there is none (py-spy's own error first)."""
    if _PERMISSION.search(proc.stderr) and not summary.exists():
        raise BenchError(PTRACE_HINT)
    if not summary.exists():
        raise BenchError(f"profile of {req.cell.label()} produced no result: {_last_line(proc.stderr)}")
    data = json.loads(summary.read_text())
    if data["status"] != "ok":
        raise BenchError(f"{req.cell.label()} {req.pass_name}: {data['status']}: {data['error']}")
    return data


def _record(py_spy: str, req: ProfileRequest, fmt: str, output: Path, summary: Path) -> dict[str, Any]:
    cmd = [py_spy, "record", "--format", fmt, "--rate", str(req.rate_hz), "--output", str(output)]
    cmd += ["--native"] * req.native + ["--", *child_command(req, summary)]
    proc = _run(cmd, req)
    if proc.returncode != 0:
        raise BenchError(PTRACE_HINT if _PERMISSION.search(proc.stderr) else f"py-spy failed: {_last_line(proc.stderr)}")
    data = _child_result(summary, proc, req)
    if not output.exists():
        raise BenchError(f"py-spy wrote no {fmt} output: {_last_line(proc.stderr)}")
    return data


def profile_py_spy(req: ProfileRequest, out_dir: Path) -> ProfileResult:
    py_spy = find_py_spy()
    if py_spy is None:
        raise BenchError(f"py-spy not found (looked beside {sys.executable} and on PATH): "
                         "install it with `pip install py-spy`")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = _record(py_spy, req, "raw", out_dir / FILES["stacks"], Path(tmp, "raw.json"))
        _record(py_spy, req, "flamegraph", out_dir / FILES["flamegraph"], Path(tmp, "svg.json"))
    stacks = parse_collapsed((out_dir / FILES["stacks"]).read_text())
    name = f"{req.cell.label()} {req.pass_name}"
    (out_dir / FILES["speedscope"]).write_text(json.dumps(speedscope(stacks, name)))
    files = {k: FILES[k] for k in ("stacks", "flamegraph", "speedscope")}
    result = ProfileResult(out_dir, "py-spy", data["reps"], data["timed_s"], files, top_frames(stacks))
    write_manifest(req, result)
    return result


def profile_torch(req: ProfileRequest, out_dir: Path) -> ProfileResult:
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        summary = Path(tmp, "torch.json")
        data = _child_result(summary, _run(child_command(req, summary, out_dir), req), req)
    files = {k: FILES[k] for k in ("trace", "top_ops")}
    result = ProfileResult(out_dir, "torch", data["reps"], data["timed_s"], files,
                           top_ops=tuple(data["top_ops"][:KEEP_ROWS]), peak_mem_bytes=data.get("peak_mem_bytes"))
    write_manifest(req, result)
    return result


def write_manifest(req: ProfileRequest, result: ProfileResult) -> Path:
    """profile.json: what was profiled, how, the files, and the top tables (what `report` reads)."""
    data: dict[str, Any] = {
        "schema_version": 1, "profiler": result.profiler, "created": datetime.now().isoformat(timespec="seconds"),
        "cell": json.loads(req.cell.to_json()), "label": req.cell.label(), "pass": req.pass_name,
        "duration_s": req.duration_s, "rate_hz": req.rate_hz, "native": req.native, "memory": req.memory,
        "reps": result.reps, "timed_s": result.timed_s, "files": result.files,
        "top_ops": list(result.top_ops), "peak_mem_bytes": result.peak_mem_bytes,
        **(result.top.to_dict() if result.top else {}),
    }
    path = result.out_dir / MANIFEST
    path.write_text(json.dumps(data, indent=1))
    return path


def load_profiles(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every profile.json under the given folders (for `report`), oldest first."""
    found = [p for root in paths for p in sorted(Path(root).rglob(MANIFEST))]
    return sorted((json.loads(p.read_text()) | {"dir": str(p.parent)} for p in found), key=lambda d: d["created"])

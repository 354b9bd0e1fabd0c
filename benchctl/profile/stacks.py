"""Collapsed stacks (py-spy's raw format) -> where the timed thunk's samples went.

A sample is sorted by the marker functions `profile_child` runs the loop in: the timed thunk, the
untimed setup, or start-up (imports, the first compile call). Only timed samples are tabulated, with
benchctl's own frames (the loop, `python -m`, click) folded away: by frame (self and total time),
by ATen operator (the innermost `at::_ops::<op>::call` frame on the stack), and the call path every
sample goes through, which is context rather than a place where time goes. No torch import here.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

TIMED_FRAME = "benchctl_timed_thunk"
SETUP_FRAME = "benchctl_untimed_setup"
HARNESS = "[benchctl harness]"
NO_OP = "(no ATen op)"
GENERATED = "generated code"  # the location of a frame named from a perf map (perf_map.py)
NO_OP_GENERATED = "(in generated code; its op not unwound)"  # its caller's frames are lost below it
KEEP_ROWS = 50
PATH_SHARE = 0.95  # a frame on this share of the timed samples (outside the harness) is the way in
FEW_SAMPLES = 50  # under this many samples, a 50% share's 95% interval is wider than 37-63%
_HARNESS_FILE = re.compile(r"(^|/)(benchctl/|click/|runpy\.py$|<frozen runpy>$)")
_PY_LOCATION = re.compile(r"^(.*\.py|<[^>]*>):(\d+)$")
ATEN_OP = re.compile(r"^at::_ops::(\w+)::call$")  # an ATen operator's dispatch frame, the op its group
_HINT_SKIP = {"lambda", "operator", "Tensor", "decltype"}
# OpenMP's runtime library (GNU's, Intel's, LLVM's; a wheel's vendored copy carries a hash: libgomp-a34b3233.so.1).
# py-spy samples only threads that run Python (py-spy issue 332): torch's other intra-op threads go unseen, and the
# sampled thread's time in the runtime is its wait for them at the end of each parallel region.
OPENMP_RUNTIME = re.compile(r"^lib(gomp|iomp5|omp)[-.]")
OPENMP_WAIT = 0.10  # a share of the timed samples in that runtime worth saying so under the tables

Stacks = list[tuple[list[str], int]]


@dataclass(frozen=True)
class Frame:
    function: str
    location: str  # Python file (without the line) or shared library
    native: bool
    line: int | None = field(default=None, compare=False)  # frames are counted per function, not line

    @property
    def key(self) -> str:
        return f"{self.function} ({self.location})" if self.location else self.function


@lru_cache(maxsize=1 << 16)  # a profile names each frame on many stacks: a 20,000-stack one parsed 4.6 s without
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
    if function.startswith("0x"):  # an address without a symbol: merge them per library, as perf does
        function = "[unknown]"
    return Frame(function, location, True)


def parse_collapsed(text: str) -> Stacks:
    """One `frame;frame;...;leaf COUNT` line per distinct stack, root first."""
    stacks: Stacks = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rstrip().rpartition(" ")
        if not count.isdigit() or not stack:
            raise ValueError(f"line {number} is not a collapsed stack (`a;b;c COUNT`): {line[:80]!r}")
        stacks.append((stack.split(";"), int(count)))
    return stacks


def collapsed(stacks: Stacks) -> str:
    """Stacks as collapsed-stack lines (`a;b;c 12`, root first), the format flame graph tools read."""
    return "".join(f"{';'.join(stack)} {n}\n" for stack, n in stacks)


@lru_cache(maxsize=1 << 16)
def is_harness(frame: Frame) -> bool:
    return not frame.native and bool(_HARNESS_FILE.search(frame.location))


def own(frames: list[Frame]) -> list[Frame]:
    """The frames that are the loop's own, benchctl's folded away: those the tables and the flame graph count."""
    return [f for f in frames if not is_harness(f)]


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
    pct: float  # of the timed samples


@dataclass(frozen=True)
class OpStat:
    op: str
    self_samples: int
    self_pct: float
    total_samples: int
    total_pct: float


@dataclass(frozen=True)
class TopFrames:
    samples: dict[str, int]  # total, timed, setup, startup
    by_self: tuple[FrameStat, ...]
    by_total: tuple[FrameStat, ...]  # without the frames of `path`
    by_op: tuple[OpStat, ...]
    path: tuple[FrameStat, ...] = ()  # outermost first

    @staticmethod
    def from_dict(data: dict[str, Any]) -> "TopFrames":
        def frames(key: str) -> tuple[FrameStat, ...]:
            return tuple(FrameStat(**r) for r in data.get(key, ()))

        ops = tuple(OpStat(**r) for r in data.get("top_ops_sampled", ()))
        return TopFrames(dict(data["samples"]), frames("top_self"), frames("top_total"), ops, frames("path"))

    def to_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "top_self": [asdict(r) for r in self.by_self],
                "top_total": [asdict(r) for r in self.by_total],
                "top_ops_sampled": [asdict(r) for r in self.by_op], "path": [asdict(r) for r in self.path]}


class _Tally:
    """Sample counts per region, and per frame and ATen op for the timed samples."""

    def __init__(self) -> None:
        self.regions: Counter[str] = Counter({"total": 0, "timed": 0, "setup": 0, "startup": 0})
        self.self_n: Counter[Frame] = Counter()
        self.total_n: Counter[Frame] = Counter()
        self.op_self: Counter[str] = Counter()
        self.op_total: Counter[str] = Counter()
        self.first: list[Frame] = []

    def add(self, stack: list[str], n: int) -> None:
        region, frames = classify(stack)
        self.regions["total"] += n
        self.regions[region] += n
        if region != "timed":
            return
        kept = own(frames)
        self.first = self.first or kept
        # A sample whose own frame is benchctl's (the loop itself) is the harness's self time.
        self.self_n[Frame(HARNESS, "", False) if not kept or is_harness(frames[-1]) else frames[-1]] += n
        self.total_n.update(dict.fromkeys(set(kept), n))  # once per sample, even when recursive
        ops = [m.group(1) for f in kept if (m := ATEN_OP.match(f.function))]
        no_op = NO_OP_GENERATED if frames and frames[-1].location == GENERATED else NO_OP
        self.op_self[ops[-1] if ops else no_op] += n
        self.op_total.update(dict.fromkeys(set(ops) or {no_op}, n))


def top_frames(stacks: Stacks, limit: int = KEEP_ROWS) -> TopFrames:
    tally = _Tally()
    for stack, n in stacks:
        tally.add(stack, n)
    timed = tally.regions["timed"]
    pct = (lambda c: 100.0 * c / timed) if timed else (lambda c: 0.0)
    outside = timed - tally.self_n[Frame(HARNESS, "", False)]
    path = []
    for f in tally.first:  # the longest prefix of the first sample's stack that (nearly) every sample shares
        if tally.total_n[f] < PATH_SHARE * outside:
            break
        path.append(f)

    def rows(counts: Counter[Frame], skip: list[Frame]) -> tuple[FrameStat, ...]:
        top = [(f, c) for f, c in counts.most_common(limit + len(skip)) if f not in skip][:limit]
        return tuple(FrameStat(f.key, f.function, f.location, f.native, c, pct(c)) for f, c in top)

    # By total, and every op on a stack rather than only innermost ones: an op at 0% self and 60% total
    # (slice_backward around the zero-fill it calls) is often the answer.
    names = sorted(tally.op_total, key=lambda op: (-tally.op_total[op], -tally.op_self[op], op))[:limit]
    ops = tuple(OpStat(op, tally.op_self[op], pct(tally.op_self[op]), tally.op_total[op],
                       pct(tally.op_total[op])) for op in names)
    path_rows = tuple(FrameStat(f.key, f.function, f.location, f.native, tally.total_n[f],
                                pct(tally.total_n[f])) for f in path)
    return TopFrames(dict(tally.regions), rows(tally.self_n, []), rows(tally.total_n, path), ops, path_rows)


def in_openmp(top: TopFrames) -> tuple[int, str]:
    """The timed samples whose own frame is in OpenMP's runtime (`OPENMP_RUNTIME`), among the top frames by self time,
    and the libraries they were in."""
    found = [r for r in top.by_self if r.native and OPENMP_RUNTIME.match(r.location)]
    return sum(r.samples for r in found), ", ".join(dict.fromkeys(r.location for r in found))


def share_interval(count: int, timed: int) -> tuple[float, float]:
    """The 95% interval, in percent, of the loop's share in a frame that `count` of `timed` samples were in: a
    binomial's (Wilson's), as py-spy spaces its samples at random. 30 of 100 is 21.9-39.6%, 300 of 1000 27.2-32.9%."""
    from scipy.stats import binomtest

    ci = binomtest(count, timed).proportion_ci(0.95, method="wilson")
    return 100.0 * float(ci.low), 100.0 * float(ci.high)


def _hint(template_args: str) -> str:
    """The first function named inside template arguments: the kernel a generic wrapper runs."""
    names = [n for n in re.findall(r"(\w+)\(", template_args) if n not in _HINT_SKIP]
    return names[0] if names else ""


def short_name(function: str, width: int = 100) -> str:
    """Template arguments collapsed to `<…>` (or `<…kernel…>` naming what they wrap), cut to `width`."""
    if not any(op in function for op in ("operator<", "operator>", "operator-")):
        out, depth, args = [], 0, []
        for ch in function:
            if ch == ">" and depth:
                depth -= 1
                if depth == 0:
                    hint = _hint("".join(args))
                    out.append(f"<…{hint}…>" if hint else "<…>")
                    continue
            if depth:
                args.append(ch)
            elif ch != "<":
                out.append(ch)
            if ch == "<":
                args = [] if depth == 0 else args
                depth += 1
        function = "".join(out)
    return function if len(function) <= width else function[: width - 1] + "…"


def speedscope(stacks: Stacks, name: str) -> dict[str, Any]:
    """speedscope's file format (one "sampled" profile, weights in samples) from collapsed stacks."""
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

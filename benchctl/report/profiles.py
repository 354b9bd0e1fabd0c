"""The profiles of a report's operators: `benchctl profile`'s folders under `<root>/profiles`, one entry
each with what took the most time and its files. The manifest is read as the JSON it is (the profiler
is a job beside this one, not below it); no torch."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection

from benchctl.analysis.timed_alike import FLUSHED
from benchctl.results import storage

TOP = 3  # operators named per profile
# The manifest's `files` keys worth a link (profile/profilers.py's FILES), and what the link says.
FILE_ROLES = {"flamegraph": "flame graph", "speedscope": "speedscope", "trace": "Chrome trace"}


@dataclass(frozen=True)
class ProfileEntry:
    label: str  # the cell
    pass_name: str  # with how its repetitions started where they started on cold caches
    profiler: str
    created: str
    top: str  # the operators with the most self time, with their shares
    slowdown: float | None = None  # a profiled repetition over one alone
    slowed: bool = False  # enough that the shares may be bent
    off_cpu: float | None = None  # the share of a profiled repetition its thread was held off the CPU
    shared: bool = False  # profiled while other work kept a core busy
    files: dict[str, Path] = field(default_factory=dict)  # what FILE_ROLES names -> path, the manifest last

    @property
    def cost(self) -> str:
        if self.slowdown is None:
            return ""
        off = "" if self.off_cpu is None else f", {self.off_cpu:.0%} of it off the CPU"
        doubts = [d for d, said in (("shares may be bent", self.slowed), ("shared the machine", self.shared)) if said]
        return f"{self.slowdown:.1f}x{off}" + (f" ({'; '.join(doubts)})" if doubts else "")


def _top(data: dict[str, Any]) -> str:
    """py-spy's ATen operators by self share, or the torch profiler's operators by self time (on a GPU, by the
    time of the kernels they launched: its kernels' rows, which share that time, are left to the files)."""
    sampled = sorted(data.get("top_ops_sampled") or [], key=lambda r: -r["self_pct"])
    timed = [r for r in data.get("top_ops") or [] if not r.get("device")]
    rows = [(r["op"], r["self_pct"]) for r in sampled] or [(r["name"], r["pct"]) for r in timed]
    return ", ".join(f"{name} {pct:.0f}%" for name, pct in rows[:TOP])


def _pass(data: dict[str, Any]) -> str:
    """The pass profiled, and `caches flushed` (GPU: `L2 flushed`) where each repetition started cold."""
    flushed = FLUSHED[data["cell"]["device"]] if data.get("flush_caches") else ""
    return str(data["pass"]) + (f", {flushed}" if flushed else "")


def entry(manifest: Path, ops: Collection[str]) -> ProfileEntry | None:
    """One profile of one of `ops` from its manifest; None for another operator's, or for a file that is
    not a manifest (unreadable, or another format)."""
    try:
        data = json.loads(manifest.read_text())
        if data["cell"]["op"] not in ops:
            return None
        files = {FILE_ROLES[role]: manifest.parent / name for role, name in data.get("files", {}).items()
                 if role in FILE_ROLES}
        return ProfileEntry(str(data["label"]), _pass(data), str(data["profiler"]), str(data["created"]),
                            _top(data), data.get("slowdown"), bool(data.get("slowed")), data.get("off_cpu"),
                            bool(data.get("shared")), {**files, storage.PROFILE_MANIFEST: manifest})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def find(root: Path, ops: Collection[str]) -> list[ProfileEntry]:
    """The readable profiles under `root/profiles` of the operators `ops`, newest first."""
    manifests = Path(root, storage.PROFILES_DIR).glob(f"*/{storage.PROFILE_MANIFEST}")
    found = [p for p in (entry(m, ops) for m in manifests) if p is not None]
    return sorted(found, key=lambda p: p.created, reverse=True)

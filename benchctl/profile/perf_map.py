"""Names for code generated at run time, from the profiled child's perf map.

oneDNN, behind PyTorch's CPU convolutions, layout reorders and some matmuls, writes its kernels at run
time into anonymous memory: no file, no symbols, no unwind tables. py-spy can only print their addresses
(`0x7f… (?)`), and on a CPU profile of a convolution they were most of the timed samples. Asked to
(`ONEDNN_JIT_PROFILE` with its Linux perf bit), oneDNN lists each kernel it generates, start, size and
name, in `/tmp/perf-<pid>.map`, Linux perf's convention for JIT code. The profiled child is started with
that bit set (it costs one line written per kernel generated, before the profiled loop), and its map
names those addresses here: `jit_avx512_common_conv_bwd_data_kernel_f32 (generated code)`. No torch.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass
from pathlib import Path

from benchctl.profile.stacks import GENERATED, Stacks

JIT_PROFILE = "ONEDNN_JIT_PROFILE"
LINUX_PERF_MAP = 2  # JIT_PROFILE's bit for a perf map (1 is VTune, 4 perf's jitdump)
_ADDRESS = re.compile(r"0x([0-9a-f]+) \([^()]*\)")  # py-spy's frame for an address it has no symbol for
_HEX = re.compile(r"(0x)?[0-9a-fA-F]+")
_SERIAL = re.compile(r"\.\d+$")  # oneDNN numbers each kernel it generates: one name per kind of kernel


def child_env() -> dict[str, str]:
    """The variable that has oneDNN write its perf map, kept with any other bits the user set."""
    now = os.environ.get(JIT_PROFILE, "0")
    bits = int(now) if now.isdigit() else 0
    return {JIT_PROFILE: str(bits | LINUX_PERF_MAP)}


def path_for(pid: int) -> Path:
    return Path(f"/tmp/perf-{pid}.map")


@dataclass(frozen=True)
class JitSymbols:
    starts: tuple[int, ...] = ()  # ascending
    ends: tuple[int, ...] = ()
    names: tuple[str, ...] = ()

    def name(self, address: int) -> str | None:
        i = bisect.bisect_right(self.starts, address) - 1
        return self.names[i] if i >= 0 and address < self.ends[i] else None


def parse(text: str) -> JitSymbols:
    """`START SIZE NAME` per line, both numbers in hex, as perf reads them; other lines are skipped."""
    spans = []
    for line in text.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and all(_HEX.fullmatch(p) for p in parts[:2]):
            start, size = int(parts[0], 16), int(parts[1], 16)
            spans.append((start, start + size, _SERIAL.sub("", parts[2].strip())))
    spans.sort()
    return JitSymbols(*(tuple(column) for column in zip(*spans))) if spans else JitSymbols()


def take(pid: int) -> JitSymbols:
    """The child's perf map, read and then removed (it is the child's, and /tmp is shared)."""
    path = path_for(pid)
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return JitSymbols()
    path.unlink(missing_ok=True)
    return parse(text)


def _named(symbols: JitSymbols, text: str) -> str:
    """`text` with each address the map names replaced by `NAME (generated code)`."""
    def one(match: re.Match[str]) -> str:
        name = symbols.name(int(match.group(1), 16))
        return f"{name} ({GENERATED})" if name else match.group(0)

    return _ADDRESS.sub(one, text)


def name_stacks(stacks: Stacks, symbols: JitSymbols) -> Stacks:
    if not symbols.starts:
        return stacks
    return [([_named(symbols, frame) if frame.startswith("0x") else frame for frame in stack], n)
            for stack, n in stacks]


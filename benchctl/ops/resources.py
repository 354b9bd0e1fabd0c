"""What each CUDA kernel of a built library asks of an SM, per architecture, as ptxas reports it: registers,
spilled bytes, stack frame, shared memory and barriers, with the share of the SM's warps its registers
leave room for. These hold a kernel back before it ever runs (a spill is a trip to local memory in the
inner loop; 64 registers a thread leave room for half of an H100's warps), and they are known on a
machine without a GPU.

ptxas reports them only while it compiles, and torch's build keeps the compiler's output only when the
build fails, so the library's `.cu` sources are compiled once more, with the exact command line of its
build (read from the build.ninja torch wrote into the cache folder) and nvcc's `--resource-usage`.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchctl.errors import BenchError
from benchctl.ops.library import Library

REGISTERS_PER_SM = 65536  # every architecture from sm_70 to sm_120
REGISTER_UNIT = 256  # registers are given to a warp in blocks of 256
MAX_WARPS = {"sm_70": 64, "sm_75": 32, "sm_80": 64, "sm_86": 48, "sm_87": 48, "sm_89": 48, "sm_90": 64,
             "sm_100": 64, "sm_120": 48}  # resident warps per SM (CUDA C Programming Guide, compute capabilities)
# Where a kernel's block size is known (a Triton kernel's num_warps), whole blocks count, and these limit them
# too: resident blocks per SM, and the shared memory an SM has (KiB), of which each block reserves 1 KiB.
MAX_BLOCKS = {"sm_70": 32, "sm_75": 16, "sm_80": 32, "sm_86": 16, "sm_87": 16, "sm_89": 24, "sm_90": 32}
SHARED_PER_SM_KIB = {"sm_70": 96, "sm_75": 64, "sm_80": 164, "sm_86": 100, "sm_87": 164, "sm_89": 100, "sm_90": 228}
BLOCK_RESERVED_SHARED = 1024

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SHARED = re.compile(r"(\d+) bytes smem")


@dataclass(frozen=True)
class KernelResources:
    kernel: str  # as compiled (mangled); `names` makes them readable
    arch: str  # sm_90
    registers: int
    spill_stores: int  # bytes a thread writes to local memory for want of registers
    spill_loads: int
    stack: int  # bytes of stack frame a thread
    shared: int  # bytes of shared memory a block: static (CUDA, ptxas) or what it is launched with (Triton)
    barriers: int
    warps_per_block: int = 0  # known for a Triton kernel (num_warps); 0: unknown (ptxas does not see the launch)

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0

    def occupancy_limit(self) -> float | None:
        """The share of the SM's warps that can be resident: by registers alone where the block size is unknown
        (a CUDA kernel: block size and shared memory lower it further), in whole blocks where it is known, also
        limited by blocks per SM and shared memory; None for an architecture not in MAX_WARPS."""
        most = MAX_WARPS.get(self.arch)
        if most is None:
            return None
        per_warp = -(-self.registers * 32 // REGISTER_UNIT) * REGISTER_UNIT
        by_registers = min(most, REGISTERS_PER_SM // max(per_warp, 1))
        block = self.warps_per_block
        if not block or self.arch not in MAX_BLOCKS:
            return by_registers / most
        by_shared = SHARED_PER_SM_KIB[self.arch] * 1024 // (self.shared + BLOCK_RESERVED_SHARED)
        return min(MAX_BLOCKS[self.arch], by_registers // block, by_shared) * block / most


def parse(text: str) -> list[KernelResources]:
    """Every entry function in `nvcc --resource-usage` output, in the order ptxas compiled them."""
    found: list[KernelResources] = []
    entry: tuple[str, str] | None = None
    frame = (0, 0, 0)
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            entry, frame = (m.group(1), m.group(2)), (0, 0, 0)
        elif (m := _FRAME.search(line)) and entry:
            frame = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        elif (m := _USED.search(line)) and entry:
            stack, stores, loads = frame
            found.append(KernelResources(entry[0], entry[1], int(m.group(1)), stores, loads, stack,
                                         _number(_SHARED, line), _number(_BARRIERS, line)))
            entry = None
    return found


def _number(pattern: re.Pattern, line: str) -> int:
    m = pattern.search(line)
    return int(m.group(1)) if m else 0


def names(kernels: list[str]) -> dict[str, str]:
    """Mangled -> short readable name (`backward_k_kernel<float, 5, 3>`), by c++filt where it is installed."""
    tool = shutil.which("c++filt")
    if not tool or not kernels:
        return {k: k for k in kernels}
    out = subprocess.run([tool], input="\n".join(kernels), capture_output=True, text=True).stdout.splitlines()
    return {k: short(d) for k, d in zip(kernels, out)} if len(out) == len(kernels) else {k: k for k in kernels}


def short(demangled: str) -> str:
    """The function's name and template arguments: no return type, namespaces or parameter list."""
    text = demangled.replace("(anonymous namespace)::", "").removeprefix("void ")
    depth = 0
    for i, ch in enumerate(text):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "(" and depth == 0:
            text = text[:i]
            break
    base, sep, args = text.partition("<")
    return base.rsplit("::", 1)[-1] + sep + args


def of_library(lib: Library) -> list[KernelResources]:
    """The kernels of a built CUDA library, compiled again with its build's command and --resource-usage."""
    if lib.kind != "cuda":
        raise BenchError(f"{lib.name} has no CUDA kernels")
    return of_build(lib.build_dir, [s for s in lib.sources if s.suffix == ".cu"], lib.name)


def of_build(folder: Path, sources: list[Path], name: str) -> list[KernelResources]:
    """The kernels of `sources`, compiled with the CUDA command line of the torch build in `folder`."""
    ninja = folder / "build.ninja"
    if not ninja.is_file():
        raise BenchError(f"{name} is not built: run `benchctl build --cuda` first")
    settings = _variables(ninja.read_text())
    command = [settings["nvcc"], *shlex.split(settings.get("cuda_cflags", "")),
               *shlex.split(settings.get("cuda_post_cflags", "")), "--resource-usage"]
    found: list[KernelResources] = []
    with tempfile.TemporaryDirectory() as tmp:
        for source in sources:
            run = subprocess.run([*command, "-c", str(source), "-o", str(Path(tmp) / "kernels.o")],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                raise BenchError(f"compiling {source.name} for its resource usage failed: "
                                 f"{(run.stderr.strip().splitlines() or ['no output'])[-1]}")
            found += parse(run.stderr + run.stdout)
    return found


def _variables(text: str) -> dict[str, str]:
    """The top-level `name = value` lines of a ninja file."""
    pairs = (line.split(" = ", 1) for line in text.splitlines() if " = " in line and not line.startswith(" "))
    return {name.strip(): value.strip() for name, value in pairs}

"""One declaration for an operator's compiled extension, and everything done with it.

An operator's ext.py declares `EXT = Extension("name", register=..., anchor="op")`; its sources sit in a
folder of their own: `extensions/<name>/` for benchctl's operators, or any folder next to a user's operator
file (`sources=Path(__file__).parent / "my_op"`). `*.cpp` make the CPU library, which defines the op
schemas (TORCH_LIBRARY); `*.cu` the CUDA library, whose kernels attach to them (TORCH_LIBRARY_IMPL).
The declaration gives the implementation hooks: `requires` (why it cannot run here, without compiling),
`build`/`load` (compile once into the cache, load, then register the Python-side kernels once), and
`prepare` (load in the process that times the calls).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from benchctl.ops import build


def _kind(device: str) -> str:
    return "cuda" if torch.device(device).type == "cuda" else "cpu"


_DECLARED: dict[str, "Extension"] = {}


def declared() -> dict[str, "Extension"]:
    """Every extension the operators loaded so far declared, by name (`benchctl build` builds them)."""
    return dict(_DECLARED)


@dataclass(frozen=True)
class Extension:
    name: str  # the library names derive from it: benchctl_<name>_cpu, benchctl_<name>_cuda
    # fake (meta) and autograd kernels, registered from Python with torch.library once per process
    register: Callable[[], None] | None = None
    anchor: str = ""  # an op the library defines, in `namespace`: it carries the "registered" flag
    namespace: str = "benchctl"
    sources: Path | None = None  # the folder of the .cpp/.cu files; default extensions/<name>

    def __post_init__(self) -> None:
        _DECLARED[self.name] = self

    @property
    def folder(self) -> Path:
        return self.sources or build.EXTENSIONS_DIR / self.name

    def requires(self, device: str) -> str | None:
        """Why the extension cannot run on `device`, without compiling anything (None: built or buildable)."""
        # The CUDA library's availability includes the CPU library's (it holds the schemas).
        return build.availability(self.folder.name, _kind(device), self.folder.parent)

    def load(self, device: str) -> float:
        """Build if needed and load the libraries for `device`, then register the Python kernels once;
        the seconds it took. The CPU library always loads first: it defines the op schemas."""
        seconds = build.ensure_loaded(self.folder.name, "cpu", self.folder.parent)
        if _kind(device) == "cuda":
            seconds += build.ensure_loaded(self.folder.name, "cuda", self.folder.parent)
        if self.register is not None:
            self._register_once()
        return seconds

    def prepare(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """An implementation's `prepare` hook: loads the library on the inputs' device, in the process
        that times the calls (untimed, once); the inputs are unchanged."""
        device = next((v.device.type for v in inputs.values() if isinstance(v, torch.Tensor)), "cpu")
        self.load(device)
        return inputs

    def _register_once(self) -> None:
        """The flag lives on torch's op object, which torch keeps for the whole process, so a second import
        of an operator module (under another name, from a test) does not register twice, which
        torch.library refuses."""
        packet = getattr(getattr(torch.ops, self.namespace), self.anchor)
        if getattr(packet, "_benchctl_python_kernels", False):
            return
        self.register()
        packet._benchctl_python_kernels = True

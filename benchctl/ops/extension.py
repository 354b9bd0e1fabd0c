"""One declaration for an operator's compiled extension, and everything done with it.

An operator's file declares `EXT = Extension("name", register=..., anchor="op")`; its sources sit in a
folder of their own: `extensions/<name>/` for benchctl's operators, or any folder next to a user's operator
file (`sources=Path(__file__).parent / "my_op"`). Two forms:

- custom ops (the default): `*.cpp` make the CPU library, which defines the op schemas (TORCH_LIBRARY);
  `*.cu` the CUDA library, whose kernels attach to them (TORCH_LIBRARY_IMPL). Implementations call
  `torch.ops.<namespace>.<op>`.
- a pybind11 module (`python_module=True`, `PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)`): the CPU module is
  the `*.cpp` files, the CUDA module every `*.cpp` and `*.cu`; implementations call functions of
  `EXT.module(device)`, usually inside their own `torch.autograd.Function`.

The declaration gives the implementation hooks: `requires` (why it cannot run here, without compiling),
`build` (compile into the cache and try a load, in a child process), `load` (build if needed and load in
this process, then register the Python-side kernels once) and `prepare` (load in the process that times
the calls). Build options (flags, include folders, defines) are part of the cache key.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping, Sequence

import torch

from benchctl.ops import build
from benchctl.ops.library import BuildOptions, Library

OPS_PACKAGE = "benchctl_ops."  # the package registry.py imports operator files into
FLOATING_TYPES = ("float32", "float64")  # the dtypes ATen's AT_DISPATCH_FLOATING_TYPES dispatches a kernel for


def _kind(device: str) -> str:
    return "cuda" if torch.device(device).type == "cuda" else "cpu"


_DECLARED: dict[str, "Extension"] = {}
_MODULES: dict[tuple[str, str, str], ModuleType] = {}


def declared() -> dict[str, "Extension"]:
    """Every extension the operators loaded so far declared, by library stem (`benchctl build` builds them)."""
    return dict(_DECLARED)


def import_as(name: str, file: Path) -> ModuleType:
    """Import `file` as the module `name` (once per process): the module a C++ library's
    `m.set_python_module(name)` says its fake kernels are registered from. torch compares that name with
    the module whose code calls `torch.library.register_fake`, so the registrations go in `file`. Name
    the file with a leading `_` so that benchctl does not take it for an operator file."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def behind(impl: Any) -> "Extension | None":
    """The Extension whose hooks an implementation was declared with (build=EXT.load, prepare=...)."""
    for hook in (impl.build, impl.prepare, impl.requires):
        owner = getattr(hook, "__self__", None)
        if isinstance(owner, Extension):
            return owner
    return None


def isolated_build(impl: Any) -> Callable[[str], float] | None:
    """The build hook to call from benchctl's own process: an Extension's builds in a child process
    (whether the implementation named EXT.build or EXT.load); any other hook is called as it is."""
    owner = _builder(impl)
    return owner.build if owner is not None else impl.build


def built_before(impl: Any, device: str) -> bool:
    """Whether the implementation's build hook is an Extension's whose library for `device` is in the cache and
    loaded there before, unchanged since (isolated.proven): building it is only a look at the cache."""
    owner = _builder(impl)
    if owner is None:
        return False
    from benchctl.ops import isolated

    return isolated.proven(owner.library(_kind(device)))


def _builder(impl: Any) -> "Extension | None":
    """The Extension whose EXT.build or EXT.load is the implementation's build hook."""
    owner = getattr(impl.build, "__self__", None)
    return owner if isinstance(owner, Extension) else None


def _declaring_operator(depth: int = 2) -> str:
    """The operator whose file declares an Extension: the module registry.py imported it as
    (`benchctl_ops.<operator>` or `benchctl_ops.<operator>.ext`); "" elsewhere."""
    module = sys._getframe(depth).f_globals.get("__name__", "")
    return module.removeprefix(OPS_PACKAGE).split(".")[0] if module.startswith(OPS_PACKAGE) else ""


@dataclass(frozen=True)
class Extension:
    name: str  # the library names derive from it: benchctl_<name>_cpu (benchctl_<operator>_<name>_cpu)
    # The Python side of the ops, registered with torch.library once per process: op name -> fake (meta)
    # kernel, op name -> (backward, setup_context), and anything else in a function of your own.
    fakes: Mapping[str, Callable] = field(default_factory=dict, compare=False)
    autograd: Mapping[str, tuple[Callable, Callable]] = field(default_factory=dict, compare=False)
    register: Callable[[], None] | None = None
    anchor: str = ""  # an op the library defines, in `namespace`: it carries the "registered" flag (default:
    # the first op of `fakes` or `autograd`)
    namespace: str = "benchctl"
    sources: Path | None = None  # the folder of the .cpp/.cu files (and subfolders); default extensions/<name>
    python_module: bool = False  # a pybind11 module instead of custom ops
    extra_cflags: Sequence[str] = ()
    extra_cuda_cflags: Sequence[str] = ()
    extra_ldflags: Sequence[str] = ()
    include_dirs: Sequence[str | Path] = ()  # absolute, or relative to the source folder
    defines: Sequence[str] = ()  # "NAME" or "NAME=VALUE"
    operator: str = field(default_factory=_declaring_operator)

    def __post_init__(self) -> None:
        for name in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "include_dirs", "defines"):
            object.__setattr__(self, name, tuple(str(v) for v in getattr(self, name)))
        _DECLARED[self.stem] = self

    @property
    def stem(self) -> str:
        """`<name>`, or `<operator>_<name>` when an operator names its extension otherwise."""
        return self.name if self.operator in ("", self.name) else f"{self.operator}_{self.name}"

    @property
    def folder(self) -> Path:
        return self.sources or build.EXTENSIONS_DIR / self.name

    @property
    def options(self) -> BuildOptions:
        return BuildOptions(tuple(self.extra_cflags), tuple(self.extra_cuda_cflags), tuple(self.extra_ldflags),
                            tuple(self.include_dirs), tuple(self.defines), self.python_module)

    def library(self, kind: str) -> Library:
        """The library of `kind` ("cpu" or "cuda"); BuildError when the folder has no sources for it."""
        return build.library(self.folder.name, kind, self.folder.parent, self.options, self.stem)

    def requires(self, device: str) -> str | None:
        """Why the extension cannot run on `device`, without compiling anything (None: built or buildable)."""
        # The CUDA library's availability includes the CPU library's (it holds the schemas).
        try:
            return build.library_availability(self.library(_kind(device)))
        except build.BuildError as exc:
            return exc.summary

    def build(self, device: str) -> float:
        """Compile what `device` needs into the cache and load it once, in a child process (a library that
        aborts the process that loads it cannot end this one); the seconds it took. Raises BuildError."""
        from benchctl.ops import isolated

        return isolated.build_library(self.library(_kind(device))).seconds

    def load(self, device: str) -> float:
        """Build if needed and load the libraries for `device` in this process, then register the Python
        kernels once; the seconds it took. The CUDA library loads its CPU library first (the op schemas)."""
        seconds = build.build_library(self.library(_kind(device))).seconds
        if self.register is not None or self.fakes or self.autograd:
            self._register_once()
        return seconds

    def module(self, device: str = "cpu") -> ModuleType:
        """The loaded pybind11 module for `device` (`python_module=True`), built and loaded if needed."""
        if not self.python_module:
            raise TypeError(f"extension {self.name} declares custom ops, not a pybind11 module: "
                            f"call torch.ops.{self.namespace}.<op>")
        key = (self.stem, str(self.folder), _kind(device))
        if key not in _MODULES:  # once per process: implementations call this inside the timed loop
            _MODULES[key] = build.python_module(self.library(_kind(device)))
        return _MODULES[key]

    def prepare(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """An implementation's `prepare` hook: loads the library on the inputs' device, in the process
        that times the calls (untimed, once); the inputs are unchanged."""
        device = next((v.device.type for v in inputs.values() if isinstance(v, torch.Tensor)), "cpu")
        self.load(device)
        return inputs

    def implementations(self, op: Any, prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                        opcheck: Callable[[Any], None] | None = None,
                        dtypes: Sequence[str] = ()) -> Callable[[Callable], Callable]:
        """A decorator: the function is `op`'s `cpp` implementation on the CPU and its `cuda` one on CUDA (its
        ops dispatch by the inputs' device to the library's .cpp or .cu kernels), with this extension's
        `requires` and `build` hooks, and `prepare` (the extension's own unless given), `opcheck` and `dtypes`
        (those its kernels dispatch for: FLOATING_TYPES for `AT_DISPATCH_FLOATING_TYPES`)."""
        hooks = {"requires": self.requires, "build": self.build, "prepare": prepare or self.prepare,
                 "opcheck": opcheck, "dtypes": dtypes}

        def register(fn: Callable) -> Callable:
            op.implementation("cpp", devices=("cpu",), **hooks)(fn)
            return op.implementation("cuda", devices=("cuda",), **hooks)(fn)

        return register

    def qualname(self, op: str) -> str:
        """`namespace::op`, the name torch.library's functions take (register_fake, register_autograd)."""
        return f"{self.namespace}::{op}"

    def op(self, op: str) -> Any:
        """The loaded library's `torch.ops.<namespace>.<op>.default` (no overload lookup when called)."""
        return getattr(getattr(torch.ops, self.namespace), op).default

    def _register_once(self) -> None:
        """The flag lives on torch's op object, which torch keeps for the whole process, so a second import
        of an operator module (under another name, from a test) does not register twice, which
        torch.library refuses."""
        packet = getattr(getattr(torch.ops, self.namespace), self.anchor or next(iter({**self.fakes, **self.autograd})))
        if getattr(packet, "_benchctl_python_kernels", False):
            return
        for op, fake in self.fakes.items():
            torch.library.register_fake(self.qualname(op))(fake)
        for op, (backward, setup_context) in self.autograd.items():
            torch.library.register_autograd(self.qualname(op), backward, setup_context=setup_context)
        if self.register is not None:
            self.register()
        packet._benchctl_python_kernels = True

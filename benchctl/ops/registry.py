"""Operators and their implementations: declared once, registered explicitly, discovered from folders.

An operator lives in one file (or package) that builds an `Operator` and calls `register(op)`;
implementations attach to it with the `@op.implementation(...)` decorator. A missing extension or
device makes an implementation unavailable *with a reason*; it never breaks import.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch

from benchctl.ops import import_errors, param_rules, paths, triton_support
from benchctl.vocab import DEVICES, Device

BUILTIN_OPS_DIR = paths.IMPLEMENTATIONS_DIR
OPS_PATH_ENV = "BENCHCTL_OPS_PATH"

Inputs = dict[str, torch.Tensor]
Output = torch.Tensor | tuple[torch.Tensor, ...] | list[torch.Tensor]


@dataclass(frozen=True)
class Case:
    """Everything an input factory needs: the operator's params, dtype, device and a seed."""

    params: Mapping[str, Any]
    dtype: torch.dtype = torch.float32
    device: str = "cpu"
    seed: int = 0

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed)


def call_with_inputs(fn: Callable[..., Output], inputs: Inputs) -> Output:
    """The default call: the implementation takes the inputs as keyword arguments."""
    return fn(**inputs)


@dataclass(frozen=True)
class Target:
    """One thing to time for an operator: how to build its inputs and how to call an implementation.

    `call(fn, inputs)` returns the output (by default `fn(**inputs)`); inputs that require grad are the ones whose gradients
    are checked and timed. `flops(params)` and `bytes(params, itemsize)` count one forward call
    (minimum traffic: each input read once, each output written once); `bwd_*` count one backward.
    `writes` names the inputs a call writes its result into (`out=` buffers): their contents may change, and an
    output may be their storage (measure/tamper.py judges the others).
    """

    name: str
    make_inputs: Callable[[Case], Inputs]
    call: Callable[[Callable[..., Output], Inputs], Output] = call_with_inputs
    flops: Callable[[Mapping[str, Any]], float] = lambda p: 0.0
    bytes: Callable[[Mapping[str, Any], int], float] = lambda p, itemsize: 0.0
    bwd_flops: Callable[[Mapping[str, Any]], float] = lambda p: 0.0
    bwd_bytes: Callable[[Mapping[str, Any], int], float] = lambda p, itemsize: 0.0
    writes: tuple[str, ...] = ()


def _same_definition(old: Callable[..., Any], new: Callable[..., Any]) -> bool:
    """`new` is `old`'s own definition run again (its module reloaded): it replaces it, no clash."""
    where = lambda f: (f.__module__, f.__qualname__, f.__code__.co_filename, f.__code__.co_firstlineno)  # noqa: E731
    return hasattr(old, "__code__") and hasattr(new, "__code__") and where(old) == where(new)


def dtype_name(dtype: torch.dtype | str) -> str:
    """"float32" for torch.float32 or "float32"."""
    return str(dtype).removeprefix("torch.")


def randn(case: Case, gen: torch.Generator, *shape: int, scale: float = 1.0, grad: bool = True) -> torch.Tensor:
    """Seeded normal values drawn in float32 on the CPU (float64 holds them), so every dtype sees the same numbers."""
    t = torch.randn(*shape, generator=gen, dtype=torch.float32).mul_(scale)
    return t.to(device=case.device, dtype=case.dtype).requires_grad_(grad)


@dataclass(frozen=True)
class Implementation:
    name: str
    fn: Callable[..., Output]
    devices: tuple[str, ...]
    # Returns None when usable on that device, else the reason it is not (checked lazily).
    requires: Callable[[str], str | None] | None = None
    # Runs once per case outside the timed loop (e.g. loads an extension, changes a static layout).
    prepare: Callable[[Inputs], Inputs] | None = None
    # For custom ops: runs torch.library.opcheck on the op(s) behind this implementation for a small
    # case and raises on failure (`benchctl check` calls it).
    opcheck: Callable[[Case], None] | None = None
    # Compiles what the implementation needs for a device ahead of the sweep (raises BuildError),
    # so compile time is shown as such and never spent inside a worker's cell timeout.
    build: Callable[[str], float] | None = None
    description: str = ""
    # The dtypes it supports, by name ("float32"); empty: every dtype. The others are unavailable.
    dtypes: tuple[str, ...] = ()
    kernels: tuple[Any, ...] = ()  # the Triton kernels it launches (triton_support.py)

    def dtype_reason(self, dtype: torch.dtype | str) -> str | None:
        """Why it cannot run at `dtype` (None: it can)."""
        name = dtype_name(dtype)
        if not self.dtypes or name in self.dtypes:
            return None
        return f"{self.name} supports {', '.join(self.dtypes)} only, not {name}"

    def first_dtype(self, preferred: Sequence[torch.dtype]) -> torch.dtype | None:
        return next((d for d in preferred if self.dtype_reason(d) is None), None)

    def unavailable_reason(self, device: str, dtype: torch.dtype | str | None = None, timed: bool = True) -> str | None:
        if device not in self.devices:
            return f"{self.name} does not support device {device} (supports {', '.join(self.devices)})"
        if dtype is not None and self.dtype_reason(dtype):
            return self.dtype_reason(dtype)
        if device == Device.CUDA:
            reason = cuda_device_reason()
            if reason:
                return reason
        try:
            return (self.requires and self.requires(device)) or triton_support.reason(self.kernels, device, timed)
        except Exception as exc:  # a broken check must still give a reason, not a traceback
            return f"{type(exc).__name__}: {exc}"


@dataclass
class Operator:
    name: str
    description: str
    params: dict[str, Any]
    targets: tuple[Target, ...]
    axis: str = "batch_size"
    reference: str = "py"
    quick: dict[str, Any] = field(default_factory=dict)
    # Params used for the correctness gate of a timed cell (smaller, so the float64 reference is cheap).
    check_params: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    # Extra (params, ...) shapes for `benchctl check`: odd sizes, edge cases.
    check_cases: tuple[Mapping[str, Any], ...] = ()
    # The values a param takes beyond its type (param_rules.py): {"k": (positive, odd)}.
    rules: dict[str, tuple[param_rules.Rule, ...]] = field(default_factory=dict)
    implementations: dict[str, Implementation] = field(default_factory=dict)
    source: str = ""

    def implementation(
        self,
        name: str,
        devices: Sequence[str] = DEVICES,
        requires: Callable[[str], str | None] | None = None,
        prepare: Callable[[Inputs], Inputs] | None = None,
        opcheck: Callable[[Case], None] | None = None,
        build: Callable[[str], float] | None = None,
        dtypes: Sequence[str] = (),
        kernels: Sequence[Any] = (),
        config_variants: bool = False,
    ) -> Callable[[Callable[..., Output]], Callable[..., Output]]:
        """Decorator: register `fn` as implementation `name` (+ `name-<config>` with `config_variants`)."""

        def decorate(fn: Callable[..., Output]) -> Callable[..., Output]:
            triton_support.use_interpreter_bench(kernels)
            doc = (fn.__doc__ or "").strip().splitlines()
            for variant, call in triton_support.config_variants(name, fn, kernels) if config_variants else [(name, fn)]:
                if variant in self.implementations and not _same_definition(self.implementations[variant].fn, call):
                    raise ValueError(f"{self.name}: implementation {variant!r} registered twice")
                self.implementations[variant] = Implementation(
                    variant, call, tuple(devices), requires, prepare, opcheck, build, doc[0] if doc else "",
                    tuple(dtype_name(d) for d in dtypes), tuple(kernels))
            return fn

        return decorate

    def target(self, name: str) -> Target:
        for t in self.targets:
            if t.name == name:
                return t
        raise KeyError(f"{self.name} has no target {name!r}")

    def params_for_check(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self.check_params(params) if self.check_params else params)


_OPERATORS: dict[str, Operator] = {}
_LOAD_ERRORS: dict[str, str] = {}
_LOADED_FILES: set[Path] = set()


def register(op: Operator) -> Operator:
    param_rules.check_definition(op.name, op.params, op.rules, op.check_cases)
    if op.name in _OPERATORS and _OPERATORS[op.name] is not op:
        raise ValueError(f"operator {op.name!r} is already registered (from {_OPERATORS[op.name].source})")
    _OPERATORS[op.name] = op
    return op


def cuda_device_reason() -> str | None:
    """Why CUDA cannot run here, or None."""
    if torch.version.cuda is None:
        return "no CUDA torch: this torch is a CPU-only build"
    if not torch.cuda.is_available():
        return "no CUDA device: torch.cuda.is_available() is False"
    return None


def ops_dirs(extra: Sequence[str | Path] = ()) -> list[Path]:
    """Built-in operators first, then BENCHCTL_OPS_PATH entries, then --ops-dir folders."""
    env = [p for p in os.environ.get(OPS_PATH_ENV, "").split(os.pathsep) if p]
    return [BUILTIN_OPS_DIR, *(Path(p) for p in env), *(Path(p) for p in extra)]


def discover(extra_dirs: Sequence[str | Path] = (), only: Sequence[str] = ()) -> dict[str, Operator]:
    """Import the operator files under the ops folders; returns the registry.

    Each `<dir>/<name>.py` or `<dir>/<name>/__init__.py` is one operator module. With `only`, just the
    operators a command needs: a file named after each one is loaded alone (so one user's file cannot
    break another's sweep); a name no file carries loads every file. An import error is kept (see
    `load_errors`) instead of raised, so one broken operator never hides the others.
    """
    folders = [_checked_folder(f) for f in ops_dirs(extra_dirs)]
    wanted = [name for name in only if name not in _OPERATORS]
    if only and not wanted:
        return dict(_OPERATORS)
    named = [_file_named(name, folders) for name in wanted]
    if wanted and all(named):
        for path in named:
            _load_module(path)  # type: ignore[arg-type]
        if all(name in _OPERATORS for name in wanted):
            return dict(_OPERATORS)
    for folder in folders:
        for path in sorted(folder.iterdir()):
            _load_module(path)
    return dict(_OPERATORS)


def _checked_folder(folder: Path) -> Path:
    if not folder.is_dir():
        raise FileNotFoundError(f"operators folder not found: {str(folder.resolve())!r}")
    return folder.resolve()


def _file_named(name: str, folders: Sequence[Path]) -> Path | None:
    """The operator file or package named `name` in the folders (the last folder wins, as at loading)."""
    found = [p for f in folders for p in (f / f"{name}.py", f / name) if p.is_file() or (p / "__init__.py").exists()]
    return found[-1] if found else None


def _load_module(path: Path) -> None:
    if path.name.startswith(("_", ".")) or path in _LOADED_FILES:
        return
    if path.is_dir() and (path / "__init__.py").exists():
        init, search = path / "__init__.py", [str(path)]
    elif path.suffix == ".py":
        init, search = path, None
    else:
        return
    _LOADED_FILES.add(path)
    sys.modules.setdefault("benchctl_ops", types.ModuleType("benchctl_ops"))
    mod_name = f"benchctl_ops.{path.stem}"
    spec = importlib.util.spec_from_file_location(mod_name, init, submodule_search_locations=search)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a file that calls sys.exit (argparse at import) must not end benchctl
        del sys.modules[mod_name]
        _LOAD_ERRORS[str(path)] = import_errors.collision(str(exc)) or import_errors.described(exc, init)
        return
    for op in _OPERATORS.values():  # the file an operator came from: its code's repository (provenance.py)
        op.source = op.source or str(init)


def load_errors() -> dict[str, str]:
    return dict(_LOAD_ERRORS)


def get(name: str) -> Operator:
    if name not in _OPERATORS:
        raise KeyError(f"unknown operator {name!r}; choose from: {', '.join(sorted(_OPERATORS)) or 'none'}")
    return _OPERATORS[name]


def operators() -> dict[str, Operator]:
    return dict(_OPERATORS)

"""The `@compile` modifier's torch side: an implementation wrapped in torch.compile, built on first use.

Creating the wrapper compiles nothing: Dynamo traces and Inductor generates code on the first call, and the
backward is compiled on the first backward. The harness's first call of a cell runs forward and backward
and is recorded as `compile_s`, never as a sample, so a cell's compilation (a recompile at a new size
included) is all in it. Each variant gets a code object of its own, so Dynamo keeps a separate cache (and
recompile limit) for `py@compile` and `py@compile:max-autotune` running in one worker process: one never
counts as, or evicts, the other's compilations.
"""

from __future__ import annotations

import re
import shutil
import types
from typing import Any, Callable

from benchctl.ops.compile_watch import CompileWatch
from benchctl.ops.modifiers import CompileSpec
from benchctl.ops.registry import Implementation, Output
from benchctl.vocab import Device


class RecompileLimit(RuntimeError):
    """torch.compile reached its recompile limit for a function: past it, Dynamo would run it eagerly."""

    def __init__(self, label: str) -> None:
        import torch._dynamo.config

        limit = torch._dynamo.config.recompile_limit
        super().__init__(f"torch.compile reached its recompile limit ({limit} compilations of one function, "
                         f"torch._dynamo.config.recompile_limit) in {label}; past it Dynamo runs the code "
                         "eagerly, so it is not timed: fewer sizes, or dynamic=auto or true, compile less")


def compile_reason(device: str) -> str | None:
    """Why torch.compile cannot run on `device` here (None: it can). Imports Dynamo, compiles nothing."""
    try:
        import torch._dynamo
    except Exception as exc:
        return f"torch._dynamo cannot be imported: {type(exc).__name__}: {exc}"
    if not torch._dynamo.is_dynamo_supported():
        return "torch.compile is not supported on this Python/platform (torch._dynamo.is_dynamo_supported())"
    if device == Device.CPU and not any(shutil.which(cxx) for cxx in ("g++", "c++", "clang++")):
        return "torch.compile on CPU generates C++ and needs a C++ compiler (g++/c++/clang++) on PATH"
    if device == Device.CUDA:
        from torch.utils._triton import has_triton

        if not has_triton():
            return "torch.compile on CUDA generates Triton kernels and Triton is not installed"
    return None


def _configure() -> None:
    """Process-wide settings every compiled implementation needs.

    By default a compiled backward frees ("donates") its saved buffers and then refuses
    backward(retain_graph=True), which gradcheck and any second backward need; torch reads the flag when
    such a backward runs, so it is off for the process, not only while compiling (a little backward memory).
    Past torch's recompile limit Dynamo runs the function eagerly without a word: a row would time eager
    code under a compiled name, so the call fails instead, with Dynamo's message."""
    import torch._dynamo.config
    import torch._functorch.config

    torch._functorch.config.donated_buffer = False
    torch._dynamo.config.fail_on_recompile_limit_hit = True


def _own_code(fn: Callable[..., Output], label: str) -> Callable[..., Output]:
    """`fn` with a code object of its own (Dynamo caches per code object). A plain function is copied, so
    Dynamo traces exactly what `torch.compile(fn)` would; any other callable is called from a function of
    its own, named after `label`."""
    if isinstance(fn, types.FunctionType):
        copy = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__,
                                  fn.__closure__)
        copy.__kwdefaults__, copy.__dict__ = fn.__kwdefaults__, dict(fn.__dict__)
        return copy

    def call(*args: Any, **kwargs: Any) -> Output:
        return fn(*args, **kwargs)

    name = "compiled_" + re.sub(r"\W", "_", label)
    code = call.__code__.replace(co_name=name, co_qualname=name)
    return types.FunctionType(code, call.__globals__, name, call.__defaults__, call.__closure__)


class CompiledFn:
    """`fn` under torch.compile with `spec`'s mode and dynamic; torch.compile itself runs on the first call.
    `watch` counts what it compiles for each cell (compile_watch.py)."""

    def __init__(self, fn: Callable[..., Output], spec: CompileSpec, label: str) -> None:
        self._fn, self._spec, self._label = fn, spec, label
        self._built: Callable[..., Output] | None = None
        self.watch = CompileWatch()
        self.__name__ = f"{getattr(fn, '__name__', 'fn')}_compiled"

    def __call__(self, *args: Any, **kwargs: Any) -> Output:
        if self._built is None:
            import torch

            _configure()
            self._built = torch.compile(_own_code(self._fn, self._label), mode=self._spec.mode,
                                        dynamic=self._spec.dynamic)
        try:
            return self._built(*args, **kwargs)
        except Exception as exc:
            if type(exc).__name__ == "FailOnRecompileLimitHit":
                raise RecompileLimit(self._label) from exc
            raise


def modify(base: Implementation, name: str, spec: CompileSpec) -> Implementation:
    """`base` under torch.compile, as implementation `name`: same devices, dtypes, inputs and build; it is
    unavailable where the base is, or where torch.compile cannot run."""
    def requires(device: str) -> str | None:
        return base.unavailable_reason(device) or compile_reason(device)

    return Implementation(name, CompiledFn(base.fn, spec, name), base.devices, requires, base.prepare, None,
                          base.build, f"{spec.describe()} of {base.name}", base.dtypes)

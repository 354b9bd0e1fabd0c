"""Triton implementations: where their kernels run, which autotune config won, one variant per config.

An implementation registered with `kernels=(...)` launches those Triton kernels (`@triton.jit`
functions, or `@triton.autotune` wrappers of them) from a Python wrapper. It is timed on a GPU like
`cuda`. Without a GPU, Triton's interpreter runs the same kernels on CPU tensors (with numpy): that
is slow and says nothing about speed, so it is used for correctness only.

Whether kernels are interpreted is decided once per process, on `import benchctl` (triton_env.py);
each kernel then says for itself whether it is (`interpreted`).

Autotuning happens inside a kernel's first call with a new key, which the harness makes its untimed
first call (`compile_s`); `best_config` reads the config each kernel used for the cell afterwards.
Under the interpreter no config can be timed: each autotuned kernel gets `interpreter_bench`, which
runs every config once (so each one is exercised) and ranks them equal, so the first is used.
"""

from __future__ import annotations

import importlib

from typing import Any, Callable, Sequence

from benchctl.triton_env import INTERPRET_ENV
from benchctl.vocab import Device

# The reason `run` gives for a Triton implementation on the CPU, and the note `check` prints.
NOT_TIMED_ON_CPU = "Triton runs on a GPU; correctness checked on CPU with the interpreter"
CHECKED_WITH_INTERPRETER = "checked with Triton's interpreter on CPU"
NOT_INTERPRETED = (f"Triton's interpreter is off in this process ({INTERPRET_ENV} is set to 1 only where "
                   "no GPU is visible): check Triton implementations on gpu")
LIBRARY_NOT_INTERPRETED = (f"{INTERPRET_ENV}=1 was set after triton was imported: its kernels are interpreted "
                           "but Triton's own library is not; set it before starting Python")
INTERPRETED_ON_GPU = f"{INTERPRET_ENV}=1: its kernels run in Triton's interpreter here, not on the GPU"


def missing() -> str | None:
    """Why Triton cannot be used here (None: it can)."""
    try:
        importlib.import_module("triton")  # only whether it imports
    except Exception as exc:
        return f"triton cannot be imported ({type(exc).__name__}: {exc}); it comes with torch's CUDA builds"
    return None


def not_installed(*args: Any, **kwargs: Any) -> Any:
    """Stands in for a Triton implementation where triton cannot be imported (its `requires` says why)."""
    raise RuntimeError(missing() or "triton is not installed")


def placeholder(op: Any) -> None:
    """Registers `triton` on `op` where triton cannot be imported: unavailable, with why (`missing`)."""
    op.implementation("triton", requires=lambda device: missing())(not_installed)


def base_kernel(kernel: Any) -> Any:
    """The jitted (or interpreted) function under any `triton.autotune` / `triton.heuristics` wrappers."""
    while hasattr(kernel, "fn") and type(kernel).__name__ in ("Autotuner", "Heuristics"):
        kernel = kernel.fn
    return kernel


def interpreted(kernels: Sequence[Any]) -> bool:
    """Whether the kernels run in Triton's interpreter (decorated while TRITON_INTERPRET was 1)."""
    return any(type(base_kernel(k)).__name__ == "InterpretedFunction" for k in kernels)


def library_interpreted() -> bool:
    """Whether Triton's own jitted library (`tl.sigmoid`, ...) was decorated for the interpreter."""
    import triton.language as tl

    return type(tl.sigmoid).__name__ == "InterpretedFunction"


def reason(kernels: Sequence[Any], device: str, timed: bool) -> str | None:
    """Why these kernels cannot run on `device` for timing (`timed`) or for a correctness check."""
    if not kernels:
        return None
    if device == Device.CPU:
        if timed:
            return NOT_TIMED_ON_CPU
        if not interpreted(kernels):
            return NOT_INTERPRETED
        return None if library_interpreted() else LIBRARY_NOT_INTERPRETED
    return INTERPRETED_ON_GPU if interpreted(kernels) else None


def autotuners(kernels: Sequence[Any]) -> list[Any]:
    return [k for k in kernels if hasattr(k, "configs") and hasattr(k, "cache")]


def format_config(config: Any) -> str:
    """`BLOCK=64, num_warps=4, num_stages=3`: the meta-parameters, then the launch settings."""
    parts = [f"{k}={v}" for k, v in config.kwargs.items()]
    parts += [f"num_warps={config.num_warps}", f"num_stages={config.num_stages}"]
    if getattr(config, "num_ctas", 1) != 1:
        parts.append(f"num_ctas={config.num_ctas}")
    return ", ".join(parts)


def best_config(kernels: Sequence[Any]) -> str | None:
    """The config each autotuned kernel used in its last call; `name: config; name: config` when
    several kernels are autotuned. None when none is, or none has run."""
    found = [(base_kernel(k).__name__, k.best_config) for k in autotuners(kernels)
             if getattr(k, "best_config", None) is not None]
    if len(found) == 1:
        return format_config(found[0][1])
    return "; ".join(f"{name}: {format_config(c)}" for name, c in found) or None


def interpreter_bench(kernel_call: Callable[[], Any], quantiles: Sequence[float] = (0.5,)) -> list[float]:
    """Autotuning under the interpreter: run the config once, rank every config equal (0 s)."""
    kernel_call()
    return [0.0 for _ in quantiles]


def use_interpreter_bench(kernels: Sequence[Any]) -> None:
    """Give each interpreted autotuned kernel `interpreter_bench`, unless it has a bench of its own
    (there is no GPU driver to time configs with)."""
    for k in autotuners(kernels):
        if interpreted([k]) and getattr(k, "_do_bench", None) is None and "do_bench" not in vars(k):
            k.do_bench = interpreter_bench


class Pinned:
    """Calls `fn` with one autotuned kernel restricted to its config `index` (None: all its configs).

    Every call sets the kernel's configs again, so variants of one kernel can take turns in one
    process; the backward a forward recorded runs with the configs that forward set."""

    def __init__(self, fn: Callable[..., Any], kernel: Any, index: int | None) -> None:
        self.fn, self.kernel, self.index = fn, kernel, index
        self.all_configs = list(kernel.configs)
        self.__doc__ = fn.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        chosen = self.all_configs if self.index is None else [self.all_configs[self.index]]
        if self.kernel.configs != chosen:
            self.kernel.configs = chosen
        return self.fn(*args, **kwargs)


def config_suffix(configs: Sequence[Any], index: int) -> str:
    """`BLOCK64-w4`: the settings that tell config `index` from the others."""
    def fields(c: Any) -> dict[str, Any]:
        return {**c.kwargs, "w": c.num_warps, "s": c.num_stages}

    all_fields = [fields(c) for c in configs]
    mine = all_fields[index]
    differ = [k for k in mine if any(f.get(k) != mine[k] for f in all_fields)]
    return "-".join(f"{k}{mine[k]}" for k in differ) or str(index)


def config_variants(name: str, fn: Callable[..., Any], kernels: Sequence[Any]) -> list[tuple[str, Callable[..., Any]]]:
    """(name, fn) for the autotuned implementation and one `name-<config>` variant per config of its
    one autotuned kernel with several configs, so configs can be timed side by side."""
    tuned = [k for k in autotuners(kernels) if len(k.configs) > 1]
    if len(tuned) != 1:
        raise ValueError(f"{name}: config_variants needs exactly one autotuned kernel with several configs, "
                         f"found {len(tuned)}")
    kernel = tuned[0]
    variants = [(name, Pinned(fn, kernel, None))]
    return variants + [(f"{name}-{config_suffix(kernel.configs, i)}", Pinned(fn, kernel, i))
                       for i in range(len(kernel.configs))]

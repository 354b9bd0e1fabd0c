"""What each Triton kernel of an operator asks of an SM, per GPU architecture, without a GPU: its registers and
spills (what a launched kernel's `n_regs` and `n_spills` tell on a GPU, after the fact), known before it runs.

Triton compiles a kernel when it is first launched, for the argument types (and alignments, and the ints it
specialises on) of that launch. So a child process imports the operator with Triton's interpreter off, runs
each Triton implementation once, forward and backward, on CPU tensors of float32 (or the first of bfloat16,
float16 and float64 it supports) at the operator's default params, with every kernel's launch replaced by a
note of its arguments (the kernels do nothing; the torch code around them runs). Each launch noted, under
every config of an autotuned kernel, is then bound and compiled by Triton's own machinery for each
architecture of TORCH_CUDA_ARCH_LIST, and Triton's ptxas reads the PTX back with `-v`. Shared memory is
what the kernel launches with (Triton allocates it at launch).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Any, Sequence

from benchctl import interpreter
from benchctl.errors import BenchError
from benchctl.ops import resources, toolchain
from benchctl.ops.isolated import last_reason
from benchctl.ops.resources import KernelResources
from benchctl.triton_env import INTERPRET_ENV

MODULE = "benchctl.ops.triton_resources"

Launch = tuple[Any, tuple[Any, ...], dict[str, Any]]  # (the jitted function, its args, its keywords)


def archs(text: str) -> list[int]:
    """Compute capabilities from a TORCH_CUDA_ARCH_LIST text ("8.0;9.0+PTX" -> [80, 90])."""
    found = []
    for word in re.split(r"[;\s]+", text.strip()):
        m = re.fullmatch(r"(\d+)\.(\d+)a?(\+PTX)?", word)
        if m:
            found.append(int(m.group(1)) * 10 + int(m.group(2)))
    return sorted(set(found))


def of_operator(op: str, ops_dirs: Sequence[str] = ()) -> list[tuple[str, KernelResources]]:
    """("IMPL DTYPE", kernel) for every Triton kernel `op`'s implementations launch, per architecture."""
    request = {"op": op, "ops_dirs": list(ops_dirs), "archs": archs(toolchain.arch_list())}
    proc = subprocess.run(interpreter.module_command(MODULE), input=json.dumps(request), capture_output=True,
                          text=True, env=interpreter.child_env({INTERPRET_ENV: "0"}))
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise BenchError(f"compiling {op}'s Triton kernels failed: {last_reason(proc.stderr)}")
    reply = json.loads(lines[-1])
    if "error" in reply:
        raise BenchError(f"compiling {op}'s Triton kernels failed: {reply['error']}")
    return [(row.pop("impl"), KernelResources(**row)) for row in reply["kernels"]]


def _noting(launches: list[Launch], kernel: Any) -> Any:
    def run(*args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> None:
        launches.append((kernel, args, kwargs))

    return run


def _every_config(tuner: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> None:
        for config in tuner.configs:
            tuner.fn.run(*args, **{**kwargs, **config.all_kwargs()})

    return run


def noted_launches(kernels: Sequence[Any], call: Any) -> list[Launch]:
    """The launches `call()` makes of `kernels`, none of them run: an autotuned kernel's under each config."""
    from benchctl.ops import triton_support

    launches: list[Launch] = []
    bases, tuners = [triton_support.base_kernel(k) for k in kernels], triton_support.autotuners(kernels)
    for tuner in tuners:
        tuner.run = _every_config(tuner)
    for base in bases:
        base.run = _noting(launches, base)
    try:
        call()
    finally:
        for k in [*bases, *tuners]:
            vars(k).pop("run", None)  # the class's own run again
    return launches


def dtype_of(impl: Any) -> Any:
    """The dtype an implementation's kernels are compiled for: float32, else the first other it supports."""
    import torch

    return impl.first_dtype((torch.float32, torch.bfloat16, torch.float16, torch.float64))


def forward_backward(op: Any, impl: Any, device: str = "cpu") -> None:
    """One forward and backward of `impl` (at `dtype_of` it) at the operator's default params, per target."""
    import torch

    from benchctl.ops.registry import Case

    params = {k: (v[0] if isinstance(v, list) else v) for k, v in op.params.items()}
    for target in op.targets:
        inputs = target.make_inputs(Case(params, dtype_of(impl), device))
        inputs = impl.prepare(inputs) if impl.prepare else inputs
        out = target.call(impl.fn, inputs)
        outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o.requires_grad]
        if outs:
            torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])


def _label(kernel: Any, constexprs: dict[Any, Any], options: Any) -> str:
    """`lstm_pointwise_fwd ACC=fp32 BLOCK=128 w4`: the kernel, the constants it was compiled for, its warps."""
    import triton.language as tl

    names = kernel.arg_names
    consts = [f"{names[path[0]]}={value}" for path, value in constexprs.items()
              if len(path) == 1 and isinstance(value, (int, str, tl.dtype))]
    return " ".join([kernel.__name__, *consts, f"w{options.num_warps}"])


def compile_launch(launch: Launch, arch: int) -> KernelResources:
    """The launch compiled by Triton for `arch`, as ptxas reports it (ptxas -v on Triton's PTX)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import get_ptxas
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    kernel, args, kwargs = launch
    target = GPUTarget("cuda", arch, 32)
    backend = make_backend(target)
    bound, specialization, options = create_function_from_signature(kernel.signature, kernel.params, backend)(
        *args, **kwargs)
    options, signature, constexprs, attrs = kernel._pack_args(backend, kwargs, bound, specialization, options)
    try:
        compiled = triton.compile(ASTSource(kernel, signature, constexprs, attrs), target=target,
                                  options=options.__dict__)
    except Exception as exc:
        raise BenchError(f"{kernel.__name__} for sm_{arch}: {one_line(exc)}") from exc
    ptx = compiled.asm["ptx"]
    sm = re.search(r"\.target\s+(\w+)", ptx).group(1)  # sm_90a on Hopper: what ptxas must be asked for
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        run = subprocess.run([get_ptxas(arch).path, f"-arch={sm}", "-v", path, "-o", os.devnull],
                             capture_output=True, text=True)
    found = resources.parse(run.stderr + run.stdout)
    if run.returncode != 0 or len(found) != 1:
        raise BenchError(f"ptxas on {kernel.__name__} for {sm}: {(run.stderr.strip().splitlines() or ['?'])[-1]}")
    k = found[0]
    return KernelResources(_label(kernel, constexprs, options), sm.removesuffix("a"), k.registers,
                           k.spill_stores, k.spill_loads, k.stack, compiled.metadata.shared, k.barriers,
                           options.num_warps)


def one_line(exc: BaseException) -> str:
    """The error at the root of `exc`'s causes in one line, with the kernel line Triton's CompilationError
    names (its own text is the kernel's source and a caret; the reason is in what it wraps)."""
    chain = [exc]
    while (nxt := chain[-1].__cause__ or chain[-1].__context__) is not None and len(chain) < 20:
        chain.append(nxt)
    compile_errors = [e for e in chain if type(e).__name__ == "CompilationError"]
    where = str(compile_errors[0]).split("\n", 1)[0].removeprefix("at ").rstrip(":") if compile_errors else ""
    root = chain[-1]
    lines = [line for line in str(root).strip().splitlines() if line.strip() not in ("", "^")]
    text = (lines[-1] if len(lines) > 1 else "") if root in compile_errors else (lines or [""])[0]
    return f"{type(root).__name__}: {text}" + (f" (kernel line {where})" if where else "")


def _serve(request: dict[str, Any]) -> list[dict[str, Any]]:
    from dataclasses import asdict

    from benchctl.ops import registry
    from benchctl.ops.registry import dtype_name

    op = registry.discover(request["ops_dirs"], only=[request["op"]])[request["op"]]
    seen: set[tuple[Any, ...]] = set()
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for impl in op.implementations.values():
        dtype = dtype_name(dtype_of(impl))
        if not impl.kernels or (dtype, *map(id, impl.kernels)) in seen:
            continue  # no Triton, or a config variant of kernels compiled already (every config is)
        seen.add((dtype, *map(id, impl.kernels)))
        launches = noted_launches(impl.kernels, lambda: forward_backward(op, impl))
        if not launches:
            raise BenchError(f"{impl.name} launched none of its Triton kernels on CPU tensors, so there is nothing "
                             "to compile (an implementation that launches them only on a GPU cannot be read here)")
        for launch in launches:
            for arch in request["archs"]:
                k = compile_launch(launch, arch)
                rows.setdefault((dtype, k.kernel, k.arch), {"impl": f"{impl.name} {dtype}", **asdict(k)})
    return list(rows.values())


def main() -> None:
    proto = interpreter.reply_channel()
    request = json.loads(sys.stdin.readline())
    try:
        reply: dict[str, Any] = {"kernels": _serve(request)}
    except BenchError as exc:
        reply = {"error": str(exc)}
    except Exception as exc:  # the reason, in one line: an input it cannot make, an implementation that raises
        reply = {"error": one_line(exc)}
    proto.write(json.dumps(reply) + "\n")
    proto.flush()


if __name__ == "__main__":
    main()

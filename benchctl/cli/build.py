"""`benchctl build [OP ...]`: compile the C++/CUDA extensions now, showing compiler errors plainly.

Each library builds and loads in a child process, so a library that aborts the process that loads it
(two TORCH_LIBRARY blocks for one namespace) is one failed line, not the end of the command."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

import click

from benchctl.cli.options import load_operators, ops_dir_option

MakeLibrary = Callable[[str], object]  # kind -> benchctl.ops.library.Library (raises BuildError)
BuildOp = Callable[[str, MakeLibrary], list[str]]  # (label, make) -> the kinds that failed


def default_jobs() -> int:
    """Operators built at once: one per two cores (each compile is mostly one compiler process), one on a
    machine of two cores or fewer, so a build never competes with itself there."""
    return max(1, (os.cpu_count() or 1) // 2)


def build_all(chosen: Sequence[tuple[str, MakeLibrary]], build_op: BuildOp, jobs: int) -> list[tuple[str, str]]:
    """(label, kind) of every library that failed; `jobs` operators at once (each its own child processes),
    an operator's libraries in order (its CUDA kernels load after the CPU library that defines the ops)."""
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(chosen)))) as pool:
        failed = pool.map(lambda entry: build_op(*entry), chosen)
        return [(label, kind) for (label, _), kinds in zip(chosen, failed) for kind in kinds]


def _kinds(cuda: bool) -> tuple[str, ...]:
    return ("cpu", "cuda") if cuda else ("cpu",)


def _build_one(label: str, make: MakeLibrary, kind: str, verbose: bool) -> bool:
    """Builds or loads one library and prints one status line; False when it failed."""
    from benchctl import console
    from benchctl.ops import build, isolated

    try:
        lib = make(kind)
    except build.BuildError as exc:  # an op without sources of this kind: nothing to build
        console.out.print(f"skipped {label} ({kind}): {exc.summary}", highlight=False)
        return True
    console.err.print(f"building {lib.name} ...", highlight=False)
    try:
        result = isolated.build_library(lib, verbose=verbose)
    except build.BuildError as exc:
        console.error(exc.summary)
        if exc.compiler_lines:
            console.err.print(exc.compiler_lines, highlight=False, markup=False, soft_wrap=True)
        return False
    verb = "built" if result.compiled else "loaded"
    cached = "" if result.compiled else " (cached)"
    console.out.print(f"{verb} {result.name}{cached} in {result.seconds:.1f} s", highlight=False)
    return True


def _build_op(label: str, make: MakeLibrary, kinds: tuple[str, ...], verbose: bool) -> list[str]:
    """The kinds that failed. CUDA is not tried after its CPU library (the op schemas) failed."""
    failed: list[str] = []
    for kind in kinds:
        if failed:
            break
        if not _build_one(label, make, kind, verbose):
            failed.append(kind)
    return failed


@click.command("build")
@click.argument("ops", nargs=-1)
@click.option("--cuda/--no-cuda", default=False, help="Also build the CUDA libraries (needs nvcc).")
@click.option("--resources", is_flag=True,
              help="Then show each CUDA and Triton kernel's registers, spills and shared memory, per architecture, "
                   "as ptxas reports them (compiles the .cu sources once more, and the Triton kernels ahead of "
                   "time; no GPU needed; implies --cuda).")
@click.option("--verbose", is_flag=True, help="Show the compiler's commands and output.")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Operators to build at once (default: one per two cores).")
@ops_dir_option
def command(ops: tuple[str, ...], cuda: bool, resources: bool, verbose: bool, jobs: int | None,
            ops_dirs: tuple[str, ...]) -> None:
    """Compile the C++ (and with --cuda, CUDA) extensions of OPS (default: all that have sources),
    benchctl's own and those your operator files in --ops-dir declare."""
    from benchctl import console
    from benchctl.errors import BenchError, UsageError
    from benchctl.ops import namespaces

    known, folders = _extensions(ops_dirs, ops)
    triton = _triton_ops(ops_dirs, ops) if resources else []
    unknown = [op for op in ops if op not in known and op not in triton]
    if unknown:
        what = "extension sources or Triton kernels" if resources else "extension sources"
        choices = ", ".join(dict.fromkeys([*known, *triton]))
        raise UsageError(f"no {what} for {', '.join(map(repr, unknown))}; choose from: {choices}")
    chosen = [entry for op in (ops or known) if op in known for entry in known[op]]
    chosen = list(dict.fromkeys(chosen))
    for clash in namespaces.clashes(folders[label] for label, _ in chosen):
        console.warn(clash.line())
    kinds = _kinds(cuda or resources)
    failed = build_all(chosen, lambda label, make: _build_op(label, make, kinds, verbose), jobs or default_jobs())
    unread = []
    if resources:
        broken = {label for label, _ in failed}
        unread = _show_all_resources([entry for entry in chosen if entry[0] not in broken],
                                     [op for op in (ops or triton) if op in triton], ops_dirs)
    if failed:
        names = ", ".join(f"{op} ({kind})" for op, kind in failed)
        raise BenchError(f"{len(failed)} librar{'y' if len(failed) == 1 else 'ies'} failed to build: {names}")
    if unread:
        raise BenchError(f"the kernels of {', '.join(unread)} could not be read (above)")


def _show_all_resources(built: Sequence[tuple[str, MakeLibrary]], triton: Sequence[str],
                        ops_dirs: tuple[str, ...]) -> list[str]:
    """By name: a library's CUDA kernels, then the Triton kernels of the operator of that name. One that cannot
    be read is an error line, and the others still show; returns the names that could not be read."""
    from benchctl import console
    from benchctl.errors import BenchError

    unread = []
    for name in sorted({label for label, _ in built} | set(triton)):
        try:
            _show_resources([entry for entry in built if entry[0] == name])
            if name in triton:
                _show_triton_resources([name], ops_dirs)
        except BenchError as exc:
            console.error(str(exc))
            unread.append(name)
    return unread


def _show_resources(built: Sequence[tuple[str, MakeLibrary]]) -> None:
    """A table per CUDA library: its kernels by architecture, spills in yellow."""
    from benchctl import console
    from benchctl.ops import build, resources

    for label, make in built:
        try:
            lib = make("cuda")
        except build.BuildError:  # no .cu sources
            continue
        with console.err.status(f"reading {lib.name}'s kernels from ptxas ..."):
            kernels = resources.of_library(lib)
        readable = resources.names([k.kernel for k in kernels])
        console.out.print(_kernel_table(f"{label}: CUDA kernels as ptxas compiled them", "warps by registers",
                                        [(readable[k.kernel], k) for k in kernels]))


def _triton_ops(ops_dirs: tuple[str, ...], ops: tuple[str, ...]) -> list[str]:
    """The operators (of OPS, when named) with an implementation that launches Triton kernels."""
    from benchctl.ops import registry

    found = registry.discover(ops_dirs, only=ops)
    return [name for name in (ops or sorted(found))
            if name in found and any(i.kernels for i in found[name].implementations.values())]


def _show_triton_resources(ops: Sequence[str], ops_dirs: tuple[str, ...]) -> None:
    """A table per operator with Triton kernels: each kernel and config, compiled for each architecture."""
    from benchctl import console
    from benchctl.ops import triton_resources

    for op in ops:
        with console.err.status(f"compiling {op}'s Triton kernels ahead of time ..."):
            kernels = triton_resources.of_operator(op, ops_dirs)
        console.out.print(_kernel_table(f"{op}: Triton kernels as Triton compiled them (default params)",
                                        "occupancy limit", [(f"{impl}: {k.kernel}", k) for impl, k in kernels]))


def _kernel_table(title: str, occupancy: str, kernels: Sequence[tuple[str, object]]):
    """(name, KernelResources) rows: registers, the warps they leave room for, spills in yellow, stack, shared."""
    from rich.text import Text

    from benchctl import console

    columns = ("kernel", "arch", "registers", occupancy, "spill stores / loads B", "stack B", "shared B", "barriers")
    rows = [(name, k.arch, k.registers, _share(k.occupancy_limit()),
             Text(f"{k.spill_stores} / {k.spill_loads}", style="yellow" if k.spills else ""), k.stack, k.shared,
             k.barriers) for name, k in kernels]
    return console.table(title, columns, rows)


def _share(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"


def _extensions(ops_dirs: tuple[str, ...], ops: tuple[str, ...] = ()):
    """Name -> [(label, kind -> Library)], and label -> (operator, source folder): the folders under
    extensions/, then every extension an operator file declares (a user's, beside their operator file;
    only the files of OPS when named), by its library stem and by its operator's name."""
    from benchctl.ops import build, extension

    known: dict[str, list[tuple[str, MakeLibrary]]] = {}
    folders = {}
    for op in build.extension_ops():
        known[op] = [(op, lambda kind, op=op: build.library(op, kind))]
        folders[op] = (op, build.EXTENSIONS_DIR / op)
    if ops_dirs:
        load_operators(ops_dirs, ops)
        for stem, ext in extension.declared().items():
            if stem in folders:
                continue
            folders[stem] = (ext.operator or ext.name, ext.folder)
            for name in dict.fromkeys((stem, ext.operator or stem)):
                known.setdefault(name, []).append((stem, ext.library))
    return known, folders

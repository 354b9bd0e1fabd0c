"""`benchctl build [OP ...]`: compile the C++/CUDA extensions now, showing compiler errors plainly."""

from __future__ import annotations

from pathlib import Path

import click

from benchctl.cli.options import load_operators, ops_dir_option


def _kinds(cuda: bool) -> tuple[str, ...]:
    return ("cpu", "cuda") if cuda else ("cpu",)


def _build_one(op: str, root: Path, kind: str, verbose: bool) -> bool:
    """Builds or loads one library and prints one status line; False when it failed."""
    from benchctl import console
    from benchctl.ops import build

    try:
        lib = build.library(op, kind, root)
    except build.BuildError as exc:  # an op without sources of this kind: nothing to build
        console.out.print(f"skipped {op} ({kind}): {exc.summary}", highlight=False)
        return True
    console.err.print(f"building {lib.name} ...", highlight=False)
    try:
        result = build.build(op, kind, root, verbose=verbose)
    except build.BuildError as exc:
        console.error(exc.summary)
        if exc.compiler_lines:
            console.err.print(exc.compiler_lines, highlight=False, markup=False, soft_wrap=True)
        return False
    verb = "built" if result.compiled else "loaded"
    cached = "" if result.compiled else " (cached)"
    console.out.print(f"{verb} {result.name}{cached} in {result.seconds:.1f} s", highlight=False)
    return True


def _build_op(op: str, root: Path, kinds: tuple[str, ...], verbose: bool) -> list[str]:
    """The kinds of `op` that failed. CUDA is not tried after its CPU library (the op schemas) failed."""
    failed: list[str] = []
    for kind in kinds:
        if failed:
            break
        if not _build_one(op, root, kind, verbose):
            failed.append(kind)
    return failed


@click.command("build")
@click.argument("ops", nargs=-1)
@click.option("--cuda/--no-cuda", default=False, help="Also build the CUDA libraries (needs nvcc).")
@click.option("--verbose", is_flag=True, help="Show the compiler's commands and output.")
@ops_dir_option
def command(ops: tuple[str, ...], cuda: bool, verbose: bool, ops_dirs: tuple[str, ...]) -> None:
    """Compile the C++ (and with --cuda, CUDA) extensions of OPS (default: all that have sources),
    benchctl's own and those your operator files in --ops-dir declare."""
    from benchctl.errors import BenchError, UsageError

    known = _extensions(ops_dirs, ops)
    unknown = [op for op in ops if op not in known]
    if unknown:
        raise UsageError(f"no extension sources for {', '.join(unknown)}; choose from: {', '.join(known)}")
    failed = [(op, kind) for op in (ops or known) for kind in _build_op(*known[op], _kinds(cuda), verbose)]
    if failed:
        names = ", ".join(f"{op} ({kind})" for op, kind in failed)
        raise BenchError(f"{len(failed)} librar{'y' if len(failed) == 1 else 'ies'} failed to build: {names}")


def _extensions(ops_dirs: tuple[str, ...], ops: tuple[str, ...] = ()) -> dict[str, tuple[str, Path]]:
    """Name -> (source folder name, its parent): the folders under extensions/, then every extension an
    operator file declares (a user's, beside their operator file; only the files of OPS when named)."""
    from benchctl.ops import build, extension

    found = {op: (op, build.EXTENSIONS_DIR) for op in build.extension_ops()}
    if ops_dirs:
        load_operators(ops_dirs, ops)
        found.update({name: (ext.folder.name, ext.folder.parent) for name, ext in extension.declared().items()
                      if name not in found})
    return found

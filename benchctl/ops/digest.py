"""A short digest of the code one cell times, so `compare` and `history` can tell whether the code behind
two timings changed, whatever the commits say.

It covers, as they read when the run stamps its first row: the source of the implementation's function and
of its prepare hook, followed through every function, class, Triton kernel and constant (numbers, strings,
tuples of them) they name that is defined outside benchctl and the installed packages (the operator's own
helpers, autograd Functions, kernels and their configs); the wrapped function of a wrapper (a config
variant, a modifier: the modifier itself is in the implementation's name); the files of every extension it
loads (contents and build options, not where they lie, so two clones of one commit agree); and its target's
input factory and call. Not covered: code reached only through an installed package, data read at run
time, environment variables. Different digests: the code changed; equal ones: nothing they cover did.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import sysconfig
import types
from typing import Any, Iterator

from benchctl.ops import build, extension, lookup, modifiers, paths, registry, triton_support

DIGEST_CHARS = 12
CONSTANTS = (int, float, str, bool, bytes, type(None))
WRAPPED = ("fn", "_fn", "kernel", "__wrapped__")  # where a wrapper object keeps what it calls
TRITON_KERNELS = ("Autotuner", "Heuristics", "JITFunction", "InterpretedFunction")
# Where code is the harness's or an installed package's: its source is not hashed, only followed through
# a wrapper's closure to the function it wraps.
_NOT_OWN = tuple(os.path.realpath(p) + os.sep for p in {
    *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")), str(paths.PACKAGE_DIR)})
_BUILTIN = os.path.realpath(paths.IMPLEMENTATIONS_DIR) + os.sep  # inside the package where installed from a wheel


@functools.lru_cache(maxsize=None)
def cell_code(op_name: str, target: str, impl: str) -> str | None:
    """The digest of the code cell (`op_name`, `target`, `impl`) times; None where it is not known here, or
    cannot be read (the rows it goes on are written all the same)."""
    op = registry.operators().get(op_name)
    try:
        if op is None or not lookup.known(op, impl):
            return None
        found = op.implementations[modifiers.split(impl)[0] if modifiers.is_modified(impl) else impl]
        roots: list[Any] = [found.fn, found.prepare, *found.kernels, extension.behind(found)]
        if any(t.name == target for t in op.targets):
            roots += [op.target(target).make_inputs, op.target(target).call]
        return digest(roots)
    except Exception:  # a malformed name, a file gone since: no digest, never a lost row
        return None


def digest(roots: list[Any]) -> str:
    """The digest over everything reached from `roots` (module docstring), in an order that does not
    depend on how it was reached."""
    pieces: dict[str, set[bytes]] = {}  # by name: two lambdas of one module share theirs
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        obj = todo.pop()
        if obj is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        for key, piece, more in _parts(obj):
            if piece is not None:
                pieces.setdefault(key, set()).add(piece)
            todo += more
    h = hashlib.sha256()
    for key in sorted(pieces):
        h.update(key.encode() + b"\0" + b"\0".join(sorted(pieces[key])) + b"\0")
    return h.hexdigest()[:DIGEST_CHARS]


Part = tuple[str, "bytes | None", list[Any]]  # (what it is, its bytes or nothing, what to follow from it)


def _parts(obj: Any) -> Iterator[Part]:
    if isinstance(obj, extension.Extension):
        yield from _extension(obj)
    elif isinstance(obj, (staticmethod, classmethod, types.MethodType)):
        yield "", None, [obj.__func__]
    elif isinstance(obj, types.FunctionType):
        yield from _function(obj)
    elif isinstance(obj, type):
        yield from _class(obj)
    elif type(obj).__name__ in TRITON_KERNELS:  # its configs (autotuned), and the function it compiles
        configs = "\n".join(str(c) for c in getattr(obj, "configs", None) or ())
        yield f"{_name(triton_support.base_kernel(obj).fn)}:configs", configs.encode() or None, [obj.fn]
    elif isinstance(obj, functools.partial):
        yield "", None, [obj.func, *obj.args, *obj.keywords.values()]
    elif isinstance(obj, types.ModuleType):
        return
    elif _own(type(obj)):  # an object of the user's own class
        yield "", None, [type(obj)]
    elif callable(obj):  # the harness's wrapper (a config variant, a modifier): what it wraps
        yield "", None, [getattr(obj, a, None) for a in WRAPPED]


def _function(fn: types.FunctionType) -> Iterator[Part]:
    """An own function: its source, the constants it names or holds (globals, closure, defaults), and what
    else it names or holds to follow. The harness's or a package's: only what it wraps."""
    held = [c.cell_contents for c in fn.__closure__ or () if _has_contents(c)] + [getattr(fn, "__wrapped__", None)]
    if not _own(fn):
        yield "", None, held
        return
    held += [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()]
    names = _names(fn.__code__)
    used = [fn.__globals__[n] for n in sorted(names) if n in fn.__globals__]
    members = [getattr(m, n) for m in used if isinstance(m, types.ModuleType) and _own(m) for n in sorted(names)
               if hasattr(m, n)]
    yield _name(fn), _source(fn), [v for v in held + used + members if not _constant(v)]
    yield f"{_name(fn)}:held", repr([v for v in held if _constant(v)]).encode(), []
    for n in sorted(names & fn.__globals__.keys()):
        if _constant(fn.__globals__[n]):
            yield f"{fn.__module__}.{n}", repr(fn.__globals__[n]).encode(), []


def _class(cls: type) -> Iterator[Part]:
    if _own(cls):
        yield _name(cls), _source(cls), list(vars(cls).values())


def _extension(ext: extension.Extension) -> Iterator[Part]:
    """Every input file of each library the extension has, named from its source folder, and its options."""
    for kind in ("cpu", "cuda"):
        try:
            library = ext.library(kind)
        except build.BuildError:  # no sources of this kind
            continue
        folder = library.folder.resolve()
        yield f"ext:{ext.stem}:{kind}:options", json.dumps(library.options.to_json(), sort_keys=True).encode(), []
        for path in library.inputs():
            yield f"ext:{ext.stem}:{kind}:{os.path.relpath(path, folder)}", path.read_bytes(), []


def _names(code: types.CodeType) -> set[str]:
    """The global names a code object and the code nested in it (lambdas, comprehensions) use."""
    nested = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return set(code.co_names).union(*(_names(c) for c in nested))


def _constant(value: Any) -> bool:
    return isinstance(value, CONSTANTS) or (isinstance(value, tuple) and all(_constant(v) for v in value))


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


def _own(obj: Any) -> bool:
    """Defined in a file of the user's (an operator's folder), not in the harness or an installed package."""
    try:
        path = inspect.getsourcefile(obj)
    except (TypeError, OSError):  # built in, or its module is gone
        return False
    real = os.path.realpath(path) if path else ""
    return real.startswith(_BUILTIN) or bool(real) and not real.startswith(_NOT_OWN)


def _source(obj: Any) -> bytes:
    try:
        return inspect.getsource(obj).encode()
    except (OSError, TypeError):  # no source file at hand: its bytecode and constants
        code = getattr(obj, "__code__", None)
        return code.co_code + repr(code.co_consts).encode() if code else repr(obj).encode()


def _name(obj: Any) -> str:
    """`module.qualname`: the same in every process (never an object's address)."""
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"

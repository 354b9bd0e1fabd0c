"""Builds and loads in a child process, so benchctl's own process never loads a user's C++ library.

Loading a library runs its static registrations, and torch aborts the whole process on some of them (a
second `TORCH_LIBRARY` block for one namespace, for one). The parent sends one request as a JSON line and
reads one JSON line back; a child that dies instead becomes a BuildError whose one-line summary is the
reason it gave (the `what():` of an abort, else the last line it wrote), so the cells that needed the
library are `unavailable` with it and the rest of the sweep goes on.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchctl import interpreter
from benchctl.ops import build
from benchctl.ops.build import BuildError, BuildResult
from benchctl.ops.library import BuildOptions, Library

MODULE = "benchctl.ops.isolated"
LOADED = "LOADED"  # in a cache entry: its library loaded in a child process of its own


def library_to_json(lib: Library) -> dict[str, Any]:
    return {"stem": lib.stem, "kind": lib.kind, "folder": str(lib.folder), "sources": [str(s) for s in lib.sources],
            "options": lib.options.to_json()}


def library_from_json(data: dict[str, Any]) -> Library:
    return Library(data["stem"], data["kind"], Path(data["folder"]), tuple(Path(s) for s in data["sources"]),
                   BuildOptions.from_json(data["options"]))


def build_library(lib: Library, verbose: bool = False) -> BuildResult:
    """Build `lib` (if needed) and load it once, in a child process; not again for a cache entry that loaded
    so before, unchanged since (`proven`). Raises BuildError."""
    if proven(lib):
        return BuildResult(lib.name, 0.0, False)
    reply = _ask({"library": library_to_json(lib), "verbose": verbose}, f"loading {lib.name}", verbose)
    (lib.build_dir / LOADED).write_text(lib.module)
    return BuildResult(reply["name"], reply["seconds"], reply["compiled"])


def proven(lib: Library) -> bool:
    """The cache entry's library (and the CPU library a CUDA one loads first) loaded in a child before, and
    no input is newer than it (ninja would compile again: a checkout that put the same text back). The
    entry is named by a hash of every input, the flags, torch and the compiler, so a change is a new
    entry; this skips only the child's start, which imports torch (1.5 s a library on a 2-core VM)."""
    schemas = build.schema_library(lib)
    if schemas is not None and not proven(schemas):
        return False
    linked = build.built_at(lib)
    if linked is None or not (lib.build_dir / LOADED).is_file():
        return False
    return all(path.stat().st_mtime_ns <= linked for path in lib.inputs())


def _ask(request: dict[str, Any], what: str, verbose: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryFile() as err:
        proc = subprocess.run(interpreter.module_command(MODULE), input=json.dumps(request), text=True,
                              stdout=subprocess.PIPE, stderr=None if verbose else err,
                              env=interpreter.child_env())
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    lines = proc.stdout.strip().splitlines()
    reply = json.loads(lines[-1]) if proc.returncode == 0 and lines else None
    if reply is None:
        raise BuildError(f"{what} ended its process ({_how(proc.returncode)}): {last_reason(stderr)}", "", None)
    if "error" in reply:
        e = reply["error"]
        raise BuildError(e["summary"], e["compiler_lines"], Path(e["log"]) if e["log"] else None)
    return reply


def _how(code: int) -> str:
    import signal

    return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"


def last_reason(stderr: str) -> str:
    """The one line a dying process gave as its reason: C++'s `what():` line, else Python's last line."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    what = [l.split("what():", 1)[1].strip() for l in lines if "what():" in l]
    if what:
        return what[0]
    errors = [l for l in lines if not l.startswith(("File ", "Traceback", "Fatal Python", "Current thread", "Thread "))]
    return (errors or lines or ["no message"])[-1]


def _serve(request: dict[str, Any]) -> dict[str, Any]:
    try:
        result = build.build_library(library_from_json(request["library"]), request.get("verbose", False))
        return {"name": result.name, "seconds": result.seconds, "compiled": result.compiled}
    except BuildError as exc:
        return {"error": {"summary": exc.summary, "compiler_lines": exc.compiler_lines,
                          "log": str(exc.log) if exc.log else ""}}


def main() -> None:
    proto = interpreter.reply_channel()  # compiler output, prints: never on the reply line
    reply = _serve(json.loads(sys.stdin.readline()))
    proto.write(json.dumps(reply) + "\n")
    proto.flush()


if __name__ == "__main__":
    main()

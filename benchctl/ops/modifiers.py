"""Modifiers: an implementation run another way, named on the command line as `IMPL@MODIFIER[:OPTION...]`.

The one modifier is `compile`: torch.compile of any implementation, so every operator's Python version can
be timed beside its compiled self without a hand-written variant. Options, separated by `:`, in any order:
a mode (`max-autotune`, `reduce-overhead`, `max-autotune-no-cudagraphs`; `default` is torch's) and
`dynamic=true|false|auto` (torch.compile's `dynamic`; auto, torch's default, compiles static shapes first
and makes a size dynamic when it changes). `py@compile:max-autotune:dynamic=false` is one name; rows carry
it in the canonical form (mode first, defaults left out), so the same variant spelled twice is one series.

This module only parses names (no torch): the torch.compile wrapper and its counters live in compiling.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchctl.errors import UsageError

MARK = "@"
COMPILE = "compile"
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")  # torch.compile's modes
DYNAMIC = {"auto": None, "true": True, "false": False}  # dynamic=WORD -> torch.compile's `dynamic`
SYNTAX = f"IMPL{MARK}{COMPILE}[:MODE][:dynamic=true|false|auto], MODE one of {', '.join(MODES)}"


@dataclass(frozen=True)
class CompileSpec:
    """How torch.compile is called: its mode and its `dynamic` (None: torch decides, per size)."""

    mode: str = "default"
    dynamic: bool | None = None

    def suffix(self) -> str:
        """`@compile[:mode][:dynamic=..]`, defaults left out."""
        options = [self.mode] if self.mode != "default" else []
        if self.dynamic is not None:
            options.append(f"dynamic={str(self.dynamic).lower()}")
        return MARK + ":".join([COMPILE, *options])

    def describe(self) -> str:
        dynamic = {None: "auto", True: "true", False: "false"}[self.dynamic]
        return f"torch.compile (mode {self.mode}, dynamic {dynamic})"


def is_modified(name: str) -> bool:
    return MARK in name


def split(name: str) -> tuple[str, CompileSpec]:
    """`py@compile:max-autotune` -> ("py", CompileSpec("max-autotune")); a UsageError names what is wrong."""
    base, _, modifier = name.partition(MARK)
    word, *options = modifier.split(":")
    if not base or word != COMPILE:
        raise UsageError(f"unknown modifier in {name!r}; write {SYNTAX}")
    mode, dynamic = "default", None
    for option in options:
        key, eq, value = option.partition("=")
        if not eq and option in MODES:
            mode = option
        elif key == "dynamic" and value.lower() in DYNAMIC:
            dynamic = DYNAMIC[value.lower()]
        else:
            raise UsageError(f"unknown compile option {option!r} in {name!r}; write {SYNTAX}")
    return base, CompileSpec(mode, dynamic)


def canonical(name: str) -> str:
    """The name rows carry: `py@compile:default:dynamic=Auto` -> `py@compile` (unmodified names unchanged)."""
    if not is_modified(name):
        return name
    base, spec = split(name)
    return base + spec.suffix()

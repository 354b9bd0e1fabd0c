"""The words of a sweep's command line that need no operator to check: devices, passes, dtypes.

Torch-free on purpose: a command checks them before it imports torch or loads an operator file, so a
typo is answered in a fraction of a second, not after seconds of imports.
"""

from __future__ import annotations

from typing import Sequence

from benchctl.errors import UsageError
from benchctl.vocab import DEVICE_ALIASES, DEVICES, DTYPE_NAMES, PASSES


def split(text: str, what: str) -> list[str]:
    """The names of a comma list of `what` (operator, device, ...). An empty list or item is a usage error, not
    nothing: `--op "$OPS"` with OPS unset would otherwise time every operator."""
    names = [p.strip() for p in text.split(",")]
    if not any(names):
        raise UsageError(f"no {what} given ({text!r})")
    if not all(names):
        raise UsageError(f"an empty {what} in {text!r}")
    return names


def parse_devices(text: str) -> list[str]:
    """`cpu`, `gpu` (alias `cuda`), a comma list or `all` -> device names, each once."""
    names = split(text, "device")
    if "all" in names:
        return list(DEVICES)
    out = []
    for n in names:
        if n not in DEVICE_ALIASES:
            raise UsageError(f"unknown device {n!r}; choose from cpu, gpu, cuda, all")
        out.append(DEVICE_ALIASES[n])
    return list(dict.fromkeys(out))


def choices(given: Sequence[str], default: Sequence[str], valid: Sequence[str], what: str) -> list[str]:
    """`given` (else `default`), each checked against `valid`."""
    chosen = list(given or default)
    for v in chosen:
        if v not in valid:
            raise UsageError(f"unknown {what} {v!r}; choose from {', '.join(valid)}")
    return chosen


def check(devices: str | None = None, passes: str | None = None, dtypes: Sequence[str] = ()) -> None:
    """Every usage error in these words, before anything slow is imported."""
    if devices is not None:
        parse_devices(devices)
    if passes is not None:
        choices(split(passes, "pass"), (), PASSES, "pass")
    choices(dtypes, (), DTYPE_NAMES, "dtype")

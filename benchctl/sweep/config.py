"""configs/*.toml -> a frozen SweepConfig; every key is checked, so a typo is an error, not a no-op.

    ops = ["hoconv2d"]                   # optional: operators this config is for
    dtypes = ["float32"]
    passes = ["forward", "backward", "forward_backward"]
    [timing]                             # optional: the timing policy
    min_time = 0.05                      # seconds of samples per pass, at least
    max_time = 1.5                       # seconds per pass, at most
    min_samples = 5
    ci_target = 0.01                     # stop once the median is known to +-1% (0: at min_time)
    [params.hoconv2d]                    # any of the operator's params; a list is swept
    batch_size = [8, 16, 32]
    [targets]                            # optional: which targets of an operator to time
    hoconv2d = ["filter"]
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from benchctl.errors import UsageError
from benchctl.measure.timing import Policy

TOP_KEYS = {"ops", "dtypes", "passes", "timing", "params", "targets"}
TIMING_KEYS = {"min_time", "max_time", "min_samples", "max_samples", "warmup", "warmup_min_time", "warmup_time",
               "ci_target"}
# The counts of calls, as Policy's defaults type them; ci_target is a fraction, the rest seconds.
COUNT_KEYS = {key for key in TIMING_KEYS if isinstance(getattr(Policy(), key), int)}


@dataclass(frozen=True)
class SweepConfig:
    path: str | None = None
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()
    timing: Mapping[str, float] = field(default_factory=dict)
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    targets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def params_of(self, op: str) -> dict[str, Any]:
        """The params this config sets for operator `op` (none: the operator's own)."""
        return dict(self.params.get(op, {}))

    def targets_of(self, op: str) -> tuple[str, ...]:
        """The targets this config times of operator `op` (none: all of them)."""
        return self.targets.get(op, ())


def load_config(path: str | Path) -> SweepConfig:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"config file not found: {path}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:  # TOML is UTF-8 text
        raise UsageError(f"malformed config {path}: {exc}") from None
    except OSError as exc:
        raise UsageError(f"cannot read config {path}: {exc.strerror or exc}") from None
    return parse_config(data, str(path))


def parse_config(data: Mapping[str, Any], where: str = "config") -> SweepConfig:
    _known(data, TOP_KEYS, where)
    timing = data.get("timing", {})
    _known(timing, TIMING_KEYS, f"{where} [timing]")
    for key, value in timing.items():
        wrong = _timing_wrong(key, value)
        if wrong:
            raise UsageError(f"{where} [timing] {key} must be {wrong}, got {value!r}")
    params = data.get("params", {})
    if not isinstance(params, dict) or not all(isinstance(v, dict) for v in params.values()):
        raise UsageError(f"{where} [params] must hold one table per operator, e.g. [params.hoconv2d]")
    targets = data.get("targets", {})
    if not isinstance(targets, dict):
        raise UsageError(f"{where} [targets] must be a table: operator = [target, ...], e.g. hoconv2d = [\"filter\"]")
    return SweepConfig(
        path=where,
        ops=_strings(data, "ops", where),
        dtypes=_strings(data, "dtypes", where),
        passes=_strings(data, "passes", where),
        timing=dict(timing),
        params={op: dict(p) for op, p in params.items()},
        targets={op: _strings(targets, op, f"{where} [targets]") for op in targets},
    )


def _timing_wrong(key: str, value: Any) -> str | None:
    """What a [timing] value must be that it is not, in words; None where it is fine. A count is a whole number;
    nan passes every comparison and inf would never stop sampling, so a time is finite."""
    count, number = key in COUNT_KEYS, isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or (isinstance(value, float) and not math.isfinite(value)) or value < 0:
        return "a non-negative whole number" if count else "a non-negative finite number"
    if count and not isinstance(value, int):
        return "a non-negative whole number"
    if key == "ci_target" and value > 1:
        return "a fraction, at most 1"
    return None


def _strings(data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{where}: {key} must be a list of strings, got {value!r}")
    return tuple(value)


def _known(table: Any, allowed: set[str], where: str) -> None:
    if not isinstance(table, dict):
        raise UsageError(f"{where} must be a table")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r}; valid keys: {', '.join(sorted(allowed))}")

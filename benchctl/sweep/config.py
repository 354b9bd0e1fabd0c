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

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from benchctl.errors import UsageError

TOP_KEYS = {"ops", "dtypes", "passes", "timing", "params", "targets"}
TIMING_KEYS = {"min_time", "max_time", "min_samples", "max_samples", "warmup", "warmup_min_time", "warmup_time",
               "ci_target"}


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
        if not isinstance(value, (int, float)) or value < 0:
            raise UsageError(f"{where} [timing] {key} must be a non-negative number, got {value!r}")
    params = data.get("params", {})
    if not isinstance(params, dict) or not all(isinstance(v, dict) for v in params.values()):
        raise UsageError(f"{where} [params] must hold one table per operator, e.g. [params.hoconv2d]")
    return SweepConfig(
        path=where,
        ops=_strings(data, "ops", where),
        dtypes=_strings(data, "dtypes", where),
        passes=_strings(data, "passes", where),
        timing=dict(timing),
        params={op: dict(p) for op, p in params.items()},
        targets={op: tuple(t) for op, t in data.get("targets", {}).items()},
    )


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

"""What a worker process is started with, named once: the measuring settings, the operator folders, the
cell timeout, torch's threads, the memory limit, the allocator and the environment.

The plan builds one; a WorkerProcess starts from it, a series job carries it to the node that runs the
series, the worker reads it back from its setup line (`setup`, `from_setup`), and a node keeps one worker
per spec (`key`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Mapping, Sequence

from benchctl.machine import allocator
from benchctl.measure.execute import Settings
from benchctl.measure.timing import Policy
from benchctl.vocab import Allocator


def settings_to_json(settings: Settings) -> dict[str, Any]:
    return asdict(settings)


def settings_from_json(data: dict[str, Any]) -> Settings:
    return Settings(**{**data, "policy": Policy(**data["policy"])})


@dataclass(frozen=True)
class WorkerSpec:
    settings: Settings = field(default_factory=Settings)
    ops_dirs: Sequence[str] = ()
    timeout: float | None = None  # seconds a cell may take before its worker is killed
    threads: int | None = None  # torch's intra-op threads in the worker
    mem_limit: int | None = None  # bytes the worker may map beyond what it has at start
    allocator: str = Allocator.SYSTEM  # preloaded in the worker (machine/allocator.py)
    env: Mapping[str, str] = field(default_factory=dict)  # set for the worker, e.g. CUDA_VISIBLE_DEVICES

    def __post_init__(self) -> None:
        object.__setattr__(self, "ops_dirs", tuple(map(str, self.ops_dirs)))
        object.__setattr__(self, "env", dict(self.env))

    def with_(self, **changes: Any) -> "WorkerSpec":
        return replace(self, **changes)

    def process_env(self) -> dict[str, str]:
        """What the worker's environment adds: the allocator's preload, then `env`."""
        return {**allocator.preload_env(self.allocator), **self.env}

    def setup(self, key: str) -> dict[str, Any]:
        """The worker's first line: what it needs of the spec, and its signing key (channel.py)."""
        return {"ops_dirs": list(self.ops_dirs), "settings": settings_to_json(self.settings),
                "threads": self.threads, "mem_limit": self.mem_limit, "key": key}

    @staticmethod
    def from_setup(setup: Mapping[str, Any]) -> "WorkerSpec":
        return WorkerSpec(settings_from_json(setup["settings"]), setup.get("ops_dirs", ()),
                          threads=setup.get("threads"), mem_limit=setup.get("mem_limit"))

    def key(self) -> str:
        """Equal for specs that start the same worker."""
        return json.dumps([settings_to_json(self.settings), self.ops_dirs, self.timeout, self.threads,
                           self.mem_limit, self.env, self.allocator], sort_keys=True, default=str)

"""torch's process-wide settings as the worker gave them to a cell, held for it.

Some of torch's settings are global to the process, and code can set them (in its call, its import or its
`prepare`): torch's intra-op threads (`torch.set_num_threads`, as code written for a data loader's workers
does), the float32 matmul precision (TF32 on a GPU), cuDNN's TF32, the default dtype, deterministic
algorithms, grad mode, denormals flushed to zero, oneDNN and cuDNN on or off, cuDNN's benchmark mode (which
training code turns on at import) and determinism, anomaly detection (left on by debugging code: a small
backward took 2.1-2.2x as long), autocast, the default device; and the CPUs the process's threads may run on.
A change holds for every cell the worker times after it, its partner's in a pair first, and for itself it buys
time the others were not given (or costs time they did not pay). `Given` reads them before the cell and sets
back each one changed after it; the cell's rows say what changed. Each timed row's `threads` is the count
given, against which its calls' cores are held (cores.py).
"""

from __future__ import annotations

from typing import Any, Callable

import os
from collections import Counter

import torch

from benchctl.measure import correctness, cores
from benchctl.measure.clocks import thread_ids
from benchctl.measure.result import PassResult
from benchctl.measure.stats import join_messages


def _set_deterministic(on: bool) -> None:
    torch.use_deterministic_algorithms(on)


def _set_cudnn_tf32(on: bool) -> None:
    torch.backends.cudnn.allow_tf32 = on


def _flushes_denormals() -> bool:
    """Whether float32 denormals are flushed to zero (`torch.set_flush_denormal`, which has no getter): a denormal
    doubled reads 0. It changes results, and the time of a CPU that takes a slow path for denormals (the 2-core
    AMD EPYC VM takes none: a multiply of 1M denormals, 0.078 ms either way)."""
    return bool((torch.tensor([1e-39], dtype=torch.float32) * 2.0)[0] == 0)


def _set_flush_denormal(on: bool) -> None:
    torch.set_flush_denormal(on)


def _backend(module: Any, flag: str) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    """A flag of one of torch.backends' modules, read and set as an attribute."""
    return (lambda: getattr(module, flag)), (lambda on: setattr(module, flag, on))


def _autocast(device: str) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    return (lambda: torch.is_autocast_enabled(device)), (lambda on: torch.set_autocast_enabled(device, on))


UNSET = "unset"


def _default_device() -> str:
    """The device `torch.set_default_device` gave (code written for one GPU sets it at import), or UNSET: even
    "cpu" puts a mode in front of every torch function (a small CPU op took 10.3 us against 7.9 us)."""
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._device import DeviceContext

    modes = [m for m in _get_current_function_mode_stack() if isinstance(m, DeviceContext)]
    return str(modes[-1].device) if modes else UNSET


def _set_default_device(device: str) -> None:
    torch.set_default_device(None if device == UNSET else device)


class Affinity:
    """The CPUs each of the process's threads may run on (Linux's per-thread affinity, which code sets with
    `os.sched_setaffinity` or psutil's `cpu_affinity`, to leave cores to a data loader). Pinning every thread to one
    CPU made the next cell, honest, 10x slower (15.8 ms, 1.5 ms alone), its rows only `disturbed`. Two readings are
    equal where every thread may use the same CPUs in both; a thread in one reading only is held to that reading's
    main thread (a thread starts with its starter's CPUs, and torch's pool threads are started by the main one)."""

    def __init__(self, masks: dict[int, frozenset[int]]):
        self.masks = masks
        self.main = masks.get(os.getpid(), frozenset().union(*masks.values()))

    @classmethod
    def read(cls) -> Affinity:
        masks = {}
        for tid in map(int, thread_ids()):
            try:
                masks[tid] = frozenset(os.sched_getaffinity(tid))
            except OSError:  # a thread that ended since it was listed
                pass
        return cls(masks)

    def of(self, tid: int) -> frozenset[int]:
        return self.masks.get(tid, self.main)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Affinity) and all(self.of(t) == other.of(t) for t in {*self.masks, *other.masks})

    def set_back(self) -> None:
        """Every thread alive now to the CPUs it had when read (one started since: the main thread's)."""
        for tid in map(int, thread_ids()):
            try:
                os.sched_setaffinity(tid, self.of(tid))
            except OSError:
                pass

    def __str__(self) -> str:
        groups = Counter(self.masks.values())
        if len(groups) == 1:
            return _cpus(next(iter(groups)))
        return ", ".join(f"{_cpus(mask)} on {n} of {len(self.masks)} threads" for mask, n in groups.most_common())


def _cpus(mask: frozenset[int]) -> str:
    """CPUs as Linux lists them: 0-3,6."""
    runs: list[list[int]] = []
    for cpu in sorted(mask):
        if runs and cpu == runs[-1][-1] + 1:
            runs[-1].append(cpu)
        else:
            runs.append([cpu])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


# Each setting: its name in a row's message, how to read it, how to set it back.
SETTINGS: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]] = {
    "threads": (torch.get_num_threads, torch.set_num_threads),
    "float32 matmul precision": (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
    "cuDNN TF32": (lambda: torch.backends.cudnn.allow_tf32, _set_cudnn_tf32),
    "default dtype": (torch.get_default_dtype, torch.set_default_dtype),
    "deterministic algorithms": (torch.are_deterministic_algorithms_enabled, _set_deterministic),
    "grad mode": (torch.is_grad_enabled, torch.set_grad_enabled),
    "flush denormals": (_flushes_denormals, _set_flush_denormal),
    "oneDNN": _backend(torch.backends.mkldnn, "enabled"),
    "cuDNN": _backend(torch.backends.cudnn, "enabled"),
    "cuDNN benchmark": _backend(torch.backends.cudnn, "benchmark"),
    "cuDNN deterministic": _backend(torch.backends.cudnn, "deterministic"),
    "anomaly detection": (torch.is_anomaly_enabled, torch.set_anomaly_enabled),
    "autocast on the CPU": _autocast("cpu"),
    "autocast on the GPU": _autocast("cuda"),
    "default device": (_default_device, _set_default_device),
    "CPU affinity": (Affinity.read, Affinity.set_back),
}
OS_SETTINGS = {"CPU affinity"}  # the OS's, not torch's
UNREADABLE = object()  # a setting whose getter raised: neither judged nor set back


def _value(get: Callable[[], Any]) -> Any:
    """A setting's value; UNREADABLE where its getter raised (torch's float32 matmul precision, once code used the
    per-backend `fp32_precision` settings of torch 2.9, which are not held)."""
    try:
        return get()
    except Exception:
        return UNREADABLE


def read() -> dict[str, Any]:
    """Each setting (SETTINGS) as it is now."""
    return {name: _value(get) for name, (get, _) in SETTINGS.items()}


def ready(threads: int | None, tf32: bool | None) -> dict[str, Any]:
    """This process readied to run cells (a worker, or `run --in-process`) before any operator file is imported:
    torch's threads and TF32 as the run asks (None: torch's own), and the settings then (`start`, which Given
    sets a cell's back to)."""
    if threads:
        torch.set_num_threads(threads)
    correctness.set_tf32(tf32)
    return read()


class Given:
    """The settings as the worker gave them to a cell (read when made). With `start` (the settings as the worker
    began, before any operator file was imported), those an import changed since are set back first, and the
    cell's rows say so: an operator file that turns on anomaly detection or sets torch's threads as it is
    imported reaches every cell after it, its reference's first."""

    def __init__(self, start: dict[str, Any] | None = None) -> None:
        imported = _set_back(start, read()) if start is not None else ""
        self.imported = f"its operator's files changed {imported} as they were imported (set back)" if imported else ""
        self.given = read()

    def judged(self, results: list[PassResult]) -> list[PassResult]:
        """The cell's rows with the threads given, and what its code changed or its calls took beyond them; each
        setting changed is set back."""
        changed = self.restore()
        threads = self.given["threads"]
        out = []
        for result in results:
            said = [self.imported, changed, cores.beyond(result.cpu_cores, threads)]
            result = result.with_(threads=threads) if result.threads is not None else result  # a timed row's
            out.append(result.with_(message=join_messages(result.message, *said)) if any(said) else result)
        return out

    def restore(self) -> str:
        """Sets back every setting changed since the cell began; what the rows say of them, or ''."""
        changed = _set_back(self.given, read())
        if not changed:
            return ""
        return f"its code changed {changed} (set back after the cell): its time is not comparable with the others'"


def _set_back(given: dict[str, Any], found: dict[str, Any]) -> str:
    """Sets back each setting `found` differs in from `given` (both readable); whose settings and what changed,
    or ''."""
    changed = [name for name, value in found.items()
               if UNREADABLE not in (value, given[name]) and value != given[name]]
    for name in changed:
        SETTINGS[name][1](given[name])
    if not changed:
        return ""
    said = ", ".join(f"{name} {_text(given[name])} -> {_text(found[name])}" for name in changed)
    whose = "the process's settings" if OS_SETTINGS.intersection(changed) else "torch's settings for the process"
    return f"{whose}: {said}"


def _text(value: Any) -> str:
    return str(value).removeprefix("torch.")

"""The GPU's clocks through NVML (nvidia-ml-py): sampled around each GPU pass, and shown by `benchctl env`.

A GPU that throttles (hot, at its power cap) or idles down between calls runs the same kernel slower, and
nothing in the timing says so. `ClockGuard` samples the SM clock, the temperature and the clock-event
(throttle) reasons when a pass's measuring starts and ends, and between its samples (`tick`, outside
the clock and at most every SAMPLE_EVERY_S): never from a thread that could run inside a timed call.
Rows record the median SM clock, the highest temperature, and `throttled` when the clock stayed below
THROTTLED_BELOW of its maximum or a thermal or power reason was set. Without NVML (no driver, no
package), or where NVML refuses a reading (NotSupported, NoPermission), every value is None and nothing
fails.

The NVML module is passed in (`nvml=`), so tests drive all of it with a fake.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from benchctl.vocab import Device

THROTTLED_BELOW = 0.90  # a median SM clock under 90% of the maximum is a throttled pass
SAMPLE_EVERY_S = 0.02
# The reasons that mean the GPU was held back, not merely idle (NVML's clock-event reason names).
HELD_BACK = ("SwThermalSlowdown", "HwThermalSlowdown", "SwPowerCap", "HwPowerBrakeSlowdown", "HwSlowdown")


def load_nvml() -> Any | None:
    """pynvml, initialised, or None where NVML cannot run (no package, no driver, no GPU)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:  # NVMLError_LibraryNotFound, DriverNotLoaded, ImportError
        return None


def _reasons(nvml: Any, handle: Any) -> int:
    try:
        return int(nvml.nvmlDeviceGetCurrentClocksEventReasons(handle))
    except nvml.NVMLError_FunctionNotFound:  # a driver before R535 has only the older name
        return int(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))


def held_back(nvml: Any, mask: int) -> list[str]:
    """The names of the thermal and power reasons set in `mask`."""
    names = []
    for name in HELD_BACK:
        bit = getattr(nvml, f"nvmlClocksEventReason{name}", None) or getattr(nvml, f"nvmlClocksThrottleReason{name}", 0)
        if mask & int(bit):
            names.append(name)
    return names


@dataclass
class ClockGuard:
    """Samples one GPU when its `with` block opens, at `tick()` (between timed calls) and when it closes;
    closing it leaves the row's columns in `readings` (none where NVML gave no sample)."""

    nvml: Any
    index: int = 0
    every_s: float = SAMPLE_EVERY_S
    samples: list[tuple[int, int, int]] = field(default_factory=list)  # (SM MHz, deg C, reasons mask)
    _last: float = 0.0  # time.monotonic() of the last sample
    unreadable: bool = False  # NVML refused a reading: no more samples
    readings: dict[str, Any] = field(default_factory=dict)  # the row's columns, once the block has closed

    def __post_init__(self) -> None:
        self.handle = self.nvml.nvmlDeviceGetHandleByIndex(self.index)
        self.max_mhz = int(self.nvml.nvmlDeviceGetMaxClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))

    def sample(self) -> None:
        """One reading; none from the first NVML refuses (NotSupported on some virtual GPUs and
        containers): the pass is then timed without its clocks, never failed for them."""
        nvml, handle = self.nvml, self.handle
        if self.unreadable:
            return
        try:
            self.samples.append((int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
                                 int(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)),
                                 _reasons(nvml, handle)))
        except nvml.NVMLError:
            self.unreadable = True
        self._last = time.monotonic()

    def sm_mhz(self) -> float | None:
        """The SM clock now, or None where NVML refuses it (a reading of its own: not a sample)."""
        try:
            return float(self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))
        except self.nvml.NVMLError:
            return None

    def tick(self) -> None:
        """Between two timed calls: a sample if `every_s` has passed since the last."""
        if time.monotonic() - self._last >= self.every_s:
            self.sample()

    def __enter__(self) -> "ClockGuard":
        self.sample()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sample()
        self.readings = self._summary()

    def _summary(self) -> dict[str, Any]:
        if not self.samples:
            return {}
        clocks = [s[0] for s in self.samples]
        mask = 0
        for s in self.samples:
            mask |= s[2]
        median = statistics.median(clocks)
        reasons = held_back(self.nvml, mask)
        slow = self.max_mhz > 0 and median < THROTTLED_BELOW * self.max_mhz
        said = [*reasons, f"SM clock {median:.0f} of {self.max_mhz} MHz"] if slow else reasons
        return {"sm_clock_mhz": float(median), "gpu_temp_c": float(max(s[1] for s in self.samples)),
                "throttled": bool(said), "throttle_reasons": ", ".join(said)}


def nvml_index() -> int | None:
    """NVML's index of torch's current CUDA device. NVML numbers every GPU and ignores
    CUDA_VISIBLE_DEVICES, torch numbers the visible ones: a pool worker pinned to GPU 3 is torch's 0.
    None where torch cannot map it (MIG instances named in CUDA_VISIBLE_DEVICES)."""
    import torch

    try:
        return torch.cuda._get_nvml_device_index(torch.cuda.current_device())
    except RuntimeError:  # "device 0 is not visible": no GPU UUID matches the names in the variable
        return None


def guard(device: str, nvml: Any | None = None) -> ClockGuard | None:
    """A guard for the current CUDA device, or None on the CPU or without NVML."""
    if device != Device.CUDA:
        return None
    nvml = nvml or load_nvml()
    index = nvml_index() if nvml is not None else None
    if index is None:
        return None
    try:
        return ClockGuard(nvml, index)
    except nvml.NVMLError:  # this GPU's handle or maximum clock refused: time it without the guard
        return None


def clock_facts(nvml: Any | None = None, index: int | None = None) -> dict[str, Any]:
    """What `benchctl env` shows of a GPU's clocks (NVML's `index`, else torch's current device's): now
    and at most, whether application clocks are pinned, persistence mode, and the commands that lock the
    clocks for steadier timings."""
    nvml = nvml or load_nvml()
    index = nvml_index() if nvml is not None and index is None else index
    if nvml is None or index is None:
        return {}
    try:
        return _read_facts(nvml, index)
    except nvml.NVMLError as exc:  # e.g. application clocks NotSupported: env shows its other facts
        return {"gpu_clocks": f"not readable through NVML: {exc}"}


def _read_facts(nvml: Any, index: int) -> dict[str, Any]:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    sm, mem = nvml.NVML_CLOCK_SM, nvml.NVML_CLOCK_MEM
    max_sm = int(nvml.nvmlDeviceGetMaxClockInfo(handle, sm))
    app, default = (int(f(handle, sm)) for f in (nvml.nvmlDeviceGetApplicationsClock,
                                                 nvml.nvmlDeviceGetDefaultApplicationsClock))
    now = int(nvml.nvmlDeviceGetClockInfo(handle, sm))
    return {"gpu_sm_clock_mhz": now, "gpu_sm_clock_max_mhz": max_sm,
            # An idle GPU drops its clock; one that stays near its maximum while idle has them locked.
            "gpu_clocks_locked": "likely (idle at its maximum)" if now >= THROTTLED_BELOW * max_sm else "no",
            "gpu_mem_clock_mhz": int(nvml.nvmlDeviceGetClockInfo(handle, mem)),
            "gpu_app_clock_mhz": f"{app} (default {default}{', pinned' if app != default else ''})",
            "gpu_persistence_mode": "on" if nvml.nvmlDeviceGetPersistenceMode(handle) else "off",
            "gpu_lock_clocks": f"sudo nvidia-smi -i {index} -pm 1 && sudo nvidia-smi -i {index} -lgc {max_sm},{max_sm}"}

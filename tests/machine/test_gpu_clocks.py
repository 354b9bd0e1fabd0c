"""The GPU clock guard and `env`'s clock facts, driven by a fake NVML (no GPU here)."""

import time

import pytest
import torch

from benchctl.machine import gpu_clocks
from benchctl.machine.gpu_clocks import ClockGuard, clock_facts
from gpu_fakes import FakeNvml


def guarded(nvml) -> dict:
    with ClockGuard(nvml, every_s=0.001) as guard:
        for _ in range(5):  # five timed calls, a tick after each
            time.sleep(0.002)
            guard.tick()
    return guard.readings


def test_a_pass_at_full_clock_is_not_throttled():
    row = guarded(FakeNvml(clocks=[1980], temps=[55, 61, 58]))
    assert row == {"sm_clock_mhz": 1980.0, "gpu_temp_c": 61.0, "throttled": False, "throttle_reasons": ""}


def test_the_readings_are_the_rows_once_the_block_has_closed():
    with ClockGuard(FakeNvml(clocks=[1980])) as guard:
        assert guard.readings == {}  # a pass still running has no clock columns yet
    assert guard.readings["sm_clock_mhz"] == 1980.0 and len(guard.samples) == 2


def test_a_clock_below_90_percent_of_its_maximum_is_throttled():
    row = guarded(FakeNvml(clocks=[1500]))
    assert row["throttled"] and row["sm_clock_mhz"] == 1500.0
    assert row["throttle_reasons"] == "SM clock 1500 of 1980 MHz"


def test_a_thermal_or_power_reason_is_throttled_even_at_full_clock_but_idle_is_not():
    assert not guarded(FakeNvml(clocks=[1980], reasons=[0x1]))["throttled"]  # idle between calls
    row = guarded(FakeNvml(clocks=[1980], reasons=[0, 0x20 | 0x4, 0]))
    assert row["throttled"] and row["throttle_reasons"] == "SwThermalSlowdown, SwPowerCap"


def test_no_nvml_means_no_guard_and_no_failure(monkeypatch):
    monkeypatch.setattr(gpu_clocks, "load_nvml", lambda: None)
    assert gpu_clocks.guard("cuda") is None and gpu_clocks.guard("cpu", FakeNvml([1980])) is None
    assert clock_facts() == {}


def test_env_shows_clocks_persistence_and_the_command_that_locks_them():
    facts = clock_facts(FakeNvml(clocks=[345], app=1410, default_app=1755, persistence=1), index=0)
    assert facts["gpu_sm_clock_mhz"] == 345 and facts["gpu_sm_clock_max_mhz"] == 1980
    assert facts["gpu_clocks_locked"] == "no" and facts["gpu_persistence_mode"] == "on"
    assert facts["gpu_app_clock_mhz"] == "1410 (default 1755, pinned)"
    assert facts["gpu_lock_clocks"] == "sudo nvidia-smi -i 0 -pm 1 && sudo nvidia-smi -i 0 -lgc 1980,1980"
    assert clock_facts(FakeNvml(clocks=[1980]), index=0)["gpu_clocks_locked"] == "likely (idle at its maximum)"


def test_nvml_reads_the_gpu_torch_runs_on_which_cuda_visible_devices_renumbers(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")  # a pool worker pinned to the fourth GPU: torch's device 0
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert gpu_clocks.guard("cuda", FakeNvml(clocks=[1980])).handle == "gpu3"  # NVML ignores the variable
    assert clock_facts(FakeNvml(clocks=[1980]))["gpu_lock_clocks"].startswith("sudo nvidia-smi -i 3 -pm 1")


def test_mig_instances_in_cuda_visible_devices_mean_no_guard_and_no_failure(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-4f3c1d2e-0000-0000-0000-000000000000")
    monkeypatch.setattr(torch.cuda, "_raw_device_uuid_nvml", lambda: ["GPU-9a8b7c6d-0000-0000-0000-000000000000"])
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert gpu_clocks.guard("cuda", FakeNvml(clocks=[1980])) is None  # torch cannot name its NVML index
    assert clock_facts(FakeNvml(clocks=[1980])) == {}


class OldDriver(FakeNvml):
    """A driver before R535: nvidia-ml-py has the new name, the driver's library only the old one."""

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        raise self.NVMLError_FunctionNotFound()

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        return self._next(self.reasons)


class Refuses(FakeNvml):
    """A GPU (a virtual one, or in a container) whose NVML does not report what `refused` names."""

    def __init__(self, refused, **kw):
        super().__init__(clocks=[1980], **kw)
        for name in refused:
            setattr(self, name, self.refuse)

    def refuse(self, *args):
        raise self.NVMLError_NotSupported()


def test_a_driver_with_only_the_older_throttle_reasons_call_still_gives_them():
    assert guarded(OldDriver(clocks=[1980], reasons=[0x20]))["throttle_reasons"] == "SwThermalSlowdown"


def test_what_nvml_does_not_support_leaves_the_clocks_out_and_fails_nothing(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert guarded(Refuses(["nvmlDeviceGetCurrentClocksEventReasons"])) == {}  # the pass is timed all the same
    assert gpu_clocks.guard("cuda", Refuses(["nvmlDeviceGetMaxClockInfo"])) is None
    facts = clock_facts(Refuses(["nvmlDeviceGetApplicationsClock"]), index=0)
    assert list(facts) == ["gpu_clocks"] and facts["gpu_clocks"].startswith("not readable through NVML")


@pytest.mark.gpu
def test_the_real_nvml_reads_this_gpu():
    nvml = gpu_clocks.load_nvml()
    assert nvml is not None
    row = guarded(nvml)
    assert row["sm_clock_mhz"] > 0 and 0 < row["gpu_temp_c"] < 120

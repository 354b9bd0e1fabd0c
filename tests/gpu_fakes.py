"""A GPU as tests fake it where there is no GPU: NVML's calls for one GPU, and a stream whose work runs
after the host has moved on."""

import time


class FakeNvml:
    """NVML's calls and constants for one GPU whose SM clock, temperature and reasons follow a script."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0
    nvmlClocksEventReasonGpuIdle = 0x1
    nvmlClocksEventReasonSwPowerCap = 0x4
    nvmlClocksEventReasonSwThermalSlowdown = 0x20
    nvmlClocksEventReasonHwThermalSlowdown = 0x40
    nvmlClocksEventReasonHwSlowdown = 0x8
    nvmlClocksEventReasonHwPowerBrakeSlowdown = 0x80

    class NVMLError(Exception):
        pass

    class NVMLError_NotSupported(NVMLError):
        pass

    class NVMLError_FunctionNotFound(NVMLError):
        pass

    def __init__(self, clocks, temps=(60,), reasons=(0,), app=1755, default_app=1755, persistence=0):
        self.clocks, self.temps, self.reasons = list(clocks), list(temps), list(reasons)
        self.app, self.default_app, self.persistence = app, default_app, persistence

    def _next(self, values):
        return values.pop(0) if len(values) > 1 else values[0]

    def nvmlDeviceGetHandleByIndex(self, index):
        return f"gpu{index}"

    def nvmlDeviceGetMaxClockInfo(self, handle, kind):
        return 1980 if kind == self.NVML_CLOCK_SM else 2619

    def nvmlDeviceGetClockInfo(self, handle, kind):
        return self._next(self.clocks) if kind == self.NVML_CLOCK_SM else 2619

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return self._next(self.temps)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        return self._next(self.reasons)

    def nvmlDeviceGetApplicationsClock(self, handle, kind):
        return self.app

    def nvmlDeviceGetDefaultApplicationsClock(self, handle, kind):
        return self.default_app

    def nvmlDeviceGetPersistenceMode(self, handle):
        return self.persistence


class FakeStream:
    """A GPU stream as the host sees it: a launch returns at once and queues its work; `synchronize` waits
    (sleeps) until the work queued is done. `log` names each launch and each synchronise, in order."""

    def __init__(self):
        self.queued_s, self.log = 0.0, []

    def launch(self, name, seconds):
        self.log.append(name)
        self.queued_s += seconds

    def synchronize(self):
        time.sleep(self.queued_s)
        self.queued_s = 0.0
        self.log.append("sync")

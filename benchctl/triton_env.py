"""Whether Triton kernels run in Triton's interpreter in this process, decided when benchctl is imported.

Triton reads TRITON_INTERPRET when it decorates a function with `@triton.jit`, its own library
(`tl.sigmoid`, ...) included, and torch imports triton early (torch.utils.flop_counter does). So the
choice is made once, on `import benchctl`, before anything imports triton, without importing torch:
where this machine shows no GPU driver (no /proc/driver/nvidia/version, /dev/kfd or /dev/dxg) or
CUDA_VISIBLE_DEVICES hides every GPU, TRITON_INTERPRET is set to 1. A value the user set is kept, and
nothing is set when triton was imported already (the kernels and Triton's library must agree).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

INTERPRET_ENV = "TRITON_INTERPRET"
GPU_DRIVER_FILES = ("/proc/driver/nvidia/version", "/dev/kfd", "/dev/dxg")  # NVIDIA, AMD, WSL


def gpu_visible() -> bool:
    """A GPU driver is present and CUDA_VISIBLE_DEVICES (if set) leaves a device visible."""
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    if hidden is not None and hidden.strip() in ("", "-1"):
        return False
    return any(Path(f).exists() for f in GPU_DRIVER_FILES)


def interpret_without_gpu() -> bool:
    """Set TRITON_INTERPRET=1 where no GPU is visible (see the module docstring); whether it is on."""
    if INTERPRET_ENV not in os.environ and "triton" not in sys.modules and not gpu_visible():
        os.environ[INTERPRET_ENV] = "1"
    return os.environ.get(INTERPRET_ENV, "0") == "1"

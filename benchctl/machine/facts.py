"""Environment facts stamped on every run and shown by `benchctl env`."""

from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

import torch

from benchctl.machine import allocator, gpu_clocks, membw

REPO = Path(__file__).resolve().parents[2]


def git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                           capture_output=True, text=True, timeout=5).stdout.strip()
    return out.stdout.strip() + ("-dirty" if dirty else "")


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_name() -> str | None:
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.cuda.current_device())
    return None


def gpu_driver(version_file: Path = Path("/proc/driver/nvidia/version")) -> str | None:
    """The NVIDIA kernel driver's version ("... Kernel Module  550.54.15 ..."), or None without one."""
    try:
        match = re.search(r"Kernel Module\s+(?:for \S+\s+)?([0-9.]+)", version_file.read_text())
    except OSError:
        return None
    return match.group(1) if match else None


def environment() -> dict[str, Any]:
    """The facts every result row carries (results/schema.py ENV_FIELDS); node_id is set by whoever
    scheduled the cell, the host by default."""
    return {
        "git_sha": git_sha(),
        "host": socket.gethostname(),
        "node_id": socket.gethostname(),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "cpu_name": cpu_name(),
        "gpu_name": gpu_name(),
        "gpu_driver": gpu_driver() if torch.cuda.is_available() else None,
        "threads": torch.get_num_threads(),
        "allocator": allocator.current(),
    }


def _cpu_times(stat: Path) -> tuple[int, int]:
    """(busy, total) jiffies summed over all CPUs, from the first line of /proc/stat."""
    fields = [int(v) for v in stat.read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def busy_cores(interval: float = 0.3, stat: Path = Path("/proc/stat"),
               sleep: Callable[[float], None] = time.sleep) -> float | None:
    """How many cores other processes keep busy: /proc/stat sampled `interval` seconds apart while
    this process sleeps. None where /proc/stat is not available."""
    try:
        busy0, total0 = _cpu_times(stat)
        sleep(interval)
        busy1, total1 = _cpu_times(stat)
    except (OSError, ValueError, IndexError):
        return None
    if total1 <= total0:
        return None
    return (busy1 - busy0) / (total1 - total0) * (os.cpu_count() or 1)


def memory_setup(sys_root: Path = Path("/sys")) -> dict[str, Any]:
    """What decides the cost of first touching memory (the `page_faults` and `sys_s` columns):
    transparent huge pages (the mode in brackets), and whether freed memory goes back to a VM's host
    (free page reporting), so the pages of the next large allocation wait for the host again."""
    def read(path: str) -> str | None:
        try:
            return (sys_root / path).read_text().strip()
        except OSError:
            return None

    def selected(text: str | None) -> str | None:  # "always [madvise] never" -> "madvise"
        return text[text.index("[") + 1:text.index("]")] if text and "[" in text and "]" in text else text

    order = read("module/page_reporting/parameters/page_reporting_order")
    return {
        "transparent_hugepage": selected(read("kernel/mm/transparent_hugepage/enabled")),
        "free_page_reporting": None if order is None else f"on, blocks of {4 << int(order)} KiB and up",
    }


def details() -> dict[str, Any]:
    """Everything `benchctl env` shows: the row facts plus what explains a result."""
    return {
        **environment(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cuda_available": torch.cuda.is_available(),
        "cuda_devices": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "cudnn_version": torch.backends.cudnn.version() if torch.cuda.is_available() else None,
        "mkldnn": torch.backends.mkldnn.is_available(),
        "tf32": _tf32_setup(),
        "parallel": "; ".join(l.strip() for l in torch.__config__.parallel_info().splitlines()[1:3]),
        "busy_cores": _rounded(busy_cores()),
        "memory_read_gbps_now": _rounded(membw.probe()),
        **memory_setup(),
        **(gpu_clocks.clock_facts() if torch.cuda.is_available() else {}),
    }


def _tf32_setup() -> str:
    """Which float32 CUDA work torch lets round to TF32 (faster, ~1e-3 accurate)."""
    on = {"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn conv": torch.backends.cudnn.allow_tf32}
    return ", ".join(f"{name} {'on' if allowed else 'off'}" for name, allowed in on.items())


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)

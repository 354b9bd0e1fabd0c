"""Loading an operator's compiled libraries and registering its Python-side kernels, once per process.

The C++/CUDA libraries hold the compute kernels; autograd formulas and fake (meta) kernels are
registered from Python through torch.library, as torch.library.opcheck expects.
"""

from __future__ import annotations

from typing import Callable

import torch

from benchctl.ops import build


def load(op: str, device: str, register: Callable[[], None]) -> float:
    """Build if needed and load `op`'s libraries for `device`, then `register` its Python kernels;
    returns the seconds it took. The CPU library always loads: it defines the op schemas that the
    CUDA kernels attach to."""
    seconds = build.ensure_loaded(op, "cpu")
    if torch.device(device).type == "cuda":
        seconds += build.ensure_loaded(op, "cuda")
    register()
    return seconds


def register_once(anchor_op: str, register: Callable[[], None]) -> None:
    """Runs `register` once per process. The flag lives on torch's op object, which torch keeps for
    the whole process, so a second import of an operator module (under another name, from a test)
    does not register twice, which torch.library refuses."""
    packet = getattr(torch.ops.benchctl, anchor_op)
    if getattr(packet, "_benchctl_python_kernels", False):
        return
    register()
    packet._benchctl_python_kernels = True

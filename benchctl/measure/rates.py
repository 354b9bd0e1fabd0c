"""The rates of a pass and the floors they are held against: FLOPs and bytes, GFLOP/s and GB/s, the share
of this machine's roofline (`pct_of_peak`), and the least time any implementation could take here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from benchctl.machine import caches
from benchctl.measure import flops
from benchctl.measure.clocks import Thunk
from benchctl.ops.cells import Cell, Resolved
from benchctl.vocab import TF32_PEAK, Device, Pass


@dataclass(frozen=True)
class Floor:
    """The least time any implementation could take here, by its two bounds: its bytes at the fastest level
    calibrated (`bytes_s`), its FLOPs at the calibrated peak (`flops_s`)."""
    bytes_s: float = 0.0
    flops_s: float = 0.0

    def at_speed(self, canary_ratio: float | None) -> float | None:
        """The longer bound, the FLOP bound eased where the canary (machine/canary.py) read under its calibrated
        time around the pass: a floor errs towards passing an honest call. The canary says little of a large
        matmul's speed (matmul_peaks.at_matmul_speed), but a 2-core VM's bmm once did 209 GFLOP/s beside a canary
        at 0.93x, against a peak of 146 timed slow."""
        return max(self.bytes_s, self.flops_at(canary_ratio)) or None

    def flops_at(self, canary_ratio: float | None) -> float:
        """The FLOP bound, eased where the canary read under its calibrated time (at_speed)."""
        return self.flops_s * (min(1.0, canary_ratio) if canary_ratio else 1.0)


def rates(resolved: Resolved, setup: Callable[[], Thunk], pass_name: str, median: float,
          peaks: dict[str, Any], cold: bool = False) -> tuple[dict[str, Any], Floor]:
    """FLOPs (as torch counts them in a call of `setup`'s thunk, else the operator's formula: flops.py) and
    bytes (the formula) -> GFLOP/s, GB/s and % of the roofline bound, whose bandwidth is that of the cache
    level the pass's bytes fit in (machine/caches.py), or the largest copy's (DRAM) where each call started
    on caches flushed (`cold`, run --flush-caches: its inputs come from memory however small), and whose
    FLOP/s is this device's calibrated matmul rate in the pass's dtype; and the least time the pass could
    take here (least_time, by the fastest level still: declared bytes count re-reads a cache serves)."""
    cell, target = resolved.cell, resolved.target
    params, size = cell.params, cell.torch_dtype.itemsize
    fwd = (target.flops(params), target.bytes(params, size))
    bwd = (target.bwd_flops(params), target.bwd_bytes(params, size))
    declared, nbytes = {Pass.FORWARD: fwd, Pass.BACKWARD: bwd}.get(pass_name, (fwd[0] + bwd[0], fwd[1] + bwd[1]))
    torch_count = flops.counted(setup)
    flops_done = torch_count or declared
    out: dict[str, Any] = {"flops": flops_done, "bytes": nbytes,
                           "flops_source": "counted" if torch_count else "declared" if declared else None}
    if median > 0:
        out.update(per_second(flops_done, nbytes, median))
    ceilings = caches.levels(peaks)
    level, gflops = caches.level_for(nbytes, ceilings[-1:] if cold else ceilings), matmul_peak(peaks, cell)
    bound = max(nbytes / (level.gbps * 1e9) if level else 0.0, flops_done / (gflops * 1e9) if gflops else 0.0)
    if bound > 0 and median > 0:
        out["pct_of_peak"] = 100.0 * bound / median
        out["peak_level"] = level.name if level else None
    return out, least_time(flops_done, nbytes, ceilings, gflops)


def per_second(flops: float | None, nbytes: float | None, median: float) -> dict[str, float]:
    """GFLOP/s and GB/s of a pass whose median call takes `median` seconds (each where its count is known)."""
    out = {}
    if flops is not None:
        out["gflops"] = flops / median * 1e-9
    if nbytes is not None:
        out["gbps"] = nbytes / median * 1e-9
    return out


def least_time(flops: float | None, nbytes: float | None, ceilings: list[caches.Level],
               gflops: float | None) -> Floor:
    """The least time any implementation could take: its bytes at the fastest level calibrated (declared
    bytes count re-reads that a cache may serve), or its FLOPs at the calibrated peak, whichever is longer."""
    fastest = max((lv.gbps for lv in ceilings), default=None)
    return Floor(bytes_s=(nbytes or 0.0) / (fastest * 1e9) if fastest else 0.0,
                 flops_s=(flops or 0.0) / (gflops * 1e9) if gflops else 0.0)


def matmul_peak(peaks: dict[str, Any], cell: Cell) -> float | None:
    """The calibrated matmul GFLOP/s of the cell's dtype (a float32 GPU pass with TF32 allowed: the TF32
    rate), else the float32 one (a calibration from before the dtypes were measured)."""
    key = cell.dtype
    if cell.device == Device.CUDA and key == "float32" and torch.backends.cuda.matmul.allow_tf32:
        key = TF32_PEAK
    return peaks.get("gflops_by_dtype", {}).get(key) or peaks.get("gflops")

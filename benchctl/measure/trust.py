"""What a row says of whether its number can be trusted: the samples set aside as disturbed
(interference.py), the machine around the pass (its memory bandwidth, compute canary, the cores other processes
kept busy, and the OS's work), and a median under the pass's floor, which no implementation can beat.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from benchctl.machine import canary, load, membw
from benchctl.measure import cores
from benchctl.measure.clocks import OsUsage
from benchctl.measure.rates import Floor
from benchctl.measure.stats import busy_message, disturbed_message, join_messages, noisy_message
from benchctl.measure.timing import Measurement
from benchctl.results.schema import beside_work
from benchctl.vocab import Device, Status, Stop

FLOOR_MARGIN = 0.10  # a median this far under its byte floor is below_floor
# ... and this far under its FLOP floor: the float32 peak is the matmul's fastest reading of one calibration,
# and three calibrations on the 2-core VM stored 210-232 GFLOP/s while its readings over two minutes spread
# 198-238; a call that skips its work is far faster than either margin.
FLOP_FLOOR_MARGIN = 0.25
# memory read GB/s, the compute canary's s (None on a GPU), the machine's ticks
Probe = tuple[float | None, float | None, load.Ticks | None]


def probe(device: str = Device.CPU) -> Probe:
    """The machine right now: its memory read bandwidth (GB/s), its compute canary (s), and the CPU ticks of all
    processes and of this one (load.py), read last, so that a pass's two probes bracket it. On a GPU the ticks
    alone: a neighbour reaches a GPU pass only through its host (trust.beside), and the host's memory and
    canary say nothing of the kernels."""
    if device != Device.CPU:
        return None, None, load.ticks()
    return membw.probe(), canary.canary(), load.ticks()


def machine_around(before: Probe, after: Probe, peaks: Mapping[str, Any], threads: int | None) -> dict[str, Any]:
    """The cores other processes kept busy between a pass's two probes (`other_cores`), and where they read the
    machine (a CPU pass) its memory bandwidth and compute canary around it (the means of the readings before
    and after it), the canary against its calibrated time on the pass's `threads` (its row's)."""
    busy = {"other_cores": load.other_cores(before[2], after[2])}
    if None in (*before[:2], *after[:2]):
        return busy
    canary_s = (before[1] + after[1]) / 2
    return {"mem_gbps": (before[0] + after[0]) / 2, "canary_s": canary_s,
            "canary_ratio": canary.slowdown(canary_s, canary.calibrated_s(peaks, threads)), **busy}


def os_work(usage: Sequence[OsUsage]) -> dict[str, float]:
    """The median page faults of the sampled calls, the mean system CPU time of the middle half of them by
    wall time (`typical`; the OS splits CPU time into user and system by sampling at its clock ticks: rough
    for one short call, right on average) and the cores they kept busy (cores.py)."""
    if not usage:
        return {}
    found = {"page_faults": float(statistics.median(u.faults for u in usage)),
             "sys_s": statistics.fmean(u.sys_s for u in typical(usage))}
    busy = cores.busy(usage)
    return {**found, "cpu_cores": busy} if busy is not None else found


def typical(usage: Sequence[OsUsage]) -> Sequence[OsUsage]:
    """The calls whose wall time lies within the quartiles of theirs (all of them where fewer than four, or
    no wall time was read): the OS time of calls like the median call, which the `os` mark holds against it.
    A mean of every call let one slow call speak for the pass: a row of 8 samples with a first call of 268 ms,
    70x the others, read 36.6 ms of OS time a call against a median call of 3.79 ms."""
    walls = [u.wall_s for u in usage]
    if len(usage) < 4 or not any(walls):
        return usage
    low, _, high = statistics.quantiles(walls, n=4, method="inclusive")
    return [u for u in usage if low <= u.wall_s <= high]


def clean_calls(usage: Sequence[OsUsage], aside: Sequence[bool]) -> Sequence[OsUsage]:
    """The OS's work of the calls a row's statistics are from: those neither the watch nor the audit set aside
    (all of them where none or every one is, or where the flags are not one a call). A call whose threads waited for a
    CPU kept fewer cores busy than it asked for: on the 2-core Zen 5 VM, calls that split their work over two
    threads of their own read 1.94-1.96 cores timed in a loop, and 1.12-1.57 as a row, half its samples waiting."""
    if len(aside) != len(usage) or all(aside):
        return usage
    return [u for u, out in zip(usage, aside) if not out]


def disturbance(m: Measurement) -> dict[str, Any]:
    """What the row keeps of the samples set aside: their flags, their share, and on a CPU the median wait
    per call (a GPU's clock is in sm_clock_mhz already); and which were the audit's probes."""
    probe = {"probe": list(m.probe)} if any(m.probe) else {}
    if not m.disturbed:
        return probe
    wait = {"wait_s": statistics.median(m.readings)} if m.watched == "cpu" else {}
    return {"disturbed": list(m.disturbed), "disturbed_share": m.disturbed_share, **wait, **probe}


def doubts(m: Measurement) -> str:
    """What makes the median doubtful: disturbed, noisy (empty where nothing does)."""
    disturbed = m.stop == Stop.DISTURBED
    return join_messages(disturbed_message(m.disturbed, m.readings, m.median, m.watched) if disturbed else None,
                         noisy_message(m.stats) if m.noisy else None)


def beside(columns: Mapping[str, Any]) -> str:
    """What to say where other processes kept cores busy while the pass was timed (`beside_work`, of the whole
    row: a GPU pass's host time and median; empty where they did not): its threads may never have waited for a
    core and still read slow (memory, caches)."""
    return busy_message(columns["other_cores"], os.cpu_count() or 1) if beside_work(columns) else ""


def stray(per_call: Sequence[float]) -> str:
    """What to say where sampled GPU calls left work on another stream (clocks.CudaEventClock): their
    samples count that work, up to the moment the whole device was idle (empty where none did)."""
    count = sum(1 for s in per_call if s > 0)
    if not count:
        return ""
    return (f"{count} of {len(per_call)} calls left work on another stream after the call's own finished "
            f"(median {statistics.median(s for s in per_call if s > 0) * 1e6:.0f} us): timed to the whole "
            "device's end")


@dataclass(frozen=True)
class Around:
    """What was recorded around a pass's sampled calls: the probes before and after it (`probe`: the machine
    on a CPU, its ticks on a GPU), the OS's work of each call (CPU clock), and each call's host time and work
    left on other streams (GPU clock)."""
    probes: tuple[Probe, Probe] | None = None
    cpu_peaks: Mapping[str, Any] = field(default_factory=dict)
    usage: Sequence[OsUsage] | None = None
    host: Sequence[float] = ()
    stray: Sequence[float] = ()


def judged(columns: Mapping[str, Any], m: Measurement, around: Around, floor: Floor | None) -> dict[str, Any]:
    """What an ok pass's row (`columns`: its statistics and rates) adds of whether it can be trusted: the
    machine and the OS around it, the host side of its GPU calls, the samples set aside, its message with
    each doubt, and below_floor where its median beats the least time the pass can take here (`floor`)."""
    out = disturbance(m)
    if around.probes:
        out.update(machine_around(*around.probes, around.cpu_peaks, columns.get("threads")))
    if around.usage is not None:
        out.update(os_work(clean_calls(around.usage, m.aside)))
    if around.host:
        out["host_s"] = statistics.median(around.host)
    message = join_messages(columns.get("message"), stray(around.stray), doubts(m), beside({**columns, **out}))
    if message:
        out["message"] = message
    return {**out, **below_floor({**columns, **out}, floor)}


def below_floor(row: Mapping[str, Any], floor: Floor | None) -> dict[str, Any]:
    """A median more than FLOOR_MARGIN under the least time its bytes take at the fastest calibrated
    bandwidth, or more than FLOP_FLOOR_MARGIN under the time its FLOPs take at the calibrated peak (at the speed
    the row's canary read, where faster), cannot be a record: the call skipped work, or the clock missed it.
    The row keeps its samples, with status below_floor and a message."""
    median, ratio = row.get("median_s"), row.get("canary_ratio")
    if not floor or not median or (median * (1 + FLOOR_MARGIN) >= floor.bytes_s
                                   and median * (1 + FLOP_FLOOR_MARGIN) >= floor.flops_at(ratio)):
        return {}
    least_s = floor.at_speed(ratio)
    speed = f" (its peak at the {ratio:.2f}x canary read around the pass)" if ratio and ratio < 1 else ""
    said = (f"below the floor: {median * 1e3:.3g} ms, while moving {(row.get('bytes') or 0) / 1e6:.3g} MB and "
            f"doing {(row.get('flops') or 0) / 1e9:.3g} GFLOP take at least {least_s * 1e3:.3g} ms at this machine's "
            f"fastest calibrated bandwidth and peak{speed}: the call skipped work, or the clock missed it")
    return {"status": Status.BELOW_FLOOR, "message": join_messages(row.get("message"), said)}

"""The preflight of a sweep: what stands between the cells asked for and the first measurement.

Which cells can run here (each one that cannot, with its reason), the extensions the runnable ones need,
compiled now with a line each (a failed build makes its cells unavailable with the compiler's reason, and
never spends a worker's cell timeout), and the state of the machine at the start: cores kept busy by other
work and the memory bandwidth left to a CPU run. Nothing here prints; the caller shows what it says.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from benchctl.analysis.machine_lines import UNCALIBRATED, uncalibrated
from benchctl.machine import facts, membw
from benchctl.ops import extension, namespaces
from benchctl.ops.build import BuildError
from benchctl.ops.namespaces import Clash
from benchctl.ops.cells import Cell
from benchctl.results.schema import BUSY_WARN_CORES
from benchctl.vocab import Device

SLOW_MEMORY_SHARE = 0.6  # memory bandwidth at the start of a CPU run, as a share of the calibration's typical read
Key = tuple[str, str, str]  # (operator, implementation, device)


@dataclass
class Preflight:
    cells: Sequence[Cell]
    build_failures: dict[Key, str] = field(default_factory=dict)

    def reason(self, cell: Cell) -> str | None:
        """Why `cell` cannot run here, or None."""
        return self.build_failures.get((cell.op, cell.impl, cell.device)) or cell.resolve().unavailable_reason()

    def availability(self) -> tuple[list[Cell], dict[str, list[Cell]]]:
        """Cells that can run here, and the others grouped by the reason they cannot."""
        runnable, reasons = [], {}
        for cell in self.cells:
            reason = self.reason(cell)
            if reason:
                reasons.setdefault(reason, []).append(cell)
            else:
                runnable.append(cell)
        return runnable, reasons

    def clashes(self) -> list[Clash]:
        """Extensions of the runnable cells' operators that open one TORCH_LIBRARY namespace (read from
        their sources, before anything is loaded)."""
        runnable, _ = self.availability()
        found = {}
        for cell in runnable:
            ext = extension.behind(cell.resolve().impl)
            if ext is not None:
                found[(cell.op, ext.folder)] = True
        return namespaces.clashes(found)

    def build_extensions(self, say: Callable[[str], None]) -> None:
        """Compile what runnable cells need, with a status line each; a failure makes them unavailable.
        An Extension builds and loads in a child process, so a library that aborts the process loading
        it makes its cells unavailable with the reason it gave, and nothing else."""
        for clash in self.clashes():
            say(clash.line())
        runnable, _ = self.availability()
        for key in dict.fromkeys((c.op, c.impl, c.device) for c in runnable):
            impl = next(c for c in runnable if (c.op, c.impl, c.device) == key).resolve().impl
            hook = extension.isolated_build(impl)
            if hook is None:
                continue
            op_name, impl_name, device = key
            if extension.built_before(impl, device):
                say(f"{op_name} {impl_name} for {device}: built before (its cached library)")
                continue
            say(f"building {op_name} {impl_name} for {device} ...")
            try:
                seconds = hook(device)
            except BuildError as exc:
                self.build_failures[key] = f"{op_name} {impl_name}: {exc.summary}"
                say(f"  failed: {exc.summary}\n{exc.compiler_lines}")
                continue
            say(f"  ready in {seconds:.1f} s")


def unavailable_lines(runnable: Sequence[Cell], unavailable: Mapping[str, Sequence[Cell]]) -> list[str]:
    """A line per reason some cells cannot run here (`Preflight.availability`'s two): how many, and which
    (`triton, triton-channels on cpu`, or `everything on cuda` where no cell of the device can run)."""
    ran_on = {c.device for c in runnable}
    lines = []
    for reason, cells in unavailable.items():
        by_device: dict[str, dict[str, None]] = {}
        for c in cells:
            by_device.setdefault(c.device, {})[c.impl] = None
        which = "; ".join(f"{', '.join(impls)} on {device}" if device in ran_on else f"everything on {device}"
                          for device, impls in by_device.items())
        lines.append(f"{len(cells)} cell{'' if len(cells) == 1 else 's'} unavailable here ({which}): {reason}")
    return lines


def busy_cores_now(cells: Sequence[Cell], threads: int | None = None) -> tuple[float | None, str | None]:
    """Other work on the CPU makes timings noisy: torch's OpenMP threads wait out a busy core.
    The busy cores measured (None for a GPU-only run or without /proc/stat), and a warning if too many
    (`busy_warning`; `threads`: run --threads, None for torch's own count)."""
    if not any(c.device == Device.CPU for c in cells):
        return None, None
    busy = facts.busy_cores()
    if busy is None or busy < BUSY_WARN_CORES:
        return busy, None
    return busy, busy_warning(busy, os.cpu_count() or 1, threads)


def busy_warning(busy: float, cores: int, threads: int | None) -> str:
    """What `busy` cores of other work mean for a run on `threads` (None: torch's own, one a core): threads
    beyond the cores left wait for a core by whole scheduler ticks (docs/measuring.md, "Beside a busy
    neighbour"), so the warning names the count that fits; with none left, that the times are the other
    work's."""
    free = max(0, int(cores - busy + 0.5))
    said = f"about {busy:.1f} of {cores} cores are busy with other work"
    if free == 0:
        return f"{said}: no core is left free, so the times will be the other work's (passes marked `dist`)"
    if threads is not None and threads <= free:
        return (f"{said}: the {threads} thread(s) asked for fit in the cores left, but times still move with "
                "the caches and memory bandwidth it shares (compare ratios within this run)")
    return (f"{said}: torch's threads will wait for them, stalling calls by whole scheduler ticks (passes "
            f"marked `dist`); for times and ratios that hold, use --threads {free}, the cores left free")


def uncalibrated_warnings(cells: Sequence[Cell], peaks: Mapping[str, Any]) -> list[str]:
    """A warning for each device of `cells` that this machine's calibration (`peaks`) does not cover."""
    return [f"no calibration of this machine's {UNCALIBRATED[d][0]} (`benchctl env --calibrate` first, with nothing "
            f"else running): {UNCALIBRATED[d][1]}" for d in uncalibrated({c.device for c in cells}, peaks)]


def memory_bandwidth_now(cells: Sequence[Cell], cpu_peaks: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """Other tenants of the host can take half the memory bandwidth without using a core of this machine.
    The probe's GB/s (None for a GPU-only run), and a warning when it is well under what the calibration's
    probes typically read (their median; a calibration from before it kept one has only their best)."""
    if not any(c.device == Device.CPU for c in cells):
        return None, None
    now = membw.probe()
    usual = cpu_peaks.get("read_gbps_typical") or cpu_peaks.get("read_gbps")
    if not usual or now >= SLOW_MEMORY_SHARE * usual:
        return now, None
    return now, (f"memory bandwidth is {now:.0f} GB/s now, {now / usual:.0%} of the {usual:.0f} GB/s "
                 "calibrated: other work on this host is using it; memory-bound timings will be slower and "
                 "move (see each row's mem_gbps)")

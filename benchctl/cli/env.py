"""`benchctl env`: torch / CUDA / CPU / GPU facts; --calibrate measures this machine's peaks."""

from __future__ import annotations

import json

import click


@click.command("env")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--calibrate", is_flag=True, help="Measure copy GB/s and matmul GFLOP/s here and store them.")
def command(as_json: bool, calibrate: bool) -> None:
    """Torch, CUDA, CPU and GPU facts, and the measured peaks used for % of peak."""
    from benchctl.machine import canary
    from benchctl.measure import calibrate as cal, matmul_peaks
    from benchctl import console
    from benchctl.machine import facts as metadata
    from benchctl.ops.registry import cuda_device_reason

    facts = metadata.details()
    before = cal.load_peaks() if calibrate else {}
    if calibrate:
        with console.err.status("measuring copy and read bandwidth and matmul throughput ..."):
            cal.calibrate(["cpu"] + ([] if cuda_device_reason() else ["cuda"]))
    peaks = cal.load_peaks()
    if calibrate and (slower := canary.slower_than_before(before.get("cpu", {}), peaks.get("cpu", {}))):
        console.warn(slower)
    for device, p in peaks.items():
        read = f", {p['read_gbps']:.1f} GB/s read" if p.get("read_gbps") else ""
        facts[f"peak_{device}"] = f"{p['gbps']:.1f} GB/s copy{_held(p)}{read}, {p['gflops']:.1f} GFLOP/s matmul"
        if p.get("gflops_by_dtype"):
            facts[f"peak_{device}_matmul"] = _matmul_text(p["gflops_by_dtype"], p.get("matmul_slowdown", {}))
        if p.get("canary_s_by_threads"):
            facts[f"{device}_canary"] = _canary_text(p["canary_s_by_threads"]) + _windows_text(p)
        if device == "cpu":
            facts["cpu_canary_now"] = _canary_now(p)
        for level, v in p.get("levels", {}).items():
            facts[f"peak_{device}_{level}"] = f"{v['gbps']:.1f} GB/s copy{_held(v)} within {_size(v['bytes'])}"
        if p.get("copy_sizes"):
            facts[f"peak_{device}_by_size"] = "GB/s of a copy holding " + ", ".join(
                f"{_size(c['copy_bytes'])} {c['gbps']:.0f}" for c in p["copy_sizes"])
    if not peaks:
        facts["peaks"] = "not measured: run `benchctl env --calibrate`"
    if stale := matmul_peaks.stale_matmul_peaks(peaks.get("cpu", {})):
        facts["peak_cpu_matmul"] += f"; {stale}"
    facts["calibration_file"] = str(cal.calibration_path()) + _age(cal.calibration_path())
    if as_json:
        click.echo(json.dumps(facts, indent=2, default=str))
        return
    console.out.print(console.table("environment", ("fact", "value"), sorted(facts.items())))


def _held(copy: dict) -> str:
    """The bytes a calibrated copy held, source and destination (" of 512 MiB"); "" where not stored."""
    return f" of {_size(copy['copy_bytes'])}" if copy.get("copy_bytes") else ""


def _size(nbytes: float) -> str:
    """Bytes in MiB, or in GiB from 1 GiB: "480 MiB", "1.88 GiB"."""
    return f"{nbytes / 2**30:.3g} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.3g} MiB"


def _canary_now(peaks: dict) -> str:
    """The compute canary now, on each calibrated thread count, against its calibrated time: a machine slower than
    when it was calibrated by over SLOW_PHASE marks a sweep's passes `slow` ("397 us on 1 thread, 1.00x
    calibrated; 372 us on 2 threads, 1.50x calibrated"); where torch's threads read slow and one thread at speed,
    it says so, and where a count reads far faster than calibrated, that the calibration ran slow."""
    import torch
    from benchctl.analysis.canary_windows import slow_on_threads_alone
    from benchctl.analysis.timed_alike import threads_words
    from benchctl.machine import canary
    from benchctl.results.schema import FAST_CANARY, SLOW_PHASE

    threads = torch.get_num_threads()
    ratios, parts = {}, []
    for n in sorted({int(n) for n in peaks.get("canary_s_by_threads", {})} | {threads}):
        now = canary.canary_on(n)
        ratios[n] = canary.slowdown(now, canary.calibrated_s(peaks, n))
        said = f", {ratios[n]:.2f}x calibrated" if ratios[n] else ""
        parts.append(f"{now * 1e6:.0f} us on {threads_words(n)}{said}")
    alone = threads > 1 and slow_on_threads_alone(ratios.get(threads), ratios.get(1))
    faster = any(r and r < FAST_CANARY for r in ratios.values())
    return "; ".join(parts) + (f": slow on {threads_words(threads)}, at speed on one" if alone else "") + (
        f": over {SLOW_PHASE:.0%} faster than calibrated, so the calibration ran in a slow phase, and a pass as slow "
        "as it was cannot read slow; calibrate again" if faster else "")


def _age(path) -> str:
    """When the calibration was written, as " (written 3.3 h ago)" ('' where it was not)."""
    import time

    try:
        hours = (time.time() - path.stat().st_mtime) / 3600
    except OSError:
        return ""
    return f" (written {hours:.1f} h ago)"


def _canary_text(by_threads: dict[str, float]) -> str:
    """The compute canary's calibrated time per thread count: "397 us on 1 thread, 248 us on 2 threads"."""
    counts = sorted(by_threads, key=int)
    return ", ".join(f"{by_threads[n] * 1e6:.0f} us on {n} thread{'' if n == '1' else 's'}" for n in counts)


def _windows_text(peaks: dict) -> str:
    """How far the calibration's canary windows read from the fastest (the calibrated time) on each thread count:
    "; its 4 windows against the fastest: 1.00-1.01x on 1 thread, 1.00-1.73x on 2 threads" ('' for a calibration
    without them). A machine whose windows spread wide reads over the calibrated time most of the time, and marks
    passes `slow`; where only torch's threads spread, one thread is the steady part."""
    from benchctl.analysis import canary_windows as cw
    from benchctl.analysis.timed_alike import threads_words

    threads = peaks.get("threads") or 1
    counts = sorted({int(n) for n in peaks.get("canary_s_by_threads", {})} | {threads})
    spreads = {n: cw.spread(peaks, n) for n in counts}
    read = [f"1.00-{x:.2f}x on {threads_words(n)}" for n, x in spreads.items() if x]
    if not read:
        return ""
    moved = f": it moved on {threads_words(threads)}, held on one" if cw.only_threads_move(peaks, threads) else ""
    count = max(len(cw.windows(peaks, n)) for n in counts)
    return f"; its {count} windows against the fastest: " + ", ".join(read) + moved


def _matmul_text(rates: dict[str, float], slowdown: dict[str, float]) -> str:
    """Each dtype's calibrated matmul GFLOP/s, saying which were timed in a slow moment and raised (matmul_peaks'
    at_matmul_speed): "float32 187 (raised 1.44x: timed in a slow moment), float64 65"."""
    def text(dtype: str, rate: float) -> str:
        slow = slowdown.get(dtype, 1.0)
        return f"{dtype} {rate:.3g}" + (f" (raised {slow:.2f}x: timed in a slow moment)" if slow > 1.0 else "")
    return ", ".join(text(dt, v) for dt, v in rates.items())

"""Calibration: what is stored per host, and that it merges with what was stored before."""

import itertools
import json

import pytest

from benchctl.measure import calibrate, copies, matmul_peaks
from benchctl.machine import caches, load

RATE = {"float32": 1.0, "float64": 0.5, "float16": 4.0, "bfloat16": 4.0, "tf32": 2.0}  # x float32's
SIZES = {"cpu": [caches.CacheSize("L2", 1 << 20, 1), caches.CacheSize("L3", 32 << 20, 2)],
         "cuda": [caches.CacheSize("L2", 50 << 20, 1)]}


@pytest.fixture
def measured(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path))
    monkeypatch.setattr(copies, "copy_gbps", lambda device, nbytes=copies.COPY_BYTES:
                        {"cpu": 28.0, "cuda": 2800.0}[device] * copies.COPY_BYTES / nbytes)
    monkeypatch.setattr(copies, "cache_sizes", SIZES.get)
    monkeypatch.setattr(calibrate.torch, "get_num_threads", lambda: 2)
    monkeypatch.setattr(matmul_peaks, "matmul_gflops", lambda device, dtype="float32":
                        {"cpu": 130.0, "cuda": 48000.0}[device] * RATE[dtype])
    # the canary's windows (one thread, two), one before the peaks and one after each step: the machine in a
    # slow phase for all but the second; and the memory probes each read
    windows = itertools.cycle([calibrate.Window({1: 6e-4, 2: 4.5e-4}, [30.0, 12.0, 12.0]),
                               calibrate.Window({1: 4.1e-4, 2: 2.5e-4}, [52.5, 12.0, 12.0]),
                               calibrate.Window({1: 6.2e-4, 2: 4.4e-4}, [41.0, 12.0, 12.0])])
    monkeypatch.setattr(calibrate, "canary_window", lambda counts: next(windows) if counts else {})
    monkeypatch.setattr(matmul_peaks, "matmul_reading", lambda: 130.0)  # the float32 matmul at one speed throughout
    monkeypatch.setattr(calibrate.load, "others_busy", lambda: 0.1)  # nothing else running
    monkeypatch.setattr(calibrate.load, "Timeline", Watched)  # ... all through it


class Watched(load.Timeline):
    """The load timeline of a calibration, as `other_cores` says (quiet by default), without reading /proc."""

    other_cores: tuple[float, ...] = ()

    def __enter__(self):
        self.samples.extend({"t": t, "other_cores": c, "steal_cores": 0.0} for t, c in enumerate(self.other_cores))
        return self

    def __exit__(self, *exc):
        return None


def test_a_calibration_beside_other_work_stores_nothing(measured, monkeypatch):
    """A calibration under a neighbour holds every later run to what the neighbour left: it waits for the machine
    to be quiet, and where other work kept cores busy through a quarter of it or more, stores nothing."""
    readings = iter([1.0, 0.9, 0.2, 0.3, 0.1])
    monkeypatch.setattr(calibrate.load, "others_busy", lambda: next(readings))
    calibrate.calibrate(["cpu"])  # quiet at the fifth second: three in a row, once it read work
    assert next(readings, "all read") == "all read"
    stored = calibrate.calibration_path().read_text()
    monkeypatch.setattr(calibrate.load, "others_busy", lambda: 1.0)
    with pytest.raises(calibrate.BusyMachine, match=r"^other work keeps about 1\.0 cores busy \(for 10 s\)"):
        calibrate.calibrate(["cpu"])
    monkeypatch.setattr(calibrate.load, "others_busy", lambda: 0.1)

    monkeypatch.setattr(Watched, "other_cores", (1.0, 0.1, 0.1))
    with pytest.raises(calibrate.BusyMachine, match=r"^other work kept about 1\.0 cores busy through 33% of the "):
        calibrate.calibrate(["cpu"])
    assert calibrate.calibration_path().read_text() == stored


def test_the_cpu_peaks_include_the_best_memory_probe(measured):
    peaks = calibrate.calibrate(["cpu"])
    assert peaks["cpu"]["gbps"] == 28.0 and peaks["cpu"]["gflops"] == 130.0
    assert peaks["cpu"]["read_gbps"] == 52.5  # the best of the windows' probes: what the machine can give
    assert peaks["cpu"]["read_gbps_typical"] == 12.0  # their median (of 12, in four windows): what it usually gives
    assert peaks["cpu"]["canary_s"] == 2.5e-4  # the fastest of the canary's windows: a slow phase only slows it
    assert peaks["cpu"]["canary_s_by_threads"] == {"1": 4.1e-4, "2": 2.5e-4}  # a run may take one thread
    # before the peaks, and after each step, on each count
    assert peaks["cpu"]["canary_windows_by_threads"] == {"1": [6e-4, 4.1e-4, 6.2e-4, 6e-4],
                                                         "2": [4.5e-4, 2.5e-4, 4.4e-4, 4.5e-4]}
    assert json.loads(calibrate.calibration_path().read_text()) == peaks == calibrate.load_peaks()


def test_a_gpu_has_no_memory_probe_and_earlier_devices_are_kept(measured):
    calibrate.calibrate(["cpu"])
    calibrate.calibrate(["cuda"])
    stored = calibrate.load_peaks()
    assert set(stored) == {"cpu", "cuda"} and "read_gbps" not in stored["cuda"]
    assert stored["cpu"]["read_gbps"] == 52.5


def test_each_cache_level_is_timed_within_what_the_threads_can_hold_and_out_of_the_level_below(measured):
    levels = calibrate.calibrate(["cpu", "cuda"])
    cpu, cuda = levels["cpu"]["levels"], levels["cuda"]["levels"]
    assert cpu["L2"]["bytes"] == 2 << 20 and cpu["L3"]["bytes"] == 32 << 20  # two private L2s, one L3
    # the smallest level's copy has a source of a quarter of its capacity (source + destination: half)
    assert cpu["L2"]["gbps"] == pytest.approx(28.0 * copies.COPY_BYTES / (512 << 10))
    assert cpu["L2"]["copy_bytes"] == 1 << 20
    # L3's, twice the L2s' capacity (4 MiB, under a quarter of L3's 32): a VM's share of a large L3 is far less
    assert cpu["L3"]["gbps"] == pytest.approx(28.0 * copies.COPY_BYTES / (4 << 20))
    assert cpu["L3"]["copy_bytes"] == 8 << 20
    assert cuda["L2"]["bytes"] == 50 << 20 and cuda["L2"]["copy_bytes"] == 25 << 20
    assert cuda["L2"]["gbps"] == pytest.approx(2800.0 * copies.COPY_BYTES / (50 << 18))


def test_the_dram_copy_holds_four_times_the_largest_cache_where_that_is_more_than_its_own_size(measured,
                                                                                                monkeypatch):
    assert calibrate.calibrate(["cpu"])["cpu"]["copy_bytes"] == 2 * copies.COPY_BYTES  # a 32 MiB L3: 512 MiB
    held = []
    monkeypatch.setattr(copies, "copy_gbps", lambda device, nbytes=copies.COPY_BYTES: held.append(nbytes) or 1.0)
    monkeypatch.setattr(copies, "level_bytes", lambda device: {"L2": 192 << 20, "L3": 1152 << 20})  # a large server
    assert calibrate.calibrate(["cpu"])["cpu"]["copy_bytes"] == 4608 << 20  # source and destination, 4x the L3
    assert held[0] == 2304 << 20 and held.count(2304 << 20) == len(matmul_peaks.MATMUL_DTYPES["cpu"]) + 2


def test_every_window_also_times_a_copy_at_each_size_between_the_levels_and_dram(measured, monkeypatch):
    held = []
    monkeypatch.setattr(copies, "copy_gbps",
                        lambda device, nbytes=copies.COPY_BYTES: held.append(nbytes) or (1 << 40) / nbytes)
    cpu = calibrate.calibrate(["cpu"])["cpu"]
    # sources from L2's copy (512 KiB) doubling up to DRAM's (256 MiB), past L3's (4 MiB)
    between = [mib << 20 for mib in (1, 2, 8, 16, 32, 64, 128)]
    assert copies.between_sources("cpu") == between
    windows = len(matmul_peaks.MATMUL_DTYPES["cpu"]) + 2  # first, after each dtype's matmul, last
    assert [held.count(size) for size in between] == [windows] * len(between)  # as often as DRAM's and the levels'
    assert held.count(4 << 20) == held.count(copies.COPY_BYTES) == windows
    assert cpu["copy_sizes"] == [{"copy_bytes": (1 << 20) << k, "gbps": (1 << 40) / (512 << 10 << k)}
                                 for k in range(10)]  # source and destination, 1 MiB to 512 MiB


def test_each_copy_peak_is_the_fastest_of_windows_spread_over_the_calibration(measured, monkeypatch):
    """A VM's memory runs slow for ten seconds and more: one window of copies is the luck of when it was taken.
    A window is taken first, after each dtype's matmul rate, and last; each level keeps its fastest."""
    windows, drams = len(matmul_peaks.MATMUL_DTYPES["cpu"]) + 2, []  # a window times DRAM first, then each level

    def copy(device, nbytes=copies.COPY_BYTES):
        if nbytes == copies.COPY_BYTES:
            drams.append(nbytes)
            return 40.0 if len(drams) == 3 else 20.0  # fast in the third window
        return 300.0 if len(drams) == windows else 100.0  # the caches fast in the last
    monkeypatch.setattr(copies, "copy_gbps", copy)
    cpu = calibrate.calibrate(["cpu"])["cpu"]
    assert len(drams) == windows
    assert cpu["gbps"] == 40.0 and cpu["levels"]["L2"]["gbps"] == 300.0 and cpu["levels"]["L3"]["gbps"] == 300.0


def test_every_dtype_gets_its_own_matmul_rate_and_a_gpu_its_tf32_one(measured):
    peaks = calibrate.calibrate(["cpu", "cuda"])
    assert peaks["cpu"]["gflops_by_dtype"] == {"float32": 130.0, "float64": 65.0, "float16": 520.0,
                                               "bfloat16": 520.0}
    assert peaks["cuda"]["gflops_by_dtype"]["tf32"] == 96000.0 and peaks["cuda"]["gflops"] == 48000.0


def test_a_cpu_matmul_rate_timed_while_the_float32_matmul_read_slow_is_timed_again_then_raised(measured, monkeypatch):
    """The float32 matmul read before and after each rate: around float32 90 and 95 GFLOP/s (1.41x under the
    fastest reading, 130), around float64 120 and 130 (1.04x: within the readings' own noise), around float16 65 and
    130 (1.33x), around bfloat16 130 and 130 (at speed). The two timed slow are timed again, twice: float32's first
    retry finds the machine at speed (and its calls faster), float16's never do (nor are its calls faster), so its
    first rate stays, raised to the fastest reading."""
    readings = iter([90.0, 95.0, 120.0, 130.0, 65.0, 130.0, 130.0, 130.0,  # each dtype's first timing
                     130.0, 130.0, 70.0, 70.0,  # the first retries: float32, float16
                     90.0, 100.0])  # the second: float16 alone
    monkeypatch.setattr(matmul_peaks, "matmul_reading", lambda: next(readings))
    float32 = iter([130.0, 150.0])
    monkeypatch.setattr(matmul_peaks, "matmul_gflops", lambda device, dtype="float32":
                        next(float32) if dtype == "float32" else 130.0 * RATE[dtype])
    peaks = calibrate.calibrate(["cpu"])["cpu"]
    assert next(readings, "all read") == "all read"
    assert peaks["matmul_slowdown"] == pytest.approx({"float32": 1.0, "float64": 1.0, "float16": 130 / 97.5,
                                                      "bfloat16": 1.0})
    assert peaks["gflops_by_dtype"] == pytest.approx({"float32": 150.0, "float64": 65.0,
                                                      "float16": 520 * 130 / 97.5, "bfloat16": 520.0})
    assert peaks["gflops"] == 150.0
    assert "matmul_readings" not in peaks


def test_the_float32_peak_is_raised_no_further_than_its_own_fastest_reading():
    """The readings time the float32 peak's matmul (the fastest of three calls; a rate is the fastest of many): a
    float32 rate timed slow is raised to their fastest at most, another dtype by their ratio."""
    rates = {"float32": 120.0, "float16": 2.0, "bfloat16": 400.0}
    around = {"float32": (90.0, 95.0), "float16": (65.0, 130.0), "bfloat16": (130.0, 130.0)}
    raised, slow = matmul_peaks.at_matmul_speed(rates, around)
    assert raised == pytest.approx({"float32": 130.0, "float16": 2.0 * 130 / 97.5, "bfloat16": 400.0})
    assert slow == pytest.approx({"float32": 130 / 120, "float16": 130 / 97.5, "bfloat16": 1.0})
    assert matmul_peaks.at_matmul_speed({"float32": 140.0}, {"float32": (90.0, 130.0)})[0] == {"float32": 140.0}


def test_a_calibration_says_its_rule_and_one_raised_by_the_canary_reads_stale(measured):
    cpu = calibrate.calibrate(["cpu"])["cpu"]
    assert cpu["matmul_raised_by"] == matmul_peaks.MATMUL_RAISED_BY and matmul_peaks.stale_matmul_peaks(cpu) is None
    old = {"matmul_slowdown": {"float32": 1.74, "float64": 1.0, "bfloat16": 1.62}}
    assert matmul_peaks.stale_matmul_peaks(old).startswith(
        "the calibration raised its CPU matmul peaks by the compute canary's slowdown (float32 1.74x, bfloat16 1.62x)")
    assert matmul_peaks.stale_matmul_peaks({"matmul_slowdown": {"float32": 1.0}}) is None  # nothing was raised
    assert matmul_peaks.stale_matmul_peaks({}) is None  # older still: never raised


def test_a_gpu_matmul_rate_is_not_held_to_the_cpu_s_matmul(measured, monkeypatch):
    monkeypatch.setattr(matmul_peaks, "matmul_reading", lambda: pytest.fail("read the CPU's matmul for a GPU's rates"))
    peaks = calibrate.calibrate(["cuda"])["cuda"]
    assert peaks["gflops"] == 48000.0 and "matmul_slowdown" not in peaks


def test_a_matmul_reading_is_the_fastest_of_its_calls_at_the_float32_peak_s_size(monkeypatch):
    timed = []
    monkeypatch.setattr(matmul_peaks, "_matmul_rate", lambda device, dtype, n, policy: timed.append(
        (device, dtype, n, policy.max_samples)) or 200.0)
    monkeypatch.setattr(matmul_peaks, "matmul_size", lambda device, dtype: 512 if (device, dtype) == ("cpu", "float32")
                        else pytest.fail(f"sized {device} {dtype}"))
    matmul_peaks._reading_size.cache_clear()
    try:
        assert matmul_peaks.matmul_reading() == 200.0 and matmul_peaks.matmul_reading() == 200.0
    finally:
        matmul_peaks._reading_size.cache_clear()
    assert timed == [("cpu", "float32", 512, matmul_peaks.READING_CALLS)] * 2  # sized once: a slow CPU's float32 size


@pytest.fixture
def tf32_flag():
    """torch's TF32 matmul flag, put back after the test (monkeypatch cannot: cuBLAS's module has no
    attribute to delete or restore, only a setting behind __setattr__)."""
    matmul = calibrate.torch.backends.cuda.matmul
    before = matmul.allow_tf32
    yield matmul
    matmul.allow_tf32 = before


def test_a_matmul_is_timed_with_tf32_allowed_only_for_the_tf32_rate(monkeypatch, tf32_flag):
    seen = []

    def fake_measure(setup, clock, policy):
        seen.append((setup()().dtype, calibrate.torch.backends.cuda.matmul.allow_tf32))
        return type("M", (), {"median": 1e-3, "fastest": 1e-3})()

    monkeypatch.setattr(matmul_peaks, "measure", fake_measure)
    monkeypatch.setattr(matmul_peaks, "MATMUL_N", 8)
    tf32_flag.allow_tf32 = False
    assert matmul_peaks.matmul_gflops("cpu", "tf32") == pytest.approx(2 * 8**3 / 1e-3 * 1e-9)
    matmul_peaks.matmul_gflops("cpu", "float64")
    # each: a first call sizing the matmul, then the timing
    assert seen == [(calibrate.torch.float32, True)] * 2 + [(calibrate.torch.float64, False)] * 2
    assert tf32_flag.allow_tf32 is False  # put back as it was


@pytest.mark.parametrize(("gflops", "size"), [(188.0, 2048), (0.4, 256), (4.0, 512)])
def test_a_slow_dtype_is_timed_at_a_size_whose_call_stays_short(monkeypatch, gflops, size):
    """188 GFLOP/s: 91 ms per 2048 matmul, full size. float16 on an AMD EPYC's CPU (0.4 GFLOP/s) would
    take 43 s a call there: it stays at 256 (84 ms); 4 GFLOP/s goes to 512 (67 ms), not 1024 (0.54 s)."""
    sizes = []

    def fake_measure(setup, clock, policy):
        n = setup()().shape[0]
        sizes.append(n)
        return type("M", (), {"median": 2 * n**3 / (gflops * 1e9), "fastest": 2 * n**3 / (gflops * 1e9)})()

    monkeypatch.setattr(matmul_peaks, "measure", fake_measure)
    assert matmul_peaks.matmul_gflops("cpu", "float32") == pytest.approx(gflops)
    assert sizes == [256, size]


def test_a_canary_window_reads_each_thread_count_and_leaves_torch_threads_as_they_were(monkeypatch):
    before = calibrate.torch.get_num_threads()
    readings = iter(range(100))

    def probe():  # (GB/s, canary s) as a sweep reads them; one thread reads half the memory rate, 1e-3 s slower
        one = calibrate.torch.get_num_threads() == 1
        return 20.0 if one else 40.0, next(readings) * 1e-6 + (1e-3 if one else 0)

    monkeypatch.setattr(calibrate.trust, "probe", probe)
    with calibrate.canary.on_threads(2):  # torch's default threads here
        found = calibrate.canary_window((1, 2))
    assert found.canary_s == {1: pytest.approx(1e-3 + 5e-6), 2: pytest.approx(16e-6)}  # the median of 11 each
    assert found.read_gbps == [40.0] * 11  # the memory probes on torch's threads, as a sweep's start reads it
    assert calibrate.torch.get_num_threads() == before


@pytest.mark.parametrize("text, kept", [
    ("[]", set()), ('{"cpu": 1}', set()), ('{"cpu": {}}', set()), ('{"cpu": {"gbps": "x", "gflops": 1.0}}', set()),
    ('{"cpu": {"gbps": 30.5, "gflops": 230.0}, "cuda": {"gbps": true, "gflops": 5e4}}', {"cpu"}), ("{", set()),
])
def test_a_calibration_file_that_holds_no_rates_gives_no_peaks(monkeypatch, tmp_path, text, kept):
    """A damaged or foreign file: `env` and every floor read it, and a device without its rates has none."""
    monkeypatch.setenv("BENCHCTL_CACHE", str(tmp_path))
    calibrate.calibration_path().parent.mkdir(parents=True, exist_ok=True)
    calibrate.calibration_path().write_text(text)
    assert set(calibrate.load_peaks()) == kept


def test_a_canary_far_slower_than_the_calibration_it_replaces_reads_more_windows_for_the_machines_fast_state(
        measured, monkeypatch):
    """A calibration taken in a slow phase holds every run after it blind to the next: where its fastest window
    reads over 1.15x the calibration before, it reads more, and stops at one back near it."""
    calibrate.calibration_path().write_text(json.dumps(
        {"cpu": {"gbps": 28.0, "gflops": 130.0, "canary_s_by_threads": {"1": 4.0e-4, "2": 2.5e-4}}}))
    slow, fast = calibrate.Window({1: 4.0e-4, 2: 3.2e-4}, [30.0]), calibrate.Window({1: 4.0e-4, 2: 2.55e-4}, [30.0])
    windows = iter([slow] * 5 + [fast, slow])
    monkeypatch.setattr(calibrate, "canary_window", lambda counts: next(windows))
    peaks = calibrate.calibrate(["cpu"])
    assert peaks["cpu"]["canary_s_by_threads"] == {"1": 4.0e-4, "2": 2.55e-4}  # within 15% of 250 us: found
    assert len(peaks["cpu"]["canary_windows_by_threads"]["2"]) == 6 and next(windows) is slow  # none after it


def test_the_search_for_the_fast_state_ends_after_seek_s_on_a_machine_that_is_slower(monkeypatch):
    windows, now = [calibrate.Window({2: 3.2e-4}, [])], [0.0]

    def window(counts):
        now[0] += 7.0
        return calibrate.Window({2: 3.2e-4}, [])
    monkeypatch.setattr(calibrate, "canary_window", window)
    calibrate._seek_speed(windows, (2,), {"2": 2.5e-4}, clock=lambda: now[0])
    assert len(windows) == 1 + 9 and now[0] == 63.0  # a window begun before SEEK_S ran out, none after
    calibrate._seek_speed(windows, (2,), {"2": 2.9e-4}, clock=lambda: now[0])  # 1.10x: within 15%, nothing more
    calibrate._seek_speed(windows, (2,), {}, clock=lambda: now[0])  # the first calibration: nothing to seek
    assert len(windows) == 10

"""Charts from synthetic result rows: panels, one line per implementation, failed cells marked."""

from __future__ import annotations

import json

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from benchctl.report import charts as plotting
from benchctl.report import log_axis
from benchctl.report import roofline
from benchctl.results import storage

IMPLS = {"py": 10e-3, "cpp": 4e-3, "cuda": 0.5e-3}
BATCHES = (8, 16, 32, 64)


def make_row(impl: str, device: str, pass_name: str, batch: int, median: float | None = None,
             status: str = "ok", op: str = "hoconv2d", target: str = "module", **params) -> dict:
    params = {"C": 3, "H": 32, "W": 32, "k": 5, **params, "batch_size": batch}
    row = {"run_id": "r1", "op": op, "target": target, "impl": impl, "device": device, "dtype": "float32",
           "params": json.dumps(params, sort_keys=True), "axis": "batch_size", "axis_value": float(batch),
           "batch_size": batch, "pass": pass_name, "status": status}
    if status == "ok":
        median = median if median is not None else IMPLS[impl] * batch / 8
        samples = list(median * np.random.default_rng(batch).lognormal(0, 0.03, 9))
        row.update(n=9, median_s=float(np.median(samples)), samples_s=samples,
                   iqr_s=float(np.subtract(*np.percentile(samples, [75, 25]))), correct=True, max_rel_err=1e-7)
    else:
        row["message"] = f"{status} because of a test"
    return row


def frame(rows: list[dict]) -> pd.DataFrame:
    """Through the real parquet schema, so types are those a loaded run has."""
    return storage.to_table(rows).to_pandas()


def sweep(passes=("forward", "backward"), devices=("cpu", "cuda")) -> list[dict]:
    rows = []
    for device in devices:
        for pass_name in passes:
            for impl in IMPLS:
                for batch in BATCHES:
                    failed = impl == "cuda" and device == "cpu"
                    rows.append(make_row(impl, device, pass_name, batch, status="unavailable" if failed else "ok"))
    return rows


class Series:
    """A drawn series: its legend label and its data line (errorbar keeps the label on its container)."""

    def __init__(self, container):
        self.label, self.line = container.get_label(), container.lines[0]

    def get_label(self) -> str:
        return self.label

    def get_xdata(self):
        return self.line.get_xdata()

    def get_ydata(self):
        return self.line.get_ydata()


def series_lines(ax) -> list[Series]:
    return [Series(c) for c in ax.containers if str(c.lines[0].get_gid() or "").startswith("series:")]


def test_timing_figure_has_a_panel_per_device_and_pass_and_a_line_per_implementation():
    fig = plotting.timing_figure(frame(sweep()), "hoconv2d / module")
    titles = {ax.get_title(): ax for ax in fig.axes}
    assert set(titles) == {"CPU forward", "CPU backward", "GPU forward", "GPU backward"}
    gpu = titles["GPU backward"]
    assert sorted(line.get_label() for line in series_lines(gpu)) == ["cpp", "cuda", "py"]
    assert len(series_lines(titles["CPU forward"])) == 2  # cuda has no CPU times: no line, markers instead
    assert gpu.get_yscale() == "log" and gpu.get_xscale() == "log"
    assert list(gpu.get_xticks()) == list(BATCHES)  # log2 axis ticked at the batch sizes
    py = next(line for line in series_lines(gpu) if line.get_label() == "py")
    np.testing.assert_allclose(py.get_xdata(), BATCHES)
    np.testing.assert_allclose(py.get_ydata(), [10 * b / 8 for b in BATCHES], rtol=0.05)  # milliseconds


def test_a_gpu_panel_says_when_its_times_are_graph_replays_or_cold_cache():
    rows = sweep()
    for r in rows:
        if r["device"] == "cuda":
            r.update(timing_mode="cuda_graph" if r["pass"] == "forward" else "eager",
                     flush_l2=r["pass"] == "backward" and r["impl"] != "py")
    titles = {ax.get_title() for ax in plotting.timing_figure(frame(rows), "hoconv2d / module").axes}
    assert titles == {"CPU forward", "CPU backward", "GPU forward (cuda_graph)", "GPU backward (timed in several ways)"}


def test_a_cpu_panel_of_flushed_times_says_so_beside_an_untimed_row_that_recorded_no_flush():
    rows = [{**r, "flush_l2": True} for r in sweep(devices=("cpu",))]
    rows.append(make_row("triton", "cpu", "forward", 128, status="unavailable"))  # written before it was recorded
    titles = {ax.get_title() for ax in plotting.timing_figure(frame(rows), "hoconv2d / module").axes}
    assert titles == {"CPU forward (eager, caches flushed)", "CPU backward (eager, caches flushed)"}


def test_failed_cells_are_marked_with_their_status():
    rows = sweep(devices=("cuda",)) + [make_row("py", "cuda", "forward", 128, status="oom")]
    fig = plotting.timing_figure(frame(rows), "t")
    ax = next(a for a in fig.axes if a.get_title() == "GPU forward")
    marks = [c for c in ax.collections if c.get_gid() == "failed:oom"]
    assert len(marks) == 1
    assert marks[0].get_offsets()[0][0] == 128
    assert any(t.get_text() == "py: oom" for t in ax.texts)
    other = next(a for a in fig.axes if a.get_title() == "GPU backward")
    assert not [c for c in other.collections if str(c.get_gid()).startswith("failed:")]


def test_a_device_with_only_failures_still_gets_its_panel():
    rows = [make_row(i, "cuda", "forward", b, status="unavailable") for i in IMPLS for b in BATCHES]
    fig = plotting.timing_figure(frame(rows + sweep(("forward",), ("cpu",))[:4]), "t")
    gpu = next(a for a in fig.axes if a.get_title() == "GPU forward")
    assert not series_lines(gpu)
    assert {t.get_text() for t in gpu.texts} >= {"no successful measurements", "py: unavailable"}
    assert len([c for c in gpu.collections if c.get_gid() == "failed:unavailable"]) == 3


def test_non_axis_params_that_vary_become_separate_labelled_lines():
    rows = [make_row(i, "cpu", "forward", b, op="lstm_cell", target="op", hidden=h, median=1e-3 * h / 256)
            for i in ("py", "jit") for b in BATCHES for h in (256, 512)]
    fig = plotting.timing_figure(frame(rows), "lstm_cell")
    labels = sorted(line.get_label() for line in series_lines(fig.axes[0]))
    assert labels == ["jit (hidden=256)", "jit (hidden=512)", "py (hidden=256)", "py (hidden=512)"]
    assert "H=32" in fig.get_suptitle()  # the fixed params go to the subtitle, not every label


def test_speedup_is_baseline_time_over_implementation_time():
    df = frame(sweep(("forward",), ("cuda",)))
    df["speedup"] = plotting.speedups(df, "py")
    cpp = df[df["impl"] == "cpp"]
    np.testing.assert_allclose(cpp["speedup"], 2.5, rtol=0.1)
    assert (df.loc[df["impl"] == "py", "speedup"].round(9) == 1).all()
    fig = plotting.speedup_figure(df, "t", "py")
    ax = fig.axes[0]
    assert sorted(line.get_label() for line in series_lines(ax)) == ["cpp", "cuda"]


def test_speedup_is_nan_where_the_baseline_failed():
    rows = [make_row("py", "cuda", "forward", 8, status="oom"), make_row("cpp", "cuda", "forward", 8)]
    df = frame(rows)
    assert plotting.speedups(df, "py").isna().all()
    assert plotting.speedup_figure(df, "t", "py") is None


def test_speedups_pair_the_rounds_where_both_were_measured_in_rounds():
    rows = [make_row("py", "cpu", "forward", 8), make_row("cpp", "cpu", "forward", 8)]
    rows[0].update(median_s=0.004, round_medians_s=[0.004, 0.004, 0.006])
    rows[1].update(median_s=0.002, round_medians_s=[0.001, 0.002, 0.002])
    speedup = plotting.speedups(frame(rows), "py")
    assert speedup.tolist() == pytest.approx([1.0, 3.0])  # rounds 4x, 2x, 3x; the medians' ratio is 2x


def test_paired_speedups_carry_their_interval_as_bars_on_the_speedup_chart():
    rows = [make_row(i, "cpu", "forward", b) for i in ("py", "cpp") for b in (8, 16)]
    for row, lo, hi in zip(rows[2:], (2.9, 1.5), (3.2, 2.5)):
        row.update(paired_with="py", paired_speedup=3.0 if lo > 2 else 2.0, paired_ci_lo=lo, paired_ci_hi=hi)
    fig = plotting.speedup_figure(frame(rows), "t", "py")
    [bars] = [c for c in fig.axes[0].containers if c.get_label() == "cpp"]
    segments = bars.lines[2][0].get_segments()  # one vertical bar per point: (x, lo) -> (x, hi)
    assert [(s[0][1], s[1][1]) for s in segments] == [pytest.approx((2.9, 3.2)), pytest.approx((1.5, 2.5))]
    assert plotting.ci_bars(frame(rows[:2]).assign(speedup=1.0)) is None  # nothing paired: no bars


def test_speedups_measured_in_rounds_carry_the_range_of_the_rounds_ratios_as_bars():
    rows = [make_row("py", "cpu", "forward", 8), make_row("cpp", "cpu", "forward", 8)]
    rows[0].update(median_s=0.004, round_medians_s=[0.004, 0.004, 0.006])
    rows[1].update(median_s=0.002, round_medians_s=[0.001, 0.002, 0.002])
    fig = plotting.speedup_figure(frame(rows), "t", "py")
    [bars] = [c for c in fig.axes[0].containers if c.get_label() == "cpp"]
    [segment] = bars.lines[2][0].get_segments()
    assert (segment[0][1], segment[1][1]) == pytest.approx((2.0, 4.0))  # rounds 4x, 2x, 3x


def test_log_ticks_read_as_people_write_them():
    assert log_axis.tick_text(1.7000000000000002) == "1.7" and log_axis.tick_text(1e6) == "1000000"
    assert log_axis.tick_text(0.30000000000000004) == "0.3"


def shown_labels(lo: float, hi: float) -> list[str]:
    """The tick labels a log axis from lo to hi shows once drawn, after `tidy_log`."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_yscale("log"), ax.set_ylim(lo, hi)
    log_axis.tidy_log(ax)
    fig.canvas.draw()
    ticks = ax.yaxis.get_major_ticks() + ax.yaxis.get_minor_ticks()
    shown = sorted((t.get_loc(), t.label1.get_text()) for t in ticks if lo <= t.get_loc() <= hi and t.label1.get_text())
    plt.close(fig)
    return [text for _, text in shown]


def test_a_short_log_axis_labels_enough_ticks_to_read_a_value_off():
    assert shown_labels(0.86, 1.75) == ["1", "1.2", "1.4", "1.6"]  # a log axis's ticks there: 0.9 and 1
    assert shown_labels(0.6, 1.9) == ["0.6", "0.8", "1", "1.2", "1.4", "1.6", "1.8"]  # theirs: 0.6 to 1, none above
    assert log_axis.labels_within(3.5, 19, (1, 2, 3, 5)) == 2
    assert shown_labels(3.5, 19) == ["4", "5", "6", "7", "8", "9", "10"]  # every tick: 5 and 10 alone would be two
    assert shown_labels(0.6, 3.5) == ["1", "2", "3"]
    assert shown_labels(0.15, 40) == ["0.2", "0.5", "1", "2", "5", "10", "20"]  # 2 and 5 past two decades
    assert shown_labels(0.01, 300) == ["0.01", "0.1", "1", "10", "100"]  # the decades alone past three


def test_baseline_defaults_to_py_and_falls_back_with_a_note():
    assert plotting.resolve_baseline(["cpp", "py"]) == ("py", "")
    assert plotting.resolve_baseline(["vmap", "bmm"], "bmm") == ("bmm", "")
    name, note = plotting.resolve_baseline(["vmap", "bmm"])
    assert name == "bmm" and "'py' is not in these results" in note


def test_roofline_draws_the_measured_roof_when_known():
    rows = sweep(("forward",), ("cpu",))
    for row in rows:
        if row["status"] == "ok":
            row.update(flops=4e9, bytes=1e9, gflops=4e9 / row["median_s"] / 1e9, gbps=1e9 / row["median_s"] / 1e9)
    df = frame(rows)
    fig = roofline.roofline_figure(df, "t", {"cpu": {"gbps": 50.0, "gflops": 800.0}})
    ax = fig.axes[0]
    roof = next(line for line in ax.get_lines() if line.get_gid() == "roof")
    assert max(roof.get_ydata()) == pytest.approx(800.0)
    assert "measured peak" in ax.get_title()
    assert "peak not measured" in roofline.roofline_figure(df, "t", {}).axes[0].get_title()
    assert roofline.roofline_figure(frame(sweep()), "t") is None  # no rates: no roofline view
    levels = {"L2": {"bytes": 4 << 20, "gbps": 175.0}, "L3": {"bytes": 480 << 20, "gbps": 57.0}}
    cached = roofline.roofline_figure(df, "t", {"cpu": {"gbps": 27.0, "gflops": 400.0, "levels": levels}}).axes[0]
    roofs = {line.get_label(): line for line in cached.get_lines() if line.get_gid() == "roof"}
    assert sorted(roofs) == ["L2 175 GB/s (within 4 MiB)", "L3 57 GB/s (within 480 MiB)", "roof: 27 GB/s, 400 GFLOP/s"]
    l3 = roofs["L3 57 GB/s (within 480 MiB)"]  # a working set held in L3 is read at its rate, up to the FLOP roof
    assert l3.get_ydata()[0] == pytest.approx(57.0 * l3.get_xdata()[0]) and max(l3.get_ydata()) == pytest.approx(400.0)


def test_the_bandwidth_view_draws_each_cache_level_beside_dram():
    rows = [{**row, "bytes": 1e8, "gbps": 1e8 / row["median_s"] / 1e9} for row in sweep(("forward",), ("cpu",))
            if row["status"] == "ok"]  # no FLOPs: achieved GB/s against the sweep axis
    levels = {"L2": {"bytes": 2 << 20, "gbps": 150.0}, "L3": {"bytes": 32 << 20, "gbps": 160.0}}
    fig = roofline.roofline_figure(frame(rows), "t", {"cpu": {"gbps": 20.0, "gflops": 800.0, "levels": levels}})
    roofs = [line for line in fig.axes[0].get_lines() if line.get_gid() == "roof"]
    assert sorted(line.get_ydata()[0] for line in roofs) == [20.0, 150.0, 160.0]
    assert any(line.get_label().startswith("L3 160 GB/s") for line in roofs)
    timed = {"L3": {"bytes": 32 << 20, "gbps": 160.0, "copy_bytes": 8 << 20}}  # the copy's size kept: said
    fig = roofline.roofline_figure(frame(rows), "t", {"cpu": {"gbps": 20.0, "gflops": 800.0, "levels": timed}})
    labels = [line.get_label() for line in fig.axes[0].get_lines() if line.get_gid() == "roof"]
    assert "L3 160 GB/s (a copy of 8 MiB; holds 32 MiB)" in labels


def test_save_writes_a_decodable_png_and_an_svg(tmp_path):
    fig = plotting.timing_figure(frame(sweep()), "hoconv2d / module")
    png, svg = plotting.save(fig, tmp_path / "figs" / "time")
    image = matplotlib.image.imread(png)
    assert image.ndim == 3 and image.shape[0] > 300 and image.shape[1] > 600
    assert image[..., :3].std() > 0.05  # not a blank canvas
    assert "<svg" in svg.read_text()[:2000]


def test_large_sweep_values_tick_as_plain_numbers_or_powers_of_two():
    import matplotlib.pyplot as plt

    fig, (pow2, wide) = plt.subplots(1, 2)
    plotting.scale_x(pow2, "points", np.array([2.0**k for k in range(10, 21)]))
    fig.canvas.draw()
    labels = [t.get_text() for t in pow2.get_xticklabels()]
    assert labels[:4] == ["1024", "2048", "4096", "8192"] and labels[-1] == "$2^{20}$"
    plotting.scale_x(wide, "numel", np.array([1e3, 1e5, 3e6]))
    wide.set_xlim(1e3, 3e6)
    fig.canvas.draw()
    text = " ".join(t.get_text() for t in wide.get_xticklabels())
    assert "1000000" in text and "e" not in text.replace("$", "")  # no 1e+06, no x1e6 offset
    assert not wide.xaxis.get_offset_text().get_text()
    plt.close(fig)


def test_an_unset_param_is_left_out_of_titles_and_labels():
    rows = [make_row("py", "cpu", "forward", b, op="lstm_cell", H=64, I=None) for b in (8, 16)]
    grouped, fixed = plotting.with_groups(frame(rows))
    assert fixed == "C=3, H=64, W=32, dtype=float32, k=5" and set(grouped["group"]) == {""}


def test_the_time_chart_draws_the_roofline_where_peaks_are_calibrated():
    rows = [make_row(impl, "cpu", "backward", b) for impl in ("py", "cpp") for b in BATCHES]
    for row in rows:  # cpp counts fewer FLOPs than py: the lower bound of the two is drawn
        floor_ms = (0.5 if row["impl"] == "cpp" else 0.8) * row["batch_size"] / 8
        row["pct_of_peak"] = 100.0 * floor_ms * 1e-3 / row["median_s"]
    ax = plotting.timing_figure(frame(rows), "hoconv2d").axes[0]
    floor = next(line for line in ax.get_lines() if str(line.get_gid()).startswith("roofline:"))
    np.testing.assert_allclose(floor.get_xdata(), BATCHES)
    np.testing.assert_allclose(floor.get_ydata(), [0.5 * b / 8 for b in BATCHES])
    assert floor.get_label() == "roofline: bytes / copy GB/s of the level they fit, or FLOPs / peak"
    flushed = plotting.timing_figure(frame([{**r, "flush_l2": True} for r in rows]), "hoconv2d").axes[0]
    assert [line.get_label() for line in flushed.get_lines() if str(line.get_gid()).startswith("roofline:")] == [
        "roofline: bytes / DRAM copy GB/s (caches flushed), or FLOPs / peak"]
    bare = plotting.timing_figure(frame(sweep(devices=("cpu",))), "hoconv2d").axes[0]
    assert not [line for line in bare.get_lines() if str(line.get_gid()).startswith("roofline:")]

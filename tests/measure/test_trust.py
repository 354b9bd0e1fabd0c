"""trust.judged: what an ok pass's row says of whether its number can be trusted, from one record of what
was recorded around the pass."""

import os
import statistics

import pytest

from benchctl.measure import trust
from benchctl.measure.clocks import OsUsage
from benchctl.measure.rates import Floor
from benchctl.measure.stats import summarize
from benchctl.measure.timing import Measurement
from benchctl.results.schema import BUSY_WARN_CORES
from benchctl.vocab import Status

SAMPLES = (1.0e-3,) * 8  # enough for a 95% interval of the median, and not noisy


def _measured(samples=SAMPLES, **kw) -> Measurement:
    return Measurement(samples, stats=summarize(list(samples)), **kw)


def test_a_gpu_pass_gets_its_median_host_time_and_says_which_calls_left_work_on_another_stream():
    around = trust.Around(host=(2e-4, 1e-4, 3e-4, 1e-4, 1e-4), stray=(0.0, 0.0, 4e-5, 0.0, 6e-5))
    found = trust.judged({"median_s": 1e-3, "message": "timed alone: x"}, _measured(), around, None)
    assert found["host_s"] == pytest.approx(1e-4)
    assert found["message"] == ("timed alone: x; 2 of 5 calls left work on another stream after the call's own "
                                "finished (median 50 us): timed to the whole device's end")
    assert "status" not in found and "page_faults" not in found


def test_a_cpu_pass_gets_the_machine_and_the_os_around_it_and_no_message_where_nothing_is_doubtful():
    usage = [OsUsage(faults=f, sys_s=s) for f, s in [(2, 1e-5), (4, 3e-5), (3, 2e-5)]]
    around = trust.Around(probes=((30.0, 2e-4, None), (40.0, 4e-4, None)), cpu_peaks={"canary_s": 2e-4, "threads": 1},
                          usage=usage)
    found = trust.judged({"median_s": 1e-3, "threads": 1}, _measured(), around, None)
    assert found["mem_gbps"] == 35.0 and found["canary_s"] == pytest.approx(3e-4)
    assert found["canary_ratio"] == pytest.approx(1.5)
    assert found["page_faults"] == 3.0 and found["sys_s"] == pytest.approx(2e-5)
    assert "message" not in found and "host_s" not in found


def test_the_os_time_is_of_the_calls_like_the_median_one_not_of_one_slow_call():
    # seven calls of 4 ms, one in four given a 4 ms tick of OS time; a first call of 268 ms, nearly all OS time
    usage = [OsUsage(faults=10, sys_s=0.26, wall_s=0.268)]
    usage += [OsUsage(faults=10, sys_s=0.004 if i % 4 == 0 else 0.0, wall_s=0.004 + i * 1e-5) for i in range(1, 8)]
    found = trust.os_work(usage)
    assert statistics.fmean(u.sys_s for u in usage) > 0.03  # the mean of all: over half a 4 ms call
    assert found["sys_s"] == pytest.approx(0.004 / 4)  # the middle four of eight by wall time: one tick
    assert found["page_faults"] == 10.0
    few = usage[:3]
    assert trust.os_work(few)["sys_s"] == pytest.approx((0.26 + 0.0 + 0.0) / 3)  # under four calls: all of them


def test_a_pass_canary_is_held_to_the_time_calibrated_on_its_own_threads():
    peaks = {"canary_s": 3e-4, "threads": 2, "canary_s_by_threads": {"1": 4e-4, "2": 3e-4}}
    around = trust.Around(probes=((30.0, 4.1e-4, None), (30.0, 4.1e-4, None)), cpu_peaks=peaks)
    one = trust.judged({"median_s": 1e-3, "threads": 1}, _measured(), around, None)
    assert one["canary_ratio"] == pytest.approx(1.025)
    two = trust.judged({"median_s": 1e-3, "threads": 2}, _measured(), around, None)
    assert two["canary_ratio"] == pytest.approx(1.3667, abs=1e-4)
    four = trust.judged({"median_s": 1e-3, "threads": 4}, _measured(), around, None)
    assert four["canary_ratio"] is None  # not calibrated


def test_a_median_under_the_least_time_is_below_floor_and_its_message_keeps_what_came_before():
    around = trust.Around(host=(1e-4,) * 5, stray=(0.0, 0.0, 0.0, 0.0, 5e-5))
    found = trust.judged({"median_s": 1e-3, "bytes": 4e9, "flops": 0.0}, _measured(), around, Floor(bytes_s=2e-3))
    assert found["status"] == Status.BELOW_FLOOR
    first, second = found["message"].split("; ")
    assert first.startswith("1 of 5 calls left work on another stream")
    assert second.startswith("below the floor: 1 ms, while moving 4e+03 MB")
    within_margin = Floor(flops_s=1.05e-3)
    assert trust.judged({"median_s": 1e-3}, _measured(), trust.Around(), within_margin) == {}


def _canary_read(ratio: float) -> trust.Around:
    """A CPU pass whose canary read `ratio` times its calibrated 2.5e-4 s on both sides."""
    return trust.Around(probes=((20.0, 2.5e-4 * ratio, None),) * 2, cpu_peaks={"canary_s_by_threads": {"2": 2.5e-4}})


def test_the_flop_floor_is_taken_at_the_speed_the_canary_read_and_never_raised_by_a_slow_one():
    # a 2.72 GFLOP bmm at 13 ms against a 146 GFLOP/s peak timed while the machine was slow: 18.6 ms
    floor, row = Floor(bytes_s=1e-3, flops_s=2.72 / 146), {"median_s": 13e-3, "threads": 2, "flops": 2.72e9}
    fast = trust.judged(row, _measured((13e-3,) * 8), _canary_read(0.65), floor)
    assert fast["canary_ratio"] == pytest.approx(0.65) and "status" not in fast  # 18.6 ms * 0.65 = 12.1 ms
    at_speed = trust.judged(row, _measured((13e-3,) * 8), _canary_read(1.0), floor)
    assert at_speed["status"] == Status.BELOW_FLOOR and "at least 18.6 ms" in at_speed["message"]
    assert trust.judged(row, _measured((13e-3,) * 8), _canary_read(1.4), floor)["status"] == Status.BELOW_FLOOR
    # a call that skipped most of its work stays below a floor at the canary's speed, which the message says
    skipped = trust.judged({**row, "median_s": 5e-3}, _measured((5e-3,) * 8), _canary_read(0.8), floor)
    assert "at least 14.9 ms" in skipped["message"] and "its peak at the 0.80x canary" in skipped["message"]


def test_the_flop_floor_holds_a_wider_margin_than_the_byte_floor():
    """An honest matmul can beat a peak taken from one calibration's readings by their spread (210-232 GFLOP/s
    stored by three calibrations here): 20% under its FLOP floor is no proof of skipped work, 20% under its byte
    floor is."""
    row = {"median_s": 1e-3, "threads": 2}
    assert "status" not in trust.judged(row, _measured(), _canary_read(1.0), Floor(flops_s=1.2e-3))
    assert trust.judged(row, _measured(), _canary_read(1.0), Floor(flops_s=1.3e-3))["status"] == Status.BELOW_FLOOR
    assert trust.judged(row, _measured(), _canary_read(1.0), Floor(bytes_s=1.2e-3))["status"] == Status.BELOW_FLOOR
    assert "status" not in trust.judged(row, _measured(), _canary_read(1.0), Floor(bytes_s=1.05e-3))


def test_the_byte_floor_does_not_move_with_the_canary():
    # the memory probe did not follow the canary on the 2-core VM (correlation -0.25 over 90 s)
    floor, row = Floor(bytes_s=2e-3, flops_s=1e-4), {"median_s": 1e-3, "threads": 2}
    assert trust.judged(row, _measured(), _canary_read(0.5), floor)["status"] == Status.BELOW_FLOOR


def test_a_cpu_pass_timed_beside_other_work_says_so_whether_or_not_its_threads_waited():
    before, after = (30.0, 2e-4, (1000, 0, 2000, 100)), (30.0, 2e-4, (2000, 0, 4000, 100))  # half busy, none ours
    found = trust.judged({"median_s": 1e-3, "threads": 1}, _measured(), trust.Around(probes=(before, after)), None)
    cores = os.cpu_count() or 1
    assert found["other_cores"] == pytest.approx(0.5 * cores) and found["other_cores"] >= BUSY_WARN_CORES
    assert found["message"] == (f"busy: other work kept about {0.5 * cores:.1f} of {cores} cores busy while it "
                                "was timed: its time is that machine's, not a quiet one's")
    ours = (30.0, 2e-4, (2000, 0, 4000, 1100))  # the same busy ticks, all of them this process's
    quiet = trust.judged({"median_s": 1e-3}, _measured(), trust.Around(probes=(before, ours)), None)
    assert quiet["other_cores"] == 0.0 and "message" not in quiet


def test_a_gpu_pass_probes_only_the_ticks_and_is_busy_only_where_its_host_set_its_time(monkeypatch):
    monkeypatch.setattr(trust.load, "ticks", lambda: (1000, 0, 2000, 100))
    monkeypatch.setattr(trust.membw, "probe", lambda: pytest.fail("a GPU pass probes no host memory"))
    assert trust.probe("cuda") == (None, None, (1000, 0, 2000, 100))
    before, after = (None, None, (1000, 0, 2000, 100)), (None, None, (2000, 0, 4000, 100))  # half busy, none ours
    around = trust.Around(probes=(before, after), host=(0.9e-3,) * 5)
    cores = os.cpu_count() or 1
    issued = trust.judged({"device": "cuda", "median_s": 1e-3}, _measured(), around, None)
    assert issued["other_cores"] == pytest.approx(0.5 * cores) and "canary_s" not in issued
    assert issued["message"].startswith(f"busy: other work kept about {0.5 * cores:.1f} of {cores} cores busy")
    kernels = trust.judged({"device": "cuda", "median_s": 1e-3}, _measured(),
                           trust.Around(probes=(before, after), host=(0.2e-3,) * 5), None)
    assert kernels["other_cores"] == pytest.approx(0.5 * cores) and "message" not in kernels


def test_the_cores_a_row_kept_busy_are_those_of_the_calls_its_statistics_are_from():
    usage = [OsUsage(0, 0.0, cpu_s=2e-3, wall_s=1e-3), OsUsage(0, 0.0, cpu_s=1e-3, wall_s=1e-3),
             OsUsage(0, 0.0, cpu_s=2e-3, wall_s=1e-3)]
    around = trust.Around(usage=usage)
    aside = _measured(SAMPLES[:3], disturbed=(False, True, False))  # the call whose threads waited for a CPU
    assert trust.judged({"median_s": 1e-3}, aside, around, None)["cpu_cores"] == pytest.approx(2.0)
    for flags in [(), (True,) * 3, (False,) * 3, (False, True)]:  # none aside, all, or not one flag a call: all
        found = trust.judged({"median_s": 1e-3}, _measured(SAMPLES[:3], disturbed=flags), around, None)
        assert found["cpu_cores"] == pytest.approx(5 / 3)

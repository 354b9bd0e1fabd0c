"""The lines after a run's tables on what the machine did through it: its canary against the calibration, and
other work beside it."""

import pandas as pd

from benchctl.analysis.machine_lines import busy_run_line, slow_calibration_line, slow_run_line, threads_line


def test_a_run_whose_canary_read_far_under_its_calibrated_time_says_the_calibration_was_slow():
    ran = pd.DataFrame({"status": ["ok"] * 6 + ["error"], "canary_ratio": [0.55, 0.7, 0.71, 0.73, 0.6, 0.72, 0.1]})
    line = slow_calibration_line(ran)
    assert line is not None and line.startswith("6 of 6 CPU passes read the canary over 15% faster than calibrated (a "
                                                "median 0.70x its calibrated time, the fastest 0.55x)")
    assert "(1.82x the machine's fastest here)" in line
    assert slow_calibration_line(ran.assign(canary_ratio=[0.9, 1.0, 1.1, 0.95, 1.2, 0.88, 0.1])) is None  # at speed
    assert slow_calibration_line(ran.iloc[1:]) is None  # five passes are too few to say
    assert slow_calibration_line(ran.drop(columns="canary_ratio")) is None  # a GPU run


def test_a_run_a_third_of_whose_passes_read_far_faster_than_calibrated_says_so_though_its_median_is_near_1x():
    ratios = [0.75, 0.78, 0.8, 0.82, 0.96, 0.98, 1.05, 1.1, 1.2, 1.3, 1.4, 0.85]  # 5 of 12 under 1/1.15
    line = slow_calibration_line(pd.DataFrame({"status": ["ok"] * 12, "canary_ratio": ratios}))
    assert line is not None and line.startswith("5 of 12 CPU passes read the canary over 15% faster than calibrated "
                                                "(a median 0.97x its calibrated time, the fastest 0.75x)")
    two = pd.DataFrame({"status": ["ok"] * 12, "canary_ratio": [0.8] + ratios[4:] + [1.0] * 3})
    assert slow_calibration_line(two) is None  # 2 of 12: under a quarter, the machine's own moments


def test_a_run_whose_canary_read_far_over_its_calibrated_time_says_the_machine_ran_slow():
    ran = pd.DataFrame({"status": ["ok"] * 6 + ["oom"], "canary_ratio": [1.41, 1.3, 1.6, 1.5, 1.2, 1.35, 0.1]})
    line = slow_run_line(ran)
    assert line is not None and line.startswith("the canary read a median 1.38x its calibrated time over 6 CPU")
    assert "the machine ran slower through this run" in line and slow_calibration_line(ran) is None
    assert slow_run_line(ran.assign(canary_ratio=[1.1, 1.0, 1.2, 1.14, 0.9, 1.15, 3.0])) is None  # within 15%
    assert slow_run_line(ran.iloc[1:]) is None  # five passes are too few to say
    half = pd.DataFrame({"status": ["ok"] * 12, "canary_ratio": [1.5] * 6 + [1.0] * 6,
                         "other_cores": [1.0] * 6 + [0.0] * 6})  # the slow half timed beside other work
    assert slow_run_line(half) is None and slow_run_line(half.assign(other_cores=0.0)) is not None


# a calibration whose canary on two threads spread to 1.73x its fastest window while one thread's held within 1%
MOVING = {"threads": 2,
          "canary_windows_by_threads": {"1": [3.96e-4, 3.97e-4, 4.0e-4], "2": [2.59e-4, 4.48e-4, 2.6e-4]}}


def test_a_run_with_many_slow_passes_on_a_machine_whose_threads_moved_and_one_held_points_to_one_thread():
    ran = pd.DataFrame({"device": "cpu", "status": ["ok"] * 10, "threads": 2,
                        "canary_ratio": [1.7, 1.68, 1.0, 1.02, 1.03, 1.05, 1.01, 1.04, 1.02, 1.0]})
    assert threads_line(ran, MOVING) == (
        "2 of 10 CPU passes on 2 threads were marked slow: this machine's speed moves on 2 threads (the "
        "calibration's canary windows 1.00-1.73x the fastest) and holds on one (1.00-1.01x); `--threads 1` times on "
        "the steady part, and its compute-bound times hold closer from run to run")
    assert threads_line(ran.assign(canary_ratio=[1.7] + [1.0] * 9), MOVING) is None  # 1 of 10: under a fifth
    assert threads_line(ran.assign(threads=1), MOVING) is None  # the run took one thread already
    assert threads_line(ran, {**MOVING, "canary_windows_by_threads": {"2": [2.59e-4, 4.48e-4]}}) is None  # no 1
    assert threads_line(ran, None) is None  # a run without a calibration
    assert threads_line(ran.iloc[:5], MOVING) is None  # five passes are too few to say
    assert threads_line(ran.assign(device="cuda"), MOVING) is None  # a GPU's passes have no canary


def test_a_run_beside_other_work_says_how_much_and_counts_the_passes_it_disturbed():
    ran = pd.DataFrame({"device": ["cpu"] * 5, "status": ["ok", "ok", "ok", "oom", "ok"],
                        "stop": ["disturbed", "converged", "disturbed", None, "max_time"]})
    line = busy_run_line(ran, {"cores": 1.0, "share": 0.95}, 2)
    assert line is not None and line.startswith("other work kept about 1.0 of 2 cores busy through 95% of this run: "
                                                "2 of 4 CPU passes stopped `disturbed`")
    assert busy_run_line(ran, None, 2) is None
    beside = busy_run_line(ran.assign(other_cores=[0.1, 1.0, 0.9, 1.0, 0.2]), {"cores": 1.0, "share": 0.5}, 2)
    assert beside is not None and ": 2 of 4 CPU passes stopped `disturbed` and 1 more were timed beside it (`busy`)" \
        in beside
    timed = busy_run_line(ran.assign(stop="converged", other_cores=1.0), {"cores": 1.0, "share": 0.5}, 2)
    assert timed is not None and ": 4 of 4 CPU passes were timed beside it (`busy`), their times" in timed
    assert timed.endswith("measure again with it gone") and beside.endswith("--threads that fit in the cores it left")
    between = busy_run_line(ran.assign(stop="converged", other_cores=0.1), {"cores": 1.0, "share": 0.2}, 2)
    assert between == ("other work kept about 1.0 of 2 cores busy through 20% of this run: no CPU pass was timed "
                       "beside it")
    calm = busy_run_line(ran.assign(stop="converged"), {"cores": 0.8, "share": 0.48}, 2)  # a run before other_cores
    assert calm is not None and calm.startswith("other work kept about 0.8 of 2 cores busy through 48% of this run: "
                                                "no CPU pass stopped `disturbed`, but those measured beside it may")


def test_host_bound_gpu_passes_timed_beside_other_work_are_counted_and_device_bound_ones_are_not():
    ran = pd.DataFrame({"device": ["cuda"] * 3, "status": ["ok"] * 3, "stop": ["converged"] * 3,
                        "other_cores": [1.0] * 3, "median_s": [1e-4] * 3, "host_s": [0.95e-4, 0.9e-4, 0.1e-4]})
    line = busy_run_line(ran, {"cores": 1.0, "share": 0.5}, 2)
    assert line is not None and line.startswith("other work kept about 1.0 of 2 cores busy through 50% of this run: "
                                                "2 host-bound GPU passes were timed beside it, their times")
    kernels = busy_run_line(ran.assign(host_s=0.1e-4), {"cores": 1.0, "share": 0.5}, 2)
    assert kernels == ("other work kept about 1.0 of 2 cores busy through 50% of this run: no host-bound GPU pass "
                       "was timed beside it (their kernels set their times)")
    both = busy_run_line(pd.concat([ran.assign(host_s=0.1e-4), ran.assign(device="cpu", other_cores=0.1)]),
                         {"cores": 1.0, "share": 0.5}, 2)
    assert both is not None and both.endswith(": no CPU pass was timed beside it")


def test_a_run_on_a_device_its_machine_had_no_calibration_for_says_what_its_passes_went_without():
    from benchctl.analysis.machine_lines import uncalibrated_line

    ran = pd.DataFrame({"status": ["ok", "ok", "unavailable"], "device": ["cpu", "cpu", "cuda"]})
    line = uncalibrated_line(ran, {})
    assert line.startswith("the machine had no calibration of its CPU when this run measured it, so its CPU passes "
                           "had no wait for the machine to be at speed, no `slow` mark")
    assert "GPU" not in line and line.endswith("run `benchctl env --calibrate` with nothing else running, then "
                                               "measure again")
    assert uncalibrated_line(ran, {"cpu": {"canary_s": 2e-4}}) is None
    assert uncalibrated_line(ran, None) is None  # a run that kept no record of its calibration says nothing
    both = uncalibrated_line(ran.assign(status="ok"), {"cpu": {}})
    assert both.index("its CPU") < both.index("its GPU passes had no % of the GPU's peak and no floor check")

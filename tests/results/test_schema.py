"""schema's rules on a row: which passes were timed beside other work, which GPU passes their host set."""

import math

from benchctl.results.schema import BUSY_WARN_CORES, HOST_BOUND, beside_work, host_bound, own_aside


def test_a_gpu_pass_is_host_bound_from_its_host_time_over_its_median():
    assert host_bound({"host_s": HOST_BOUND * 1e-3, "median_s": 1e-3})
    assert not host_bound({"host_s": 0.5 * HOST_BOUND * 1e-3, "median_s": 1e-3})
    assert not host_bound({"host_s": math.nan, "median_s": 1e-3}) and not host_bound({"median_s": 1e-3})
    assert not host_bound({"host_s": 0.0, "median_s": 0.0})


def test_a_busy_neighbour_marks_every_cpu_pass_and_only_the_gpu_passes_whose_host_set_the_time():
    busy = {"other_cores": BUSY_WARN_CORES, "median_s": 1e-3}
    assert beside_work({**busy, "device": "cpu"}) and beside_work(busy)  # a row from before `device` was read
    assert beside_work({**busy, "device": "cuda", "host_s": 0.95e-3})
    assert not beside_work({**busy, "device": "cuda", "host_s": 0.1e-3})  # its kernels, not its host, set it
    assert not beside_work({**busy, "device": "cuda"})  # no host time: not known to be host-bound
    assert not beside_work({"other_cores": 0.9 * BUSY_WARN_CORES, "device": "cpu"})
    assert not beside_work({"other_cores": math.nan, "device": "cpu"}) and not beside_work({"device": "cpu"})


def test_a_rows_own_samples_set_aside_are_its_disturbed_ones_and_its_probes_where_each_fits():
    row = {"samples_s": [1.0, 2.0, 3.0], "disturbed": [True, False, False], "probe": [False, False, True]}
    assert own_aside(row) == [True, False, True]
    assert own_aside({**row, "probe": [True]}) == [True, False, False]  # a list not one a sample is not read
    assert own_aside({**row, "disturbed": None}) == [False, False, True]
    assert own_aside({"samples_s": [1.0], "disturbed": float("nan")}) == []  # a row from before them


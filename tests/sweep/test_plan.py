"""A sweep's plan: the timing settings from the config and the command line."""

import pytest

from benchctl.errors import UsageError
from benchctl.sweep.config import SweepConfig
from benchctl.sweep.plan import Plan


def test_command_line_timing_overrides_the_config_and_the_rest_keeps_its_defaults():
    config = SweepConfig(timing={"min_time": 0.3, "warmup_time": 2.0, "warmup": 3})
    policy = Plan([], config, warmup_time=0.1).settings().policy
    assert (policy.min_time, policy.warmup_time, policy.warmup) == (0.3, 0.1, 3)
    assert Plan([]).settings().policy.warmup_time == 0.5


def test_the_time_bound_given_wins_over_the_default_and_two_that_conflict_are_an_error():
    assert Plan([], min_time=3.0).settings().policy.max_time == 6.0
    assert Plan([], min_time=3.0, max_time=4.0).settings().policy.max_time == 4.0
    assert Plan([], max_time=0.02).settings().policy.min_time == 0.02  # below the default min_time
    assert Plan([], SweepConfig(timing={"min_time": 3.0}), max_time=4.0).settings().policy.min_time == 3.0
    with pytest.raises(UsageError, match="max_time 2 s is less than min_time 3 s"):
        Plan([], min_time=3.0, max_time=2.0).settings()


def test_rounds_past_what_the_policy_s_samples_can_be_shared_among_are_refused():
    config = SweepConfig(timing={"max_samples": 20})
    Plan([], config, rounds=5, processes=2).check()  # 10 rounds of 2 samples: the 20 allowed
    with pytest.raises(UsageError, match=r"--rounds 4 in each of 3 process\(es\) is 12 rounds of every cell, more "
                                         r"than 10: each takes 2 samples of a pass at least, past max_samples \(20\)"):
        Plan([], config, rounds=4, processes=3).check()


@pytest.mark.parametrize("plan, message", [
    (Plan([], in_process=True, fresh_worker=True), "--fresh-worker starts a worker process for every cell"),
    (Plan([], address="auto"), "--address is for --executor ray, not local"),
    (Plan([], executor="pool", gpu_kinds=("H100",)), "--gpu-kind is for --executor ray, not pool"),
])
def test_settings_that_would_be_ignored_are_refused(plan, message):
    with pytest.raises(UsageError, match=message):
        plan.check()

"""A sweep's plan: the timing settings from the config and the command line."""

from benchctl.sweep.config import SweepConfig
from benchctl.sweep.plan import Plan


def test_command_line_timing_overrides_the_config_and_the_rest_keeps_its_defaults():
    config = SweepConfig(timing={"min_time": 0.3, "warmup_time": 2.0, "warmup": 3})
    policy = Plan([], config, warmup_time=0.1).settings().policy
    assert (policy.min_time, policy.warmup_time, policy.warmup) == (0.3, 0.1, 3)
    assert Plan([]).settings().policy.warmup_time == 0.5

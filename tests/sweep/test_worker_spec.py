"""A worker's settings, named once: the setup line carries them to the worker, the key tells workers apart."""

from dataclasses import replace

from benchctl.measure.execute import Settings
from benchctl.measure.timing import Policy
from benchctl.sweep.worker_spec import WorkerSpec
from benchctl.vocab import Allocator

SETTINGS = Settings(policy=Policy(min_time=0.25, max_time=2.0, ci_target=0.02), check=False, tf32=False)


def test_the_setup_line_gives_the_worker_what_the_parent_meant():
    spec = WorkerSpec(SETTINGS, ["/ops/a", "/ops/b"], timeout=30.0, threads=2, mem_limit=512 * 1024**2)
    setup = spec.setup("k3y")
    assert setup["key"] == "k3y" and setup["ops_dirs"] == ["/ops/a", "/ops/b"]
    back = WorkerSpec.from_setup(setup)
    assert back.settings == SETTINGS and back.settings.policy.ci_target == 0.02 and back.settings.tf32 is False
    assert (back.ops_dirs, back.threads, back.mem_limit) == (("/ops/a", "/ops/b"), 2, 512 * 1024**2)


def test_specs_that_start_the_same_worker_share_a_key_and_any_difference_splits_it():
    spec = WorkerSpec(SETTINGS, ("/ops",), timeout=30.0)
    assert WorkerSpec(SETTINGS, ["/ops"], timeout=30.0).key() == spec.key()
    changed = [spec.with_(env={"CUDA_VISIBLE_DEVICES": "1"}), spec.with_(allocator=Allocator.JEMALLOC),
               spec.with_(threads=1), spec.with_(settings=replace(SETTINGS, check=True))]
    assert len({spec.key(), *(c.key() for c in changed)}) == 5


def test_the_workers_environment_is_the_allocators_then_its_own():
    spec = WorkerSpec(SETTINGS, env={"CUDA_VISIBLE_DEVICES": "3"})
    assert spec.process_env() == {"CUDA_VISIBLE_DEVICES": "3"}  # the system allocator preloads nothing

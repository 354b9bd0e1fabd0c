"""The allocator: which library to preload, a clear error when it is missing, and which one a process
runs under (a real worker process started with each)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from benchctl.machine import allocator


def test_the_system_allocator_preloads_nothing():
    assert allocator.preload_env("system") == {}


def test_a_missing_allocator_says_which_package_to_install(tmp_path):
    with pytest.raises(allocator.AllocatorMissing, match="apt-get install libjemalloc2"):
        allocator.library("jemalloc", search=(str(tmp_path),))


def test_found_in_the_search_path(tmp_path):
    (tmp_path / "libtcmalloc_minimal.so.4").write_bytes(b"")
    env = allocator.preload_env("tcmalloc", search=(str(tmp_path),))
    assert env["LD_PRELOAD"].split(":")[0] == str(tmp_path / "libtcmalloc_minimal.so.4")


@pytest.mark.parametrize("name", ["system", "jemalloc", "tcmalloc"])
def test_a_process_knows_the_allocator_it_runs_under(name):
    try:
        env = {**os.environ, **allocator.preload_env(name)}
    except allocator.AllocatorMissing as exc:
        pytest.skip(str(exc))  # set-up installs them; elsewhere they may be absent
    code = "from benchctl.machine import allocator; print(allocator.current())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == name, out.stderr

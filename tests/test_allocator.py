"""benchctl.allocator: the worker environment for each allocator, and where it cannot apply."""

import pytest

from benchctl import allocator
from benchctl.errors import UsageError


def test_system_changes_nothing_and_reuse_keeps_large_blocks_in_an_untrimmed_heap():
    assert allocator.worker_environment("system") == {}
    assert allocator.worker_environment("system", in_process=True) == {}
    env = allocator.worker_environment("reuse")
    assert env["MALLOC_MMAP_MAX_"] == "0" and int(env["MALLOC_TRIM_THRESHOLD_"]) >= 2**40


def test_reuse_needs_a_worker_process_and_glibc(monkeypatch):
    with pytest.raises(UsageError, match="drop --in-process"):
        allocator.worker_environment("reuse", in_process=True)
    monkeypatch.setattr(allocator.platform, "libc_ver", lambda: ("", ""))
    with pytest.raises(UsageError, match="does not use glibc"):
        allocator.worker_environment("reuse")
    with pytest.raises(UsageError, match="unknown allocator 'jemalloc'"):
        allocator.worker_environment("jemalloc")

"""maxbatch: the search logic on a fake probe, sizes, and a real search under a memory limit."""

import re

import pytest

from benchctl.maxbatch.search import parse_size, search


def test_doubling_then_bisection_finds_the_exact_limit():
    result = search(lambda b: b <= 300, start=1, limit=4096)
    assert result.largest_ok == 300 and result.smallest_failed == 301
    assert [b for b, _ in result.probes][:10] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    assert len(result.probes) <= 10 + 9  # bisection over 256..512 takes at most 8 more


def test_nothing_fits():
    result = search(lambda b: False, start=1)
    assert result.largest_ok is None and result.smallest_failed == 1


def test_search_stops_at_its_limit():
    result = search(lambda b: True, start=4, limit=64)
    assert result.largest_ok == 64 and result.capped and result.smallest_failed is None


@pytest.mark.parametrize("text, value", [("2G", 2 * 1024**3), ("512M", 512 * 1024**2), ("1.5K", 1536),
                                         ("100", 100), ("2GiB", 2 * 1024**3)])
def test_parse_size(text, value):
    assert parse_size(text) == value


def test_parse_size_rejects_nonsense():
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")


def test_real_search_under_a_memory_limit(tmp_path, fixture_ops, fixture_ops_dir):
    from click.testing import CliRunner

    from benchctl.results import storage
    from benchctl.cli import cli

    # `hog` needs 64 MiB per batch row: 640 MiB of address space above what the worker maps once its
    # threads have started holds 10 rows at most (the worker's slack keeps the small tensors beside them).
    result = CliRunner().invoke(cli, ["maxbatch", "faulty", "hog", "cpu", "--mem-limit", "640M", "--ops-dir",
                                      str(fixture_ops_dir), "--out", str(tmp_path), "--limit", "64"])
    assert result.exit_code == 0, result.output
    meta = storage.run_meta(storage.latest_run(tmp_path))["maxbatch"]
    assert 6 <= meta["largest_ok"] <= 10 and meta["smallest_failed"] == meta["largest_ok"] + 1
    assert f"largest batch = {meta['largest_ok']}" in result.output
    for batch, fits in meta["probes"]:  # each probe's line as it ends: a log shows no spinner
        assert re.search(rf"^batch {batch}: {'fits' if fits else 'fails'} \(\d+\.\d s\)$", result.output, re.M)
    df = storage.load_run(storage.latest_run(tmp_path))
    assert set(df["status"]) == {"ok", "oom"}


def test_a_probe_that_errors_leaves_its_run_failed_with_the_probes_before_it(tmp_path, fixture_ops_dir):
    from click.testing import CliRunner

    from benchctl.results import storage
    from benchctl.cli import cli

    # `cuda_error` raises the error a kernel's illegal access does once the batch reaches 8
    result = CliRunner().invoke(cli, ["maxbatch", "faulty", "cuda_error", "cpu", "--ops-dir", str(fixture_ops_dir),
                                      "--out", str(tmp_path), "--limit", "64", "--pass", "forward"])
    assert result.exit_code != 0 and "batch 8: error" in result.output, result.output
    meta = storage.run_meta(storage.latest_run(tmp_path))
    assert meta["state"] == "failed" and "batch 8" in meta["reason"]
    assert list(storage.load_run(storage.latest_run(tmp_path))["status"]) == ["ok"] * 3 + ["error"]  # 1, 2, 4, then 8

"""The resampled medians behind compare's interval: the same distribution as forming each resample."""

from __future__ import annotations

import numpy as np
import pytest

from benchctl.analysis import verdict

DRAWS = 40_000


def formed(samples: np.ndarray, rng: np.random.Generator, count: int) -> np.ndarray:
    """The definition: resample with replacement, take np.median of each resample."""
    return np.median(rng.choice(samples, (count, len(samples))), axis=1)


@pytest.mark.parametrize("n", [2, 3, 8, 9, 40, 41])
def test_resampled_medians_have_the_distribution_of_formed_resamples(n):
    rng = np.random.default_rng(n)
    samples = np.round(rng.lognormal(0.0, 0.3, n), 1)  # skewed, with ties
    exact = verdict.resampled_medians(samples, np.random.default_rng(1), DRAWS)
    brute = formed(samples, np.random.default_rng(2), DRAWS)
    # every value the median can take, at the same frequency within 6 sigma of two draws of 40,000 (a wrong
    # order statistic, or a lost half of an even sample's middle pair, moves one by 0.2 or more)
    values = np.union1d(exact, brute)
    share = lambda m: np.array([np.mean(m == v) for v in values])  # noqa: E731
    assert np.abs(share(exact) - share(brute)).max() < 0.02
    assert np.percentile(exact, [2.5, 50, 97.5]) == pytest.approx(np.percentile(brute, [2.5, 50, 97.5]), rel=0.02)


def test_a_large_pooled_side_still_gets_an_interval_around_its_ratio():
    rng = np.random.default_rng(0)
    base, new = rng.lognormal(0.0, 0.05, 14_000), 1.1 * rng.lognormal(0.0, 0.05, 14_000)
    low, high = verdict.ratio_interval(base, new)
    assert low < np.median(new) / np.median(base) < high
    assert 1.09 < low and high < 1.11

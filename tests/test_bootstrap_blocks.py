"""The bootstrap of a configuration of many seeds, drawn a block at a time, is scipy's own bootstrap.

scipy draws every resample at once (seeds × 9,999 indices and values: 400 MB for 2,500 seeds); the summary draws
the same resamples a block of rows at a time. Reference values: :func:`scipy.stats.bootstrap` itself, called as
the summary calls it for a few seeds, with all resamples at once.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import curlopt.experiments.outputs.summary as summary


def _scipy(values: np.ndarray):
    return stats.bootstrap((values,), np.mean, n_resamples=summary.BOOTSTRAP_RESAMPLES,
                           confidence_level=summary.CONFIDENCE_LEVEL, method="percentile", vectorized=True, axis=-1,
                           **summary._bootstrap_keywords())


@pytest.mark.parametrize("seeds", [2, 3, 17, 150])
def test_blocks_of_resamples_are_scipys_resamples(seeds, monkeypatch):
    values = np.random.default_rng(seeds).normal(size=seeds)
    monkeypatch.setattr(summary, "_DIRECT_BOOTSTRAP_DRAWS", 1000)  # blocks of 1000 // seeds rows, ending anywhere
    expected = _scipy(values)
    assert np.array_equal(summary._resample_means(values), expected.bootstrap_distribution)
    low, high = summary.bootstrap_interval(values)
    assert (low, high) == (float(expected.confidence_interval.low), float(expected.confidence_interval.high))


def test_many_seeds_take_the_block_path_and_give_scipys_interval():
    values = np.random.default_rng(7).exponential(size=300)  # 300 × 9,999 draws: above the direct bound
    assert values.size * summary.BOOTSTRAP_RESAMPLES > summary._DIRECT_BOOTSTRAP_DRAWS
    expected = _scipy(values).confidence_interval
    assert summary.bootstrap_interval(values) == (float(expected.low), float(expected.high))

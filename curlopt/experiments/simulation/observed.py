"""The signals the learning loop hands an agent: the model's means, or noisy draws around them.

With ``signals="mean"`` (the default) an agent observes the model's mean signals at every step, as every run did
before noisy signals existed; otherwise each step's reward and costs are drawn around the means
(:mod:`curlopt.models.signals`: Bernoulli on the signal's range, or a Gaussian clipped symmetrically around the
mean) from the run's own signal stream, split from the run's seed apart from the environment's, the actions' and
the agent's streams, so the trajectory of a seed is the same whatever the signals. The draws are made epoch by
epoch from the visited pairs, identically on the fast and the generic path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...models.signals import check_noise, noisy_signals, signal_bounds

__all__ = ["ObservedSignals"]


class ObservedSignals:
    """An epoch's observed signals, per pair and summed.

    Parameters
    ----------
    rewards, costs : ndarray, shapes (K, S·A) and (d, S·A)
        The model's mean signals.
    noise : {"mean", "bernoulli", "gaussian"}
    seed : numpy.random.SeedSequence or int
        The signal stream's seed (used only when ``noise`` is not ``"mean"``).
    """

    def __init__(self, rewards: np.ndarray, costs: np.ndarray, noise: str, seed: Any):
        self.noise = check_noise(noise)
        self.rewards, self.costs = rewards, costs
        self.table = np.concatenate([rewards, costs])
        self.low, self.high = signal_bounds(self.table)
        self.generator = np.random.default_rng(seed)

    def epoch(self, pairs: np.ndarray, visits: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(reward means (K, S·A), cost means (d, S·A), reward sum (K,), cost sum (d,))`` of the epoch that visited
        ``pairs`` (``visits``: their counts per pair, as floats); the means are read only where a pair was visited.
        """
        if self.noise == "mean":
            return self.rewards, self.costs, self.rewards @ visits, self.costs @ visits
        draws = noisy_signals(self.table[:, pairs], self.low, self.high, self.noise, self.generator)
        n_pairs = self.table.shape[1]
        sums = np.stack([np.bincount(pairs, weights=row, minlength=n_pairs) for row in draws]) if draws.size \
            else np.zeros((self.table.shape[0], n_pairs))
        means = sums / np.maximum(visits, 1.0)
        K = self.rewards.shape[0]
        totals = draws.sum(axis=1) if draws.size else np.zeros(self.table.shape[0])
        return means[:K], means[K:], totals[:K], totals[K:]

"""The signals an environment emits: the model's means, or noisy draws around them, and their ranges.

A model's reward and cost tables are the *means* of the signals. An environment may emit them as they are
(``"mean"``, what every run did before noisy signals existed) or draw an observed value around the mean at
every step:

``"bernoulli"``
    the signal's lower bound ``lo`` or its upper bound ``hi``, ``hi`` with probability ``(m - lo) / (hi - lo)``,
    so the mean is ``m`` exactly and every draw lies in the signal's range;
``"gaussian"``
    ``m + clip(σ z, -w, w)`` with ``z`` standard normal, ``σ = GAUSSIAN_SCALE (hi - lo)`` and
    ``w = min(m - lo, hi - m)``: a Gaussian clipped symmetrically around the mean, so the mean stays ``m``
    exactly (a symmetric law clipped symmetrically stays symmetric) and every draw lies in ``[lo, hi]``. A mean
    on a bound is emitted as it is.

The range ``[lo, hi]`` of a signal is taken from the model's own table: the smallest and the largest mean of
that signal over all pairs (:func:`signal_bounds`). A signal whose means are all equal is emitted as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import CurloptError

__all__ = ["SIGNAL_NOISES", "GAUSSIAN_SCALE", "signal_bounds", "check_noise", "noisy_signals"]

#: how an environment emits its signals (see the module docstring)
SIGNAL_NOISES = ("mean", "bernoulli", "gaussian")
#: the Gaussian noise's standard deviation, as a fraction of the signal's range (before the symmetric clip)
GAUSSIAN_SCALE = 0.25


def check_noise(value: Any) -> str:
    """``value`` when it names one of :data:`SIGNAL_NOISES`.

    Raises
    ------
    CurloptError
        ``signals must be one of 'mean', 'bernoulli', 'gaussian', got ...``.
    """
    if not isinstance(value, str) or value not in SIGNAL_NOISES:
        raise CurloptError(f"signals must be one of {', '.join(map(repr, SIGNAL_NOISES))}, got {value!r}.")
    return value


def signal_bounds(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``, each of shape (n,): the smallest and largest mean of each signal of an (n, S, A) table.

    The model's own minimum and maximum are the signal's range: a model declares no other bounds.
    """
    flat = np.asarray(table, dtype=float).reshape(np.shape(table)[0], -1)
    if flat.shape[1] == 0 or flat.shape[0] == 0:
        return np.zeros(flat.shape[0]), np.zeros(flat.shape[0])
    return flat.min(axis=1), flat.max(axis=1)


def noisy_signals(means: np.ndarray, low: np.ndarray, high: np.ndarray, noise: str,
                  generator: np.random.Generator) -> np.ndarray:
    """Observed signals around ``means`` (shape (n, L): signal × step), each in its range ``[low_i, high_i]``.

    ``"mean"`` returns a copy of ``means`` and draws nothing; otherwise one draw per entry, signal by signal.
    """
    means = np.asarray(means, dtype=float)
    if noise == "mean" or means.size == 0:
        return means.copy()
    low = np.asarray(low, dtype=float)[:, None]
    high = np.asarray(high, dtype=float)[:, None]
    width = high - low
    if noise == "bernoulli":
        with np.errstate(divide="ignore", invalid="ignore"):
            chance = np.where(width > 0, (means - low) / np.where(width > 0, width, 1.0), 0.0)
        drawn = np.where(generator.random(means.shape) < chance, high, low)
    elif noise == "gaussian":
        half = np.maximum(0.0, np.minimum(means - low, high - means))
        drawn = means + np.clip(GAUSSIAN_SCALE * width * generator.standard_normal(means.shape), -half, half)
    else:
        raise CurloptError(f"signals must be one of {', '.join(map(repr, SIGNAL_NOISES))}, got {noise!r}.")
    # a constant signal has no range to draw in: it is emitted as it is
    return np.where(width > 0, drawn, means)

"""Relative value iteration for an average-reward MDP, with bounds on the optimal gain.

For a reward ``r(s,a)`` on a kernel ``P``, one sweep applies the Bellman operator of the *aperiodic* kernel
``P_τ = τ P + (1 - τ) I`` (τ = :data:`APERIODICITY`): ``(T v)(s) = (1 - τ) v(s) + max_a [r(s,a) + τ (P v)(s,a)]``.
``P_τ`` has the same stationary distributions as ``P`` under every policy, hence the same gains, and no policy's
chain is periodic, so the sweeps converge for every unichain model (and every communicating one).

After each sweep, with ``d = T v - v``::

    min_s d(s)  <=  g*  <=  max_s d(s)

where ``g*`` is the best gain from any start state (in a multichain model, the largest of them). The upper bound
holds for every ``v``; it is what makes a column-generation certificate valid whether or not the sweeps have
converged. The greedy policy of the sweep has gain at least ``min_s d(s)`` (in every one of its recurrent
classes). Values are kept relative to state 0 so that they stay bounded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .chains import KernelMatrix

__all__ = ["GainBounds", "relative_value_iteration", "APERIODICITY"]

#: weight ``τ`` of the kernel in the aperiodicity transform ``τ P + (1 - τ) I``
APERIODICITY = 0.95
#: sweeps between two questions to ``stop``
STOP_EVERY = 50


@dataclass
class GainBounds:
    """The outcome of :func:`relative_value_iteration`.

    Attributes
    ----------
    actions : ndarray of int, shape (S,)
        The greedy policy of the last sweep (ties broken towards the lowest action).
    values : ndarray, shape (S,)
        The relative values after the last sweep (a warm start for the next call).
    lower, upper : float
        ``min_s d(s) <= g* <= max_s d(s)``; the greedy policy's gain is at least ``lower``.
    sweeps : int
    converged : bool
        ``upper - lower <= tolerance`` (else the sweeps stopped at ``max_sweeps``, or on ``enough``).
    """

    actions: np.ndarray
    values: np.ndarray
    lower: float
    upper: float
    sweeps: int
    converged: bool


def relative_value_iteration(kernel: KernelMatrix, reward: np.ndarray, values: np.ndarray | None = None, *,
                             tolerance: float, max_sweeps: int, enough: float | None = None,
                             stop: Callable[[], bool] | None = None) -> GainBounds:
    """Sweep until the gain bounds are within ``tolerance`` (or ``max_sweeps``).

    Parameters
    ----------
    kernel : KernelMatrix
    reward : ndarray, shape (S, A)
    values : ndarray, shape (S,), optional
        Starting relative values (default zeros): the last call's values make a warm start.
    tolerance : float
        Stop when ``upper - lower <= tolerance``.
    max_sweeps : int
    enough : float, optional
        Also stop, unconverged, once ``lower - enough >= upper - lower``: the greedy policy's gain is then known
        to exceed ``enough`` by at least the bounds' own uncertainty (column generation asks for a column that
        improves on its master, not for the exact optimum, while the master is far from it).
    stop : callable, optional
        Asked every :data:`STOP_EVERY` sweeps; True stops the sweeps, unconverged (a time limit).

    Returns
    -------
    GainBounds
    """
    n_states = kernel.n_states
    v = np.zeros(n_states) if values is None else np.array(values, dtype=float)
    tau = APERIODICITY
    reward = np.asarray(reward, dtype=float)
    lower, upper = -np.inf, np.inf
    actions = np.zeros(n_states, dtype=np.int64)
    sweeps = 0
    converged = False
    while sweeps < max_sweeps:
        q = reward + tau * kernel.expected(v)
        actions = np.argmax(q, axis=1)
        best = q[np.arange(n_states), actions]
        difference = best - tau * v  # (T v - v) = max_a[...] + (1 - τ) v - v
        lower, upper = float(difference.min()), float(difference.max())
        v = v + difference
        v -= v[0]
        sweeps += 1
        span = upper - lower
        if span <= tolerance:
            converged = True
            break
        if enough is not None and lower - enough >= span:
            break
        if stop is not None and sweeps % STOP_EVERY == 0 and stop():
            break
    return GainBounds(actions, v, lower, upper, sweeps, converged)

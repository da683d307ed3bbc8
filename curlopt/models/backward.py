"""Exact evaluation of an episodic model by backward recursion (docs/math.md, the episodic setting).

Two recursions over the steps of an episode, from the last step back to the first:

* :func:`episode_policy_values` evaluates a given policy ``π = (π_1, …, π_H)``:
  ``V_{H+1} = 0``, ``Q_h(s,a) = x_h(s,a) + Σ_{s'} P_h(s'|s,a) V_{h+1}(s')``, ``V_h(s) = Σ_a π_h(a|s) Q_h(s,a)``
  for every reward and cost signal ``x``. ``Σ_s μ(s) V_1(s)`` is the policy's per-episode total, the same number as
  the forward recursion's :func:`~curlopt.models.episodic.episode_values` (a second, independent route to it).
* :func:`episode_backward_induction` optimises an unconstrained linear objective ``Σ_k w_k λ_k (+ Σ_i v_i ζ_i)``:
  ``V_h(s) = max_a Q_h(s,a)``, the maximising action (the first one on ties) giving a deterministic optimal policy.
  With no constraints and a linear objective this is the optimum of the occupancy program, by a route that shares
  none of its code (a reference for tests).

Steps are 0-based in arrays, as in :mod:`curlopt.models.episodic`: ``values[h]`` is ``V_{h+1}`` of the text above,
and ``values[H]`` is the zero vector after the last step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from ..utilities.library import Linear
from .episodic import EpisodicCMDP, check_episode_policy

__all__ = ["EpisodePolicyValues", "BackwardInduction", "episode_policy_values", "episode_backward_induction"]


@dataclass(frozen=True)
class EpisodePolicyValues:
    """The per-step values of one policy on an episodic model.

    Attributes
    ----------
    reward_values : ndarray, shape (H + 1, K, S)
        ``reward_values[h, k, s]``: the expected total of reward signal ``k`` from step ``h`` (0-based) to the end of
        the episode, starting in ``s``; row ``H`` is 0.
    cost_values : ndarray, shape (H + 1, d, S)
        The same for each cost signal.
    rewards : ndarray, shape (K,)
        Per-episode totals ``λ_k = Σ_s μ(s) reward_values[0, k, s]``.
    costs : ndarray, shape (d,)
        Per-episode totals ``ζ_i``.
    """

    reward_values: np.ndarray
    cost_values: np.ndarray
    rewards: np.ndarray
    costs: np.ndarray


@dataclass(frozen=True)
class BackwardInduction:
    """The optimum of an unconstrained linear objective on an episodic model, by backward induction.

    Attributes
    ----------
    values : ndarray, shape (H + 1, S)
        ``values[h, s]``: the optimal expected total of the weighted signal from step ``h`` (0-based) on, from ``s``.
    q_values : ndarray, shape (H, S, A)
        The optimal action values of each step.
    policy : ndarray, shape (H, S, A)
        A deterministic optimal policy (one-hot rows; the first maximising action on ties).
    value : float
        ``Σ_s μ(s) values[0, s]`` plus the objective's offset: the optimal per-episode objective.
    """

    values: np.ndarray
    q_values: np.ndarray
    policy: np.ndarray
    value: float


def _expected_next(model: EpisodicCMDP, h: int, values: np.ndarray) -> np.ndarray:
    """``Σ_{s'} P_h(s'|s,a) values(…, s')`` for every (s, a): shape (…, S, A) from ``values`` of shape (…, S)."""
    S, A = model.n_states, model.n_actions
    kernel = model.step_kernel(h)
    if sp.issparse(kernel):
        flat = values.reshape(-1, S)  # (n, S)
        product = np.asarray(kernel @ flat.T)  # (S·A, n)
        return product.T.reshape(*values.shape[:-1], S, A)
    return np.einsum("sat,...t->...sa", kernel, values)


def episode_policy_values(model: EpisodicCMDP, policy: Any) -> EpisodePolicyValues:
    """The values of ``policy`` at every step, by backward recursion.

    Parameters
    ----------
    model : EpisodicCMDP
    policy : array_like, shape (H, S, A) or (S, A)
        A Markov policy (an (S, A) policy is played at every step).

    Returns
    -------
    EpisodePolicyValues
        Its per-step values and per-episode totals; the totals equal
        :func:`~curlopt.models.episodic.episode_values` (the forward recursion) up to round-off.

    Raises
    ------
    ModelError
        For a model that is not episodic or a policy of the wrong shape.
    """
    _check_model(model)
    H, S, A = model.horizon, model.n_states, model.n_actions
    pi = check_episode_policy(policy, H, S, A)
    K, d = model.n_rewards, model.n_costs
    signals = np.concatenate([model.step_rewards, model.step_costs], axis=1)  # (H, K + d, S, A)
    values = np.zeros((H + 1, K + d, S))
    for h in range(H - 1, -1, -1):
        q = signals[h] + (_expected_next(model, h, values[h + 1]) if h < H - 1 else 0.0)
        values[h] = np.einsum("sa,nsa->ns", pi[h], q)
    totals = values[0] @ model.initial
    return EpisodePolicyValues(reward_values=values[:, :K], cost_values=values[:, K:], rewards=totals[:K],
                               costs=totals[K:])


def _weights(value: Any, length: int, name: str) -> np.ndarray:
    array = np.asarray(value, dtype=float).reshape(-1)
    if array.shape != (length,) or not np.all(np.isfinite(array)):
        raise ModelError(f"{name} must be {length} finite numbers (one per signal), got {value!r}.")
    return array


def episode_backward_induction(model: EpisodicCMDP, weights: Any = None, cost_weights: Any = None) -> BackwardInduction:
    """Maximise ``Σ_k w_k λ_k + Σ_i v_i ζ_i`` over all policies, ignoring the model's constraints.

    Parameters
    ----------
    model : EpisodicCMDP
    weights : array_like, shape (K,), optional
        ``w``; default the weights of the model's objective, which must then be linear
        (:class:`~curlopt.utilities.library.Linear`; its offset is added to :attr:`BackwardInduction.value`).
    cost_weights : array_like, shape (d,), optional
        ``v`` (e.g. minus Lagrange multipliers); default 0.

    Returns
    -------
    BackwardInduction

    Raises
    ------
    ModelError
        For a model that is not episodic, weights of the wrong length, or no weights with a nonlinear objective.
    """
    _check_model(model)
    H, S, A = model.horizon, model.n_states, model.n_actions
    offset = 0.0
    if weights is None:
        objective = model.objective
        if type(objective) is not Linear:
            raise ModelError(
                f"backward induction optimises a linear objective; model {model.name!r} has {objective!r}: pass"
                " weights=... (one per reward signal)."
            )
        w = np.asarray(objective.weights, dtype=float).reshape(-1)
        offset = float(np.asarray(objective.offset).reshape(-1)[0])
    else:
        w = _weights(weights, model.n_rewards, "weights")
    signal = np.einsum("k,hksa->hsa", w, model.step_rewards)
    if cost_weights is not None:
        signal = signal + np.einsum("i,hisa->hsa", _weights(cost_weights, model.n_costs, "cost_weights"),
                                    model.step_costs)
    values = np.zeros((H + 1, S))
    q_values = np.empty((H, S, A))
    policy = np.zeros((H, S, A))
    for h in range(H - 1, -1, -1):
        q_values[h] = signal[h] + (_expected_next(model, h, values[h + 1]) if h < H - 1 else 0.0)
        best = np.argmax(q_values[h], axis=1)  # the first maximiser on ties
        values[h] = q_values[h][np.arange(S), best]
        policy[h, np.arange(S), best] = 1.0
    return BackwardInduction(values=values, q_values=q_values, policy=policy,
                             value=float(values[0] @ model.initial) + offset)


def _check_model(model: Any) -> None:
    if not isinstance(model, EpisodicCMDP):
        raise ModelError(f"an episodic evaluation needs an EpisodicCMDP, got {type(model).__name__}.")
    if not model.has_kernel:
        raise ModelError(f"model {model.name!r} has no kernel; exact evaluation needs the transition kernel.")

"""The three models of the DOPE paper's experiments (Bura, HasanzadeZonuzy, Kalathil, Shakkottai, Chamberland,
"DOPE: Doubly Optimistic and Pessimistic Exploration for Safe Reinforcement Learning", NeurIPS 2022), as its public
code defines them; the same code runs OptPess-LP (Liu et al. 2021) and OptCMDP on them.

Every episode starts in state 0. The paper minimises a cost; here every model maximises, so a cost to minimise is a
negative reward. Each constraint is the paper's per-episode budget ``H / 2``, written per step: an average of at most
``budget = 0.5`` (``horizon=H`` gives ``H · budget`` per episode, the paper's value, or ``budgets=``). The paper's
horizons are 6 (factored), 10 (media streaming) and 7 (inventory); without ``horizon`` a model has the long-run
average criterion.

Safe policies (declared with ``horizon``): each model has an action of cost 0 that keeps the cost at 0 forever, so
playing it always has per-episode cost 0, strictly below any positive budget (checked exactly when the model is
built, :func:`~curlopt.models.criteria.with_horizon`). The paper's own baselines are the optimum under the smaller
budget ``H / 10`` (its ``C_b``); any strictly safe policy meets the algorithms' assumption.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ModelError
from ..utilities.library import Linear, LinearBound
from .cmdp import CMDP, check_model_size
from .criteria import with_horizon

__all__ = ["factored_model", "media_streaming_model", "inventory_model"]


def _budget(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(float(value)):
        raise ModelError(f"budget must be a finite number (average cost allowed per step), got {value!r}.")
    return float(value)


def _always(action: int, n_states: int, n_actions: int) -> np.ndarray:
    return np.tile(np.eye(n_actions)[action], (n_states, 1))


def factored_model(budget: float = 0.5, horizon: int | None = None, budgets: Any = None) -> CMDP:
    """The DOPE paper's factored CMDP: three states on a cycle, action 0 stays (reward 0, cost 0), action 1 moves to
    the next state (reward ``(s + 1) / 3`` from state s, cost 1). Paper: H = 6, budget 3 per episode.

    Safe policy: always stay (cost 0).
    """
    S, A = 3, 2
    kernel = np.zeros((S, A, S))
    kernel[np.arange(S), 0, np.arange(S)] = 1.0
    kernel[np.arange(S), 1, (np.arange(S) + 1) % S] = 1.0
    rewards = np.zeros((S, A))
    rewards[:, 1] = (np.arange(S) + 1) / 3.0
    costs = np.zeros((S, A))
    costs[:, 1] = 1.0
    model = CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], _budget(budget))], kernel,
                 initial=np.eye(S)[0], name="factored-cmdp", labels={"actions": ["stay", "move"]})
    return with_horizon(model, horizon, budgets, lambda _: _always(0, S, A))


def media_streaming_model(levels: int = 10, fast: float = 0.9, slow: float = 0.1, arrival: float = 0.8,
                          budget: float = 0.5, horizon: int | None = None, budgets: Any = None) -> CMDP:
    """The DOPE paper's media-streaming model: a play-out buffer of ``levels`` levels (state 0: empty).

    Action 0 serves fast (delivery probability ``fast``, cost 1), action 1 slowly (``slow``, cost 0). With delivery
    probability μ and play-out probability ``arrival`` = λ, the buffer rises one level with probability μ(1 − λ),
    falls one with probability (1 − μ)λ, and stays otherwise (clipped at both ends). Reward −1 per step with an empty
    buffer (the paper's objective cost). Paper: 10 levels, H = 10, budget 5 per episode.

    Safe policy: always serve slowly (cost 0).
    """
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or not 2 <= levels <= 10_000:
        raise ModelError(f"levels must be an integer in [2, 10000], got {levels!r}.")
    for name, value in (("fast", fast), ("slow", slow), ("arrival", arrival)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
            raise ModelError(f"{name} must be a probability in [0, 1], got {value!r}.")
    S, A = int(levels), 2
    check_model_size(f"media-streaming(levels={S})", S, A, 2)  # before the (S, A, S) kernel is allocated
    kernel = np.zeros((S, A, S))
    states = np.arange(S)
    for a, mu in enumerate((float(fast), float(slow))):
        up, down = mu * (1.0 - arrival), (1.0 - mu) * arrival
        action = np.full(S, a)
        np.add.at(kernel, (states, action, np.minimum(states + 1, S - 1)), up)
        np.add.at(kernel, (states, action, np.maximum(states - 1, 0)), down)
        kernel[states, a, states] += 1.0 - up - down
    rewards = np.zeros((S, A))
    rewards[0, :] = -1.0
    costs = np.zeros((S, A))
    costs[:, 0] = 1.0
    model = CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], _budget(budget))], kernel,
                 initial=np.eye(S)[0], name="media-streaming", labels={"actions": ["fast", "slow"]})
    return with_horizon(model, horizon, budgets, lambda _: _always(1, S, A))


#: the DOPE paper's demand law (demand d = 0..5 units per step)
DEMAND = (0.3, 0.2, 0.2, 0.2, 0.05, 0.05)


def inventory_model(budget: float = 0.5, horizon: int | None = None, budgets: Any = None) -> CMDP:
    """The DOPE paper's inventory control: stock s = 0..5, order a = 0..5 units (capacity 5), demand d with law
    :data:`DEMAND`, next stock ``max(s + a − d, 0)``.

    Reward: the expected revenue ``E[0.08 · min(d, s + a)]``; cost: ordering ``4 + 2a`` (``a > 0``) plus holding
    ``s + a``; each divided by its largest value over the allowed (s, a) (the paper's normalisation). An order above
    the capacity left, ``a > 5 − s``, is not allowed in the paper; here it orders ``5 − s`` (the same transitions,
    reward and cost as that order), which changes no policy's values. Paper: H = 7, budget 3.5 per episode.

    Safe policy: never order. From the empty stock it stays empty at cost 0.
    """
    S = A = len(DEMAND)
    demand = np.asarray(DEMAND)
    kernel = np.zeros((S, A, S))
    revenue = np.zeros((S, A))
    cost = np.zeros((S, A))
    for s in range(S):
        for a in range(A):
            order = min(a, S - 1 - s)  # beyond capacity: the largest allowed order
            stock = s + order
            for d, p in enumerate(demand):
                kernel[s, a, max(stock - d, 0)] += p
                revenue[s, a] += p * 0.08 * min(d, stock)
            cost[s, a] = (4.0 + 2.0 * order if order > 0 else 0.0) + stock
    rewards, costs = revenue / revenue.max(), cost / cost.max()
    model = CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], _budget(budget))], kernel,
                 initial=np.eye(S)[0], name="inventory", labels={"actions": [f"order {a}" for a in range(A)]})
    return with_horizon(model, horizon, budgets, lambda _: _always(0, S, A))

"""Rewards and costs learned from the observed signals: running means and confidence bonuses.

An agent built with ``rewards="learned"`` is not told the model's reward and cost tables: it keeps the running
mean ``r^(s,a)``, ``c^(s,a)`` of the signals it observed at each pair (:class:`SignalEstimates`) and plans on

* the optimistic reward and the pessimistic cost (:data:`PESSIMISTIC`, the rule of every agent whose paper
  defines none), or
* the optimistic reward and the optimistic cost (:data:`OPTIMISTIC`, UCRL-CMDP's: its plausible set holds the
  costs too, and the program picks the most favourable member),

each the running mean moved by Hoeffding's width ``b(s,a) = (hi - lo) sqrt(ln(2 S A t / δ) / (2 max(1, N(s,a))))``
and clipped to the signal's range ``[lo, hi]`` (:func:`curlopt.models.signals.signal_bounds`: the model's own
minimum and maximum of the signal), ``t`` the epoch's start and ``δ =`` :data:`SIGNAL_DELTA`. Which way is
optimistic is read from the utilities (:func:`signal_directions`): ``r^ + b`` for a reward f increases in, ``r^ - b``
for one it decreases in; the pessimistic cost is ``c^ + b`` for a cost the constraints increase in (``g_m`` grows
with it) and ``c^ - b`` for one they decrease in (a cost whose average must stay above a bound). A pair never
visited takes the bound the same way: the reward's upper bound (lower, for a decreasing one) and the cost's
pessimistic bound.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..models.cmdp import CMDP
from ..models.signals import signal_bounds

__all__ = ["SignalEstimates", "SIGNAL_DELTA", "PESSIMISTIC", "OPTIMISTIC", "hoeffding_width", "signal_directions"]

#: the confidence level δ of the signals' Hoeffding widths
SIGNAL_DELTA = 0.05
#: the cost rule: pessimistic costs ``c^ + b`` (unvisited: the upper bound)
PESSIMISTIC = "pessimistic"
#: the cost rule: optimistic costs ``c^ - b`` (unvisited: the lower bound)
OPTIMISTIC = "optimistic"


def hoeffding_width(visits: np.ndarray, n_pairs: int, time: float, delta: float = SIGNAL_DELTA) -> np.ndarray:
    """``sqrt(ln(2 S A t / δ) / (2 max(1, N)))`` for each pair's visits ``N`` (a signal of range 1)."""
    log_term = math.log(2.0 * n_pairs * max(1.0, float(time)) / delta)
    return np.sqrt(log_term / (2.0 * np.maximum(1.0, np.asarray(visits, dtype=float))))


def _slope_signs(gradient: Any, point: np.ndarray) -> np.ndarray:
    """The signs of a utility's gradient at ``point`` (0 where it has no finite slope there)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.asarray(gradient(point), dtype=float).reshape(-1)
    return np.sign(np.nan_to_num(slope, nan=0.0, posinf=0.0, neginf=0.0))


def signal_directions(model: Any) -> np.ndarray:
    """``+1`` or ``-1`` for every signal (rewards first): the direction in which it helps the objective (a reward)
    or hurts the constraints (a cost), from the utilities' slopes at the middle of the signals' box.

    A reward takes ``-1`` when f decreases in it there; a cost takes ``-1`` when no constraint increases in it and
    some decreases (a linear ``g_m = w·ζ - b`` with ``w_i < 0``); ``+1`` otherwise (also where a slope is 0 or the
    constraints disagree, the stated default).
    """
    table = np.concatenate([model.rewards, model.costs])
    low, high = signal_bounds(table)
    middle = (low + high) / 2.0
    K = model.n_rewards
    directions = np.ones(K + model.n_costs)
    directions[:K] = np.where(_slope_signs(model.objective.gradient, middle[:K]) < 0, -1.0, 1.0)
    if model.constraints:
        signs = np.array([_slope_signs(g.gradient, middle[K:]) for g in model.constraints])
        decreasing = np.all(signs <= 0, axis=0) & np.any(signs < 0, axis=0)
        directions[K:] = np.where(decreasing, -1.0, 1.0)
    return directions


class SignalEstimates:
    """The running means of an agent's observed rewards and costs, pair by pair.

    Parameters
    ----------
    model : CMDP
        Gives the shapes and each signal's range ``[lo, hi]`` (the model's own minimum and maximum): a CMDP, or any
        object with its ``rewards`` (K, S, A), ``costs`` (d, S, A), ``n_rewards``, ``n_costs``, ``n_states``,
        ``n_actions``, ``objective`` and ``constraints`` (the episodic agents give their per-step tables as
        (K, H·S, A) this way).

    Attributes
    ----------
    visits : ndarray, shape (S·A,)
        The observations of each pair.
    means : ndarray, shape (K + d, S·A)
        The running means, rewards first (0 where a pair was never visited).
    """

    def __init__(self, model: Any):
        S, A = model.n_states, model.n_actions
        self.shape = (S, A)
        self.n_rewards, self.n_costs = model.n_rewards, model.n_costs
        table = np.concatenate([model.rewards, model.costs]).reshape(model.n_rewards + model.n_costs, S, A)
        self.low, self.high = signal_bounds(table)
        #: +1 or -1 per signal: the optimistic way of a reward, the pessimistic way of a cost
        self.directions = signal_directions(model)
        self.visits = np.zeros(S * A)
        self.means = np.zeros((self.n_rewards + self.n_costs, S * A))

    def add(self, visits: np.ndarray, reward_means: np.ndarray, cost_means: np.ndarray) -> None:
        """Add an epoch's observations: each pair's visits (S·A,) and the mean of its observed signals there
        ((K, S·A) and (d, S·A); read only where the pair was visited).

        The update ``m <- m + (x - m) n / (N + n)`` keeps a mean exactly when the epoch's mean equals it, so an
        agent that observes the model's means learns them bit for bit.
        """
        visits = np.asarray(visits, dtype=float).reshape(-1)
        seen = visits > 0
        if not np.any(seen):
            return
        total = self.visits + visits
        n_pairs = visits.size  # (a model without costs has (0, S·A) cost means: no -1 in the reshape)
        observed = np.concatenate([np.asarray(reward_means, dtype=float).reshape(self.n_rewards, n_pairs),
                                   np.asarray(cost_means, dtype=float).reshape(self.n_costs, n_pairs)])
        weight = visits[seen] / total[seen]
        self.means[:, seen] += (observed[:, seen] - self.means[:, seen]) * weight
        self.visits = total

    def widths(self, time: float) -> np.ndarray:
        """Hoeffding's ``b`` of every signal and pair, shape (K + d, S·A), in each signal's range."""
        width = hoeffding_width(self.visits, self.visits.size, time)
        return (self.high - self.low)[:, None] * width[None, :]

    def planning_tables(self, time: float, costs: str = PESSIMISTIC) -> tuple[np.ndarray, np.ndarray]:
        """The rewards (K, S, A) and costs (d, S, A) to plan on at an epoch starting at ``time``.

        Every signal ``clip(mean + u b, lo, hi)`` with ``u`` its direction (:func:`signal_directions`; the
        costs' turned round under ``costs="optimistic"``): the optimistic reward and the pessimistic (or optimistic)
        cost. A pair never visited takes the bound the direction points to: ``hi`` for ``u = +1``, ``lo`` for -1.
        """
        b = self.widths(time)
        K = self.n_rewards
        direction = self.directions.copy()
        if costs == OPTIMISTIC:
            direction[K:] = -direction[K:]
        low, high = self.low[:, None], self.high[:, None]
        bound = np.where(direction[:, None] > 0, high, low)
        moved = np.clip(self.means + direction[:, None] * b, low, high)
        tables = np.where(self.visits[None, :] == 0, bound, moved)
        S, A = self.shape
        return tables[:K].reshape(K, S, A), tables[K:].reshape(self.n_costs, S, A)

    def planning_model(self, model: CMDP, time: float, costs: str = PESSIMISTIC) -> CMDP:
        """``model`` with its reward and cost tables replaced by :meth:`planning_tables` (same utilities,
        kernel, initial law and storage)."""
        rewards, cost = self.planning_tables(time, costs)
        kernel = model.transitions if model.sparse else model.kernel
        return CMDP(rewards, cost if cost.shape[0] else None, model.objective, model.constraints, kernel=kernel,
                    initial=model.initial, name=model.name, labels=model.labels,
                    storage="sparse" if model.sparse else "auto")

"""Rewards and costs learned from the observed signals: running means and confidence bonuses.

An agent built with ``rewards="learned"`` is not told the model's reward and cost tables: it keeps the running
mean ``r^(s,a)``, ``c^(s,a)`` of the signals it observed at each pair (:class:`SignalEstimates`) and plans on

* the optimistic reward ``min(hi, r^ + b)`` and the pessimistic cost ``min(hi, c^ + b)``
  (:data:`PESSIMISTIC`, the rule of every agent whose paper defines none), or
* the optimistic reward and the optimistic cost ``max(lo, c^ - b)`` (:data:`OPTIMISTIC`, UCRL-CMDP's: its
  plausible set holds the costs too, and the program picks the most favourable member),

with Hoeffding's width ``b(s,a) = (hi - lo) sqrt(ln(2 S A t / δ) / (2 max(1, N(s,a))))`` in each signal's range
``[lo, hi]`` (:func:`curlopt.models.signals.signal_bounds`: the model's own minimum and maximum of the signal),
``t`` the epoch's start and ``δ =`` :data:`SIGNAL_DELTA`. A pair never visited takes the reward's upper bound and
the cost's upper bound (pessimistic; the lower bound under the optimistic rule).
"""

from __future__ import annotations

import math

import numpy as np

from ..models.cmdp import CMDP
from ..models.signals import signal_bounds

__all__ = ["SignalEstimates", "SIGNAL_DELTA", "PESSIMISTIC", "OPTIMISTIC", "hoeffding_width"]

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


class SignalEstimates:
    """The running means of an agent's observed rewards and costs, pair by pair.

    Parameters
    ----------
    model : CMDP
        Gives the shapes and each signal's range ``[lo, hi]`` (the model's own minimum and maximum).

    Attributes
    ----------
    visits : ndarray, shape (S·A,)
        The observations of each pair.
    means : ndarray, shape (K + d, S·A)
        The running means, rewards first (0 where a pair was never visited).
    """

    def __init__(self, model: CMDP):
        S, A = model.n_states, model.n_actions
        self.shape = (S, A)
        self.n_rewards, self.n_costs = model.n_rewards, model.n_costs
        table = np.concatenate([model.rewards, model.costs]).reshape(model.n_rewards + model.n_costs, S, A)
        self.low, self.high = signal_bounds(table)
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
        observed = np.concatenate([np.asarray(reward_means, dtype=float).reshape(self.n_rewards, -1),
                                   np.asarray(cost_means, dtype=float).reshape(self.n_costs, -1)])
        weight = visits[seen] / total[seen]
        self.means[:, seen] += (observed[:, seen] - self.means[:, seen]) * weight
        self.visits = total

    def widths(self, time: float) -> np.ndarray:
        """Hoeffding's ``b`` of every signal and pair, shape (K + d, S·A), in each signal's range."""
        width = hoeffding_width(self.visits, self.visits.size, time)
        return (self.high - self.low)[:, None] * width[None, :]

    def planning_tables(self, time: float, costs: str = PESSIMISTIC) -> tuple[np.ndarray, np.ndarray]:
        """The rewards (K, S, A) and costs (d, S, A) to plan on at an epoch starting at ``time``.

        Rewards ``min(hi, r^ + b)``; costs ``min(hi, c^ + b)`` (``costs="pessimistic"``) or ``max(lo, c^ - b)``
        (``"optimistic"``); a pair never visited takes the rewards' upper bounds and the costs' upper bounds
        (lower bounds under the optimistic rule).
        """
        b = self.widths(time)
        K = self.n_rewards
        low, high = self.low[:, None], self.high[:, None]
        unvisited = self.visits == 0
        rewards = np.where(unvisited, high[:K], np.minimum(high[:K], self.means[:K] + b[:K]))
        if costs == OPTIMISTIC:
            cost = np.where(unvisited, low[K:], np.maximum(low[K:], self.means[K:] - b[K:]))
        else:
            cost = np.where(unvisited, high[K:], np.minimum(high[K:], self.means[K:] + b[K:]))
        S, A = self.shape
        return rewards.reshape(K, S, A), cost.reshape(self.n_costs, S, A)

    def planning_model(self, model: CMDP, time: float, costs: str = PESSIMISTIC) -> CMDP:
        """``model`` with its reward and cost tables replaced by :meth:`planning_tables` (same utilities,
        kernel, initial law and storage)."""
        rewards, cost = self.planning_tables(time, costs)
        kernel = model.transitions if model.sparse else model.kernel
        return CMDP(rewards, cost if cost.shape[0] else None, model.objective, model.constraints, kernel=kernel,
                    initial=model.initial, name=model.name, labels=model.labels,
                    storage="sparse" if model.sparse else "auto")

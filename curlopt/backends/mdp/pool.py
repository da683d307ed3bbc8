"""The columns of column generation: occupancies of deterministic policies, kept as policies.

A column is a deterministic policy ``π`` and one recurrent class ``C`` of its chain, with the stationary
distribution ``μ`` on ``C``: its occupancy is ``ρ(s, π(s)) = μ(s)`` on ``C`` and 0 elsewhere, a vertex of the
occupancy polytope (docs/math.md §2). The pool keeps the policies, so that when the kernel changes (a new posterior
sample, a new plug-in estimate) every column is re-evaluated on the new kernel and still is a vertex: the warm start
of the next solve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .chains import KernelMatrix, stationary_distributions

__all__ = ["Column", "ColumnPool"]


@dataclass
class Column:
    """One vertex: a deterministic policy, one recurrent class of its chain and the stationary law on it."""

    actions: np.ndarray
    states: np.ndarray
    distribution: np.ndarray
    #: the policy's chain has several recurrent classes (this column is one of them)
    multichain: bool = False

    def aggregate(self, signals: np.ndarray) -> np.ndarray:
        """``Σ_s μ(s) signal_k(s, π(s))`` for every signal k (signals of shape (k, S, A))."""
        return signals[:, self.states, self.actions[self.states]] @ self.distribution


class ColumnPool:
    """The columns found so far, with their aggregates for the current signals.

    Parameters
    ----------
    n_states, n_actions : int
    """

    def __init__(self, n_states: int, n_actions: int):
        self.n_states, self.n_actions = n_states, n_actions
        self.columns: list[Column] = []
        self._policies: set[bytes] = set()
        self._signals: tuple[np.ndarray, np.ndarray] = (np.zeros((0, n_states, n_actions)),) * 2
        #: the columns' reward and cost aggregates, shapes (K', n) and (d', n)
        self.rewards = np.zeros((0, 0))
        self.costs = np.zeros((0, 0))

    def __len__(self) -> int:
        return len(self.columns)

    def knows(self, actions: np.ndarray) -> bool:
        """True when this policy's columns are in the pool."""
        return np.asarray(actions, dtype=np.int64).tobytes() in self._policies

    def add_policy(self, kernel: KernelMatrix, actions: np.ndarray, start: np.ndarray | None = None) -> int:
        """Evaluate ``actions`` on ``kernel`` and add one column per recurrent class; return how many were added
        (0 for a policy already in the pool). ``start``: where the stationary solve starts (see
        :func:`~.chains.stationary_distributions`)."""
        actions = np.asarray(actions, dtype=np.int64).copy()
        if self.knows(actions):
            return 0
        classes = stationary_distributions(kernel, actions, start)
        multichain = len(classes) > 1
        self._policies.add(actions.tobytes())
        new = [Column(actions, c.states, c.distribution, multichain) for c in classes]
        self.columns += new
        rewards, costs = self._signals
        self.rewards = np.hstack([self.rewards, _aggregates(new, rewards)])
        self.costs = np.hstack([self.costs, _aggregates(new, costs)])
        return len(new)

    def set_signals(self, rewards: np.ndarray, costs: np.ndarray) -> None:
        """New reward and cost signals (K', S, A) and (d', S, A): every column's aggregates are recomputed."""
        self._signals = (np.asarray(rewards, dtype=float), np.asarray(costs, dtype=float))
        self._aggregate_all()

    def _aggregate_all(self) -> None:
        rewards, costs = self._signals
        self.rewards, self.costs = _aggregates(self.columns, rewards), _aggregates(self.columns, costs)

    def reevaluate(self, kernel: KernelMatrix) -> None:
        """Re-evaluate every kept policy on a new kernel (its recurrent classes may change), each stationary solve
        started from the policy's law on the previous kernel."""
        laws: dict[bytes, np.ndarray] = {}
        for column in self.columns:
            law = laws.setdefault(column.actions.tobytes(), np.zeros(self.n_states))
            law[column.states] += column.distribution
        self.columns, self._policies = [], set()
        self.rewards, self.costs = self.rewards[:, :0], self.costs[:, :0]
        for key, law in laws.items():
            self.add_policy(kernel, np.frombuffer(key, dtype=np.int64), law)

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the columns where ``mask`` is True (a policy leaves with all its columns)."""
        mask = np.asarray(mask, dtype=bool)
        kept_policies = {c.actions.tobytes() for c, keep in zip(self.columns, mask, strict=True) if keep}
        mask = np.array([c.actions.tobytes() in kept_policies for c in self.columns], dtype=bool)
        self.columns = [c for c, keep in zip(self.columns, mask, strict=True) if keep]
        self._policies = kept_policies
        self.rewards, self.costs = self.rewards[:, mask], self.costs[:, mask]

    def occupancy(self, weights: np.ndarray) -> np.ndarray:
        """The mixture ``Σ_j w_j ρ_j`` as an (S, A) array."""
        rho = np.zeros((self.n_states, self.n_actions))
        for column, weight in zip(self.columns, weights, strict=True):
            if weight > 0.0:
                rho[column.states, column.actions[column.states]] += weight * column.distribution
        return rho


def _aggregates(columns: list[Column], signals: np.ndarray) -> np.ndarray:
    """The aggregates of ``columns`` for ``signals`` (k, S, A), shape (k, len(columns))."""
    out = np.empty((signals.shape[0], len(columns)))
    for j, column in enumerate(columns):
        out[:, j] = column.aggregate(signals)
    return out

"""Column generation for the episodic occupancy program: deterministic Markov policies, priced by backward induction.

The episodic occupancy program (:class:`~curlopt.programs.episodic.EpisodicOccupancyProgram`, docs/math.md §10) is,
over the per-step occupancies ``q = (q_0, …, q_{H−1})`` of its kernels, a problem in the per-episode totals
``λ_k = Σ_h Σ_{s,a} r_{k,h}(s,a) q_h(s,a)`` and ``ζ_i`` (likewise with the costs), both linear in ``q``. The vertices of
the polytope of those occupancies are the occupancies of *deterministic Markov policies* ``π = (π_0, …, π_{H−1})``
(one deterministic policy per step), so the search of :mod:`.search` with the masters of :mod:`.masters` and
:mod:`.conic` applies unchanged, with two different parts:

* **a column** is such a policy; its occupancy comes from the forward recursion ``d_0 = μ``,
  ``q_h(s, π_h(s)) = d_h(s)``, ``d_{h+1}(s') = Σ_s P_h(s'|s, π_h(s)) d_h(s)``: one column per policy (an episode
  has no recurrent classes to split);
* **pricing** maximises the master's affine upper model ``a·λ(q) + b·ζ(q) = Σ_h Σ_{s,a} x_h(s,a) q_h(s,a)`` with
  ``x_h = a·r_h + b·c_h`` over every occupancy: one backward induction ``V_H = 0``,
  ``V_h(s) = max_a [x_h(s,a) + Σ_{s'} P_h(s'|s,a) V_{h+1}(s')]``, whose value ``μ·V_0`` is exact. The certificate
  ``κ + μ·V_0 − v`` of each round is then exact too: no sweeps, and no share of the tolerance left to an oracle.

The kernels are the program's, one :class:`~.chains.KernelMatrix` per transition (one object for all of them when
the kernel is time-homogeneous, so a dense kernel is stored once); the signals are the program's per-step signals.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...programs.blocks import Program
from ...utilities.library import Utility
from .chains import KernelMatrix
from .masters import MasterSolution
from .search import ColumnSearch
from .values import GainBounds

__all__ = ["EpisodicProblem", "StepKernels", "EpisodicPool", "EpisodicColumnSearch", "backward_induction"]


@dataclass
class EpisodicProblem:
    """The episodic occupancy program in its totals (module doc), in the attributes the masters read.

    Attributes
    ----------
    objective : Utility
        ``f`` of the reward totals λ, maximised.
    reward_signals : ndarray, shape (K, H, S, A)
        ``r_{k,h}(s,a)`` (the signal first, as the masters count signals by the first axis).
    constraints : tuple of Utility
        ``g_m`` of the cost totals; rows ``g_m(ζ) <= −ε``.
    cost_signals : ndarray, shape (d, H, S, A)
    """

    objective: Utility
    reward_signals: np.ndarray
    constraints: tuple[Utility, ...]
    cost_signals: np.ndarray

    @classmethod
    def read(cls, program: Program) -> EpisodicProblem:
        """The problem of an episodic occupancy program with its current signals."""
        rewards = np.asarray(program.rewards).transpose(1, 0, 2, 3)  # type: ignore[attr-defined]
        costs = np.asarray(program.costs).transpose(1, 0, 2, 3)  # type: ignore[attr-defined]
        return cls(program.objective, rewards, tuple(program.constraints), costs)

    @property
    def least_violation(self) -> bool:
        """False: the episodic occupancy program always has an objective."""
        return False

    def utilities(self) -> list[tuple[str, Utility]]:
        """``(role, utility)`` of the objective and every constraint, for messages."""
        return [("the objective", self.objective)] + [(f"constraint {m}", g) for m, g in enumerate(self.constraints)]

    def solution_vector(self, program: Program, occupancy: np.ndarray) -> np.ndarray:
        """The per-step occupancy (H, S, A) written in the program's variable layout, with its totals."""
        rewards, costs = program.totals(occupancy)  # type: ignore[attr-defined]
        filled = {"occupancy": occupancy.ravel(), "reward_totals": rewards, "cost_totals": costs}
        x = np.zeros(program.n_vars)
        for name, block in program.blocks.items():
            if name not in filled:
                raise TypeError(f"the program has a variable block {name!r} this backend does not know")
            x[block.slice] = filled[name]
        return x


class StepKernels:
    """The kernels of the H − 1 transitions of an episode, each a :class:`~.chains.KernelMatrix`.

    Parameters
    ----------
    kernels : list
        The program's kernels, one per transition (dense (S, A, S) arrays or CSR (S·A, S) matrices); the same object
        repeated (a time-homogeneous kernel) becomes one matrix.
    n_states, n_actions : int
    """

    def __init__(self, kernels: list[Any], n_states: int, n_actions: int):
        self.n_states, self.n_actions = int(n_states), int(n_actions)
        built: dict[int, KernelMatrix] = {}
        self.steps: list[KernelMatrix] = []
        for kernel in kernels:
            if id(kernel) not in built:
                built[id(kernel)] = KernelMatrix(kernel, n_states, n_actions)
            self.steps.append(built[id(kernel)])

    def __len__(self) -> int:
        return len(self.steps)

    def forward(self, initial: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The state laws ``d_h`` (H, S) of the deterministic Markov policy ``actions`` (H, S) from ``initial``."""
        horizon = actions.shape[0]
        laws = np.empty((horizon, self.n_states))
        laws[0] = initial
        for h in range(horizon - 1):
            laws[h + 1] = self.steps[h].chain(actions[h]).T @ laws[h]
        return laws


def backward_induction(kernels: StepKernels, signal: np.ndarray, initial: np.ndarray) -> tuple[np.ndarray, float]:
    """The best deterministic Markov policy (H, S) for the per-step reward ``signal`` (H, S, A) and its value
    ``μ·V_0`` (module doc); ties go to the lowest action."""
    horizon, n_states = signal.shape[0], kernels.n_states
    actions = np.empty((horizon, n_states), dtype=np.int64)
    values = np.zeros(n_states)
    states = np.arange(n_states)
    for h in reversed(range(horizon)):
        q = signal[h] + kernels.steps[h].expected(values) if h < horizon - 1 else signal[h]
        actions[h] = np.argmax(q, axis=1)
        values = q[states, actions[h]]
    return actions, float(initial @ values)


@dataclass
class EpisodicColumn:
    """One vertex: a deterministic Markov policy (H, S) and its state laws (H, S) on the current kernels."""

    actions: np.ndarray
    laws: np.ndarray

    def aggregate(self, signals: np.ndarray) -> np.ndarray:
        """``Σ_h Σ_s d_h(s) x_{k,h}(s, π_h(s))`` for every signal k of ``signals`` (k, H, S, A)."""
        horizon, n_states = self.actions.shape
        taken = signals[:, np.arange(horizon)[:, None], np.arange(n_states)[None, :], self.actions]  # (k, H, S)
        return np.einsum("khs,hs->k", taken, self.laws)


class EpisodicPool:
    """The policies found so far, with their reward and cost totals for the current signals (the interface of
    :class:`~.pool.ColumnPool` that :class:`~.search.ColumnSearch` uses).

    Parameters
    ----------
    initial : ndarray, shape (S,)
        ``μ``, the law of the first state.
    horizon, n_actions : int
    """

    def __init__(self, initial: np.ndarray, horizon: int, n_actions: int):
        self.initial = np.asarray(initial, dtype=float)
        self.horizon, self.n_states, self.n_actions = int(horizon), self.initial.size, int(n_actions)
        self.columns: list[EpisodicColumn] = []
        self._policies: set[bytes] = set()
        empty = np.zeros((0, self.horizon, self.n_states, self.n_actions))
        self._signals: tuple[np.ndarray, np.ndarray] = (empty, empty)
        #: the columns' reward and cost totals, shapes (K, n) and (d, n)
        self.rewards = np.zeros((0, 0))
        self.costs = np.zeros((0, 0))

    def __len__(self) -> int:
        return len(self.columns)

    def add_policy(self, kernels: StepKernels, actions: np.ndarray) -> int:
        """Evaluate the policy ``actions`` (H, S) on ``kernels`` and add its column; 1, or 0 when it is known."""
        actions = np.asarray(actions, dtype=np.int64).copy()
        key = actions.tobytes()
        if key in self._policies:
            return 0
        column = EpisodicColumn(actions, kernels.forward(self.initial, actions))
        self._policies.add(key)
        self.columns.append(column)
        rewards, costs = self._signals
        # the totals are (signals, columns) arrays, also with no signal (a model without costs): (0, n)
        self.rewards = np.hstack([self.rewards.reshape(rewards.shape[0], len(self.columns) - 1),
                                  column.aggregate(rewards)[:, None]])
        self.costs = np.hstack([self.costs.reshape(costs.shape[0], len(self.columns) - 1),
                                column.aggregate(costs)[:, None]])
        return 1

    def set_signals(self, rewards: np.ndarray, costs: np.ndarray) -> None:
        """New signals (K, H, S, A) and (d, H, S, A): every column's totals are recomputed (its laws stay)."""
        self._signals = (np.asarray(rewards, dtype=float), np.asarray(costs, dtype=float))
        self._aggregate_all()

    def _aggregate_all(self) -> None:
        rewards, costs = self._signals
        self.rewards = np.stack([c.aggregate(rewards) for c in self.columns], axis=1) if self.columns else \
            np.zeros((rewards.shape[0], 0))
        self.costs = np.stack([c.aggregate(costs) for c in self.columns], axis=1) if self.columns else \
            np.zeros((costs.shape[0], 0))

    def reevaluate(self, kernels: StepKernels) -> None:
        """Re-evaluate every kept policy's laws on new kernels (and its totals)."""
        for column in self.columns:
            column.laws = kernels.forward(self.initial, column.actions)
        self._aggregate_all()

    def keep(self, mask: np.ndarray) -> None:
        """Keep only the columns where ``mask`` is True."""
        mask = np.asarray(mask, dtype=bool)
        self.columns = [c for c, keep in zip(self.columns, mask, strict=True) if keep]
        self._policies = {c.actions.tobytes() for c in self.columns}
        self.rewards, self.costs = self.rewards[:, mask], self.costs[:, mask]

    def occupancy(self, weights: np.ndarray) -> np.ndarray:
        """The mixture ``Σ_j w_j q_j`` as an (H, S, A) array."""
        q = np.zeros((self.horizon, self.n_states, self.n_actions))
        steps, states = np.arange(self.horizon)[:, None], np.arange(self.n_states)[None, :]
        for column, weight in zip(self.columns, weights, strict=True):
            if weight > 0.0:
                q[steps, states, column.actions] += weight * column.laws
        return q


class EpisodicColumnSearch(ColumnSearch):
    """:class:`~.search.ColumnSearch` on an :class:`EpisodicPool`, with ``kernel`` a :class:`StepKernels` and pricing
    by :func:`backward_induction` (exact: every round's bound is converged)."""

    def seed(self) -> None:
        """Fill an empty pool with the best policy of each reward signal and the cheapest of each cost signal (each
        by backward induction): vertices that keep a concave objective's domain and the rows reachable."""
        problem, initial = self.problem, self.pool.initial
        signals = [s for s in problem.reward_signals] + [-s for s in problem.cost_signals]
        shape = (self.pool.horizon, self.pool.n_states, self.pool.n_actions)
        for signal in signals or [np.zeros(shape)]:
            self.pool.add_policy(self.kernel, backward_induction(self.kernel, signal, initial)[0])

    def _price(self, solution: MasterSolution, target: float, tolerance: float, mode: str, force: bool) -> GainBounds:
        """Backward induction on the master's prices: the best policy and the exact maximum of the model's linear
        part (returned as converged gain bounds, ``lower = upper``)."""
        problem = self.problem
        signal = np.tensordot(solution.objective_prices, problem.reward_signals, axes=1) \
            if problem.reward_signals.shape[0] else 0.0
        signal = signal + np.tensordot(solution.constraint_prices, problem.cost_signals, axes=1)
        signal = np.broadcast_to(signal, (self.pool.horizon, self.pool.n_states, self.pool.n_actions))
        started = time.perf_counter()
        actions, value = backward_induction(self.kernel, signal, self.pool.initial)
        self.oracle_time += time.perf_counter() - started
        return GainBounds(actions, np.zeros(0), value, value, 0, True)

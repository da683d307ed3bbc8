"""Column generation with an MDP oracle (fully corrective Frank–Wolfe over the vertices of the occupancy polytope).

Each round:

1. the master (:mod:`.masters`, :mod:`.conic`) mixes the pool's columns and returns its weights, its value ``v`` and
   an affine upper model ``κ + a·λ'(ρ) + b·ζ'(ρ)`` of the problem;
2. the model's linear part is a reward per pair, ``a·r'(s,a) + b·c'(s,a)``; relative value iteration
   (:mod:`.values`) bounds the best gain ``g*`` of that reward over all policies, and its greedy policy has gain at
   least the lower bound;
3. ``κ + g*`` bounds the optimum of the whole problem, so ``gap = κ + upper(g*) - v`` certifies the master's
   mixture: the search stops when ``gap <= tolerance · max(1, |v|)``; otherwise the greedy policy enters the pool
   (one column per recurrent class of its chain).

Phase 1 is the same search in the ``violation`` mode: it stops as soon as the mixture satisfies every row to the
feasibility tolerance (feasible), or when the bound proves that no occupancy does (``min_ρ max_m (G_m + ε) >=
-(κ + upper) >`` the feasibility tolerance: infeasible).

A search that reaches its round or time limit says so (``iteration_limit``, ``time_limit``) with the gap it
had; it never returns an uncertified point as optimal. A round whose greedy policy is already in the pool while the
value iteration has converged means the master's own accuracy limits the gap: the point is returned as
``almost_optimal`` when the gap is within :data:`ALMOST_GAP` (relative), else as a ``numerical_error``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from ...utilities.library import Utility
from ..base import call_utility
from ..results import Status
from .masters import MasterSolution
from .values import GainBounds, relative_value_iteration

__all__ = ["SearchSettings", "Outcome", "ColumnSearch", "ALMOST_GAP", "ORACLE_SHARE", "ENDINGS"]

#: a stalled search (see the module doc) keeps its point as ``almost_optimal`` up to this relative gap
ALMOST_GAP = 1e-6
#: the value iteration's span tolerance, as a share of the gap tolerance (the rest is left to the master)
ORACLE_SHARE = 0.25
#: a column with at most this weight counts as unused when the pool is pruned
UNUSED_WEIGHT = 1e-12


#: how a search can end, in its own words -> the status it gives (a failed master gives the master solver's status)
ENDINGS: dict[str, Status] = {
    "certified": Status.OPTIMAL,
    "rows hold": Status.OPTIMAL,
    "stalled near the optimum": Status.ALMOST_OPTIMAL,
    "proven infeasible": Status.INFEASIBLE,
    "round limit": Status.ITERATION_LIMIT,
    "time limit": Status.TIME_LIMIT,
    "stalled": Status.NUMERICAL_ERROR,
}


@dataclass(frozen=True)
class SearchSettings:
    """The limits and tolerances of a search (the backend's options, see :class:`~.backend.MdpColumnsBackend`)."""

    tolerance: float
    feasibility_tolerance: float
    max_rounds: int
    max_sweeps: int
    max_columns: int


@dataclass
class Outcome:
    """How a search ended: a status, the weights of the pool's columns (with a solution) and the certified gap."""

    status: Status
    weights: np.ndarray | None = None
    gap: float = math.nan
    message: str = ""
    #: the ending's name (a key of :data:`ENDINGS`), or "master" when the master failed
    ending: str = "master"

    @classmethod
    def ended(cls, ending: str, weights: np.ndarray | None = None, gap: float = math.nan,
              message: str = "") -> Outcome:
        """The outcome of one of the search's own :data:`ENDINGS`."""
        return cls(ENDINGS[ending], weights, gap, message, ending)


@dataclass
class ColumnSearch:
    """One solve's column generation on a pool (the pool and the value-iteration warm starts outlive it).

    ``kernel``, ``problem`` and ``pool`` are a :class:`~.chains.KernelMatrix`, an :class:`~.problem.OccupancyProblem`
    and a :class:`~.pool.ColumnPool`; the episodic search (:class:`~.episodic.EpisodicColumnSearch`) gives its own
    kinds of them, with the same attributes, and its own pricing.
    """

    kernel: Any
    problem: Any
    pool: Any
    master: object
    settings: SearchSettings
    epsilon: float
    #: seconds left of the backend's time limit (None without one), asked between rounds
    time_left: Callable[[], float | None]
    values: dict = field(default_factory=dict)
    rounds: int = 0
    sweeps: int = 0
    master_time: float = 0.0
    oracle_time: float = 0.0

    def seed(self) -> None:
        """Fill an empty pool with the myopic policies of each signal: the best immediate reward of each reward
        signal and the smallest immediate cost of each cost signal (cheap vertices that keep a concave objective's
        domain reachable)."""
        signals = [s for s in self.problem.reward_signals] + [-s for s in self.problem.cost_signals]
        for signal in signals or [np.zeros((self.kernel.n_states, self.kernel.n_actions))]:
            self.pool.add_policy(self.kernel, np.argmax(signal, axis=1))

    def value(self, weights: np.ndarray, mode: str) -> float:
        """The mode's objective at a mixture: ``F(Λ w)``, or ``-max_m (G_m(Z w) + ε)`` in the violation mode."""
        if mode == "violation":
            costs = self.pool.costs @ weights
            worst = max(float(call_utility(g, f"constraint {m}", "value", g.value, costs)) + self.epsilon
                        for m, g in enumerate(self.problem.constraints))
            return -worst
        f = cast(Utility, self.problem.objective)  # the modes other than "violation" have an objective
        return float(call_utility(f, "the objective", "value", f.value, self.pool.rewards @ weights))

    def run(self, mode: str, feasibility: bool = False) -> Outcome:
        """Column generation in ``mode`` until certified (or, with ``feasibility``, until the rows hold or are proven
        infeasible), a limit, or a master failure."""
        force = False  # converge the value iteration fully (a round without a new column asks for it)
        while True:
            solution = self.master.solve(self.pool.rewards, self.pool.costs, self.epsilon, mode,  # type: ignore[attr-defined]
                                         self.time_left())
            self.master_time += solution.solver_time
            if not solution.status.has_solution:
                return Outcome(solution.status, message=solution.message)
            weights = solution.weights
            value = self.value(weights, mode)
            if feasibility and value >= -self.settings.feasibility_tolerance:
                return Outcome.ended("rows hold", weights)
            tolerance = self.settings.tolerance * max(1.0, abs(value))
            with np.errstate(invalid="ignore"):  # NaN prices (see the master) end just below as a numerical error
                bounds = self._price(solution, value - solution.constant, tolerance, mode, force)
            upper = solution.constant + bounds.upper
            if not (math.isfinite(upper) and math.isfinite(value)):
                # max(0, nan) is 0: without this a NaN bound (an infinite gradient, e.g. an entropy's at a total of 0
                # no policy can raise) would read as a certificate of optimality
                return Outcome(Status.NUMERICAL_ERROR, message=(
                    f"the column generation's upper bound is {upper} at value {value} (the master's prices are not"
                    " finite, e.g. the objective's gradient is infinite at a total on the bound of its domain), so"
                    " no optimum is certified"))
            gap = max(0.0, upper - value)
            self.rounds += 1
            if feasibility and -upper > self.settings.feasibility_tolerance:
                return Outcome.ended("proven infeasible", gap=gap, message=f"no occupancy satisfies the rows: the largest"
                               f" constraint value is at least {-upper:.6g} > 0 at every occupancy")
            if gap <= tolerance and not feasibility:
                return Outcome.ended("certified", weights, gap)
            limit = self._limit(gap)
            if limit is not None:
                return limit
            added = self.pool.add_policy(self.kernel, bounds.actions)
            if not added and bounds.converged:
                return self._stalled(weights, gap, value, feasibility)
            force = not added
            if len(self.pool) > self.settings.max_columns:
                self.pool.keep(np.concatenate([weights > UNUSED_WEIGHT, np.ones(added, dtype=bool)]))

    def _price(self, solution: MasterSolution, target: float, tolerance: float, mode: str, force: bool) -> GainBounds:
        """Relative value iteration on the model's reward, warm-started from this mode's last values."""
        problem = self.problem
        reward = (np.tensordot(solution.objective_prices, problem.reward_signals, axes=1)
                  if problem.reward_signals.shape[0] else 0.0)
        reward = reward + np.tensordot(solution.constraint_prices, problem.cost_signals, axes=1)
        reward = np.broadcast_to(reward, (self.kernel.n_states, self.kernel.n_actions))
        started = time.perf_counter()
        bounds = relative_value_iteration(self.kernel, reward, self.values.get(mode), tolerance=ORACLE_SHARE * tolerance,
                                          max_sweeps=self.settings.max_sweeps, enough=None if force else target,
                                          stop=self._out_of_time)
        self.oracle_time += time.perf_counter() - started
        self.values[mode] = bounds.values
        self.sweeps += bounds.sweeps
        return bounds

    def _out_of_time(self) -> bool:
        left = self.time_left()
        return left is not None and left <= 0

    def _limit(self, gap: float) -> Outcome | None:
        """An outcome when the round or time limit is reached, else None."""
        settings = self.settings
        if self.rounds >= settings.max_rounds:
            return Outcome.ended("round limit", gap=gap, message=f"column generation stopped at its limit of"
                           f" {settings.max_rounds} rounds with an optimality gap of {gap:.3g} (raise max_rounds)")
        left = self.time_left()
        if left is not None and left <= 0:
            # the base class adds which limit it was
            return Outcome.ended("time limit", gap=gap, message=f"column generation stopped after {self.rounds} rounds"
                                 f" with an optimality gap of {gap:.3g}")
        return None

    def _stalled(self, weights: np.ndarray, gap: float, value: float, feasibility: bool) -> Outcome:
        """No new column although the value iteration converged: the master's accuracy limits the gap."""
        why = (f"column generation stalled with an optimality gap of {gap:.3g}: the best policy is already in the"
               f" master, whose own accuracy limits the gap")
        if feasibility:
            return Outcome.ended("stalled", gap=gap, message=why + f"; the rows' feasibility is undecided"
                           f" (smallest violation found {-value:.3g})")
        if gap <= ALMOST_GAP * max(1.0, abs(value)):
            return Outcome.ended("stalled near the optimum", weights, gap, why)
        return Outcome.ended("stalled", gap=gap, message=why)

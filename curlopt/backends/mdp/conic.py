"""The master of column generation as a small conic program (CVXPY), for DCP utilities (log, α-fair, norms...).

The master's data are two parameter matrices, the columns' reward aggregates ``Λ`` (K' × n) and cost aggregates
``Z`` (d' × n), and ε. CVXPY canonicalises each mode's problem once for a *capacity* of columns (DPP: the
utilities are applied to ``Λ w`` and ``Z w``, affine in the weights with parameter coefficients), and a re-solve
only substitutes numbers. Fewer columns than the capacity are padded with copies of the first one (a copy changes
nothing in the problem; its weight is given back to the original). More columns than the capacity rebuild the
problems at twice the size.

The interior-point solution is then polished by Newton's method on the master's optimality conditions
(:mod:`.polish`), so that its multipliers are exact. The affine upper model (see :mod:`.masters`) comes from the
gradients at the master's aggregates and the rows' multipliers: ``F(λ) <= F(λ̄) + ∇F(λ̄)·(λ - λ̄)`` (F concave) and ``G_m(ζ) >= G_m(ζ̄) + ∇G_m(ζ̄)·(ζ - ζ̄)`` (G_m convex).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from ...utilities.library import Utility
from ..results import Status
from .masters import MasterSolution
from .polish import polish
from .problem import OccupancyProblem

__all__ = ["ConicMaster", "INITIAL_CAPACITY"]

#: columns the problems are first compiled for
INITIAL_CAPACITY = 32
#: CVXPY statuses that come with a point
_WITH_POINT = ("optimal", "optimal_inaccurate")


class ConicMaster:
    """The master (modes of :mod:`.masters`) on CVXPY, solvers tried in order.

    Parameters
    ----------
    problem : OccupancyProblem
    solvers : sequence of str
        CVXPY solver names tried in order (the first with a point is used).
    solver_options : dict
        Per-solver settings (the cvxpy backend's defaults: tolerances 1e-9).
    """

    solver = "CVXPY"

    def __init__(self, problem: OccupancyProblem, solvers: Sequence[str], solver_options: dict[str, dict[str, Any]]):
        self.problem = problem
        self.solvers = list(solvers)
        self.solver_options = solver_options
        self.capacity = 0
        self._problems: dict[str, Any] = {}

    def _build(self, capacity: int) -> None:
        """Variables, parameters and the three modes' problems for ``capacity`` columns (compiled on first solve)."""
        import cvxpy as cp

        from ..cvxpy import cvxpy_expression

        problem = self.problem
        self.capacity = capacity
        self.weights = cp.Variable(capacity, nonneg=True)
        self.level = cp.Variable()
        self.epsilon = cp.Parameter(nonneg=True)
        n_rewards, n_costs = problem.reward_signals.shape[0], problem.cost_signals.shape[0]
        self.rewards = cp.Parameter((n_rewards, capacity)) if n_rewards else None
        self.costs = cp.Parameter((n_costs, capacity)) if n_costs else None
        mass = [cp.sum(self.weights) == 1]
        g = [cvxpy_expression(u, self.costs @ self.weights, f"constraint {m}")
             for m, u in enumerate(problem.constraints)]
        self.rows = {"objective": [e <= -self.epsilon for e in g], "violation": [e + self.epsilon <= self.level for e in g]}
        self._problems = {"violation": cp.Problem(cp.Minimize(self.level), mass + self.rows["violation"])}
        if problem.objective is not None:
            f = cvxpy_expression(problem.objective, self.rewards @ self.weights, "the objective")
            self._problems["objective"] = cp.Problem(cp.Maximize(f), mass + self.rows["objective"])
            self._problems["unconstrained"] = cp.Problem(cp.Maximize(f), mass)

    def solve(self, rewards: np.ndarray, costs: np.ndarray, epsilon: float, mode: str,
              time_left: float | None = None) -> MasterSolution:
        """The master over the given columns' aggregates (see :class:`~.masters.LinearMaster.solve`); each solver
        gets ``time_left`` seconds through its own setting (None: no limit)."""
        n = rewards.shape[1] if rewards.size else costs.shape[1]
        if n > self.capacity:
            self._build(max(INITIAL_CAPACITY, 2 * self.capacity, n))
        pad = np.zeros(self.capacity - n, dtype=np.int64)  # copies of column 0
        if self.rewards is not None:
            self.rewards.value = np.hstack([rewards, rewards[:, pad]])
        if self.costs is not None:
            self.costs.value = np.hstack([costs, costs[:, pad]])
        self.epsilon.value = float(epsilon)
        status, notes, elapsed = self._run(self._problems[mode], time_left)
        if not status.has_solution:
            return MasterSolution(status, message="; ".join(notes), solver_time=elapsed)
        raw = np.clip(np.asarray(self.weights.value, dtype=float), 0.0, None)
        weights = raw[:n].copy()
        weights[0] += raw[n:].sum()
        weights /= weights.sum()
        mu = np.array([max(0.0, float(np.asarray(row.dual_value).reshape(-1)[0])) for row in self.rows.get(mode, [])]
                      if mode != "unconstrained" else [0.0] * len(self.problem.constraints))
        # On the edge of a utility's domain (an entropy with a total no policy can raise) the gradients are
        # infinite and the prices below NaN: the polish then gives up and the search reports the non-finite bound as
        # a numerical error, so numpy's warnings about those products would say nothing the result does not.
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            if mode != "violation":
                started = time.perf_counter()
                polished = self._polish(rewards, costs, weights, mu, epsilon, mode == "objective")
                elapsed += time.perf_counter() - started
                if polished is not None:
                    weights, mu = polished
            a, b, kappa = self._model(rewards @ weights, costs @ weights, mu, epsilon, mode)
        return MasterSolution(status, weights, a, b, kappa, "; ".join(notes), elapsed)

    def _polish(self, rewards: np.ndarray, costs: np.ndarray, weights: np.ndarray, mu: np.ndarray, epsilon: float,
                with_rows: bool) -> tuple[np.ndarray, np.ndarray] | None:
        """:func:`~.polish.polish`, or None when a utility has no Hessian (the interior-point solution stands)."""
        try:
            return polish(self.problem, rewards, costs, weights, mu, epsilon, with_rows)
        except (NotImplementedError, np.linalg.LinAlgError, FloatingPointError):
            return None

    def _run(self, problem: Any, time_left: float | None) -> tuple[Status, list[str], float]:
        """Solve with each solver in turn until one gives a point; (status, notes, solver seconds). A solver stopped
        by its limit while ``time_left`` was given is at the time limit."""
        import cvxpy as cp

        from ..cvxpy import STATUS_MAP, TIME_LIMIT_SETTINGS

        notes: list[str] = []
        status = Status.SOLVER_ERROR
        elapsed = 0.0
        for solver in self.solvers:
            started = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                    settings = dict(self.solver_options.get(solver, {}))
                    if time_left is not None and solver in TIME_LIMIT_SETTINGS:
                        settings[TIME_LIMIT_SETTINGS[solver]] = max(time_left - elapsed, 1e-9)
                    problem.solve(solver=solver, **settings)
            except cp.error.SolverError as exc:
                notes.append(f"{solver}: {exc}")
                continue
            finally:
                elapsed += time.perf_counter() - started
            status = STATUS_MAP.get(problem.status, Status.UNKNOWN)
            if time_left is not None and status is Status.ITERATION_LIMIT:
                status = Status.TIME_LIMIT
            if problem.status in _WITH_POINT and self.weights.value is not None:
                return status, notes, elapsed
            notes.append(f"{solver}: {problem.status} on the master")
            if status in (Status.INFEASIBLE, Status.UNBOUNDED):
                break
        return status, notes, elapsed

    def _model(self, reward_aggregate: np.ndarray, cost_aggregate: np.ndarray, mu: np.ndarray, epsilon: float,
               mode: str) -> tuple[np.ndarray, np.ndarray, float]:
        """The affine upper model from gradients at the master's aggregates and the rows' duals."""
        problem = self.problem
        a, b, kappa = np.zeros(reward_aggregate.size), np.zeros(cost_aggregate.size), 0.0
        if mode != "violation":
            f = cast(Utility, problem.objective)  # the modes other than "violation" have an objective
            a = np.asarray(f.gradient(reward_aggregate), dtype=float)
            kappa = float(f.value(reward_aggregate)) - float(a @ reward_aggregate)
        if mode == "unconstrained" or not problem.constraints:
            return a, b, kappa
        if mode == "violation" and mu.sum() > 0:
            mu = mu / mu.sum()
        for m, g in enumerate(problem.constraints):
            grad = np.asarray(g.gradient(cost_aggregate), dtype=float)
            b = b - mu[m] * grad
            kappa -= mu[m] * (float(g.value(cost_aggregate)) - float(grad @ cost_aggregate) + epsilon)
        return a, b, kappa

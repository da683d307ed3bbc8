"""The master problem of column generation: the best mixture of the occupancies found so far.

Columns are occupancies ``ρ_j`` of deterministic policies, kept as their aggregates ``λ'_j`` (K') and ``ζ'_j``
(d'). The master chooses weights ``w >= 0``, ``Σ w = 1`` in one of three modes:

``objective``      maximise ``F(Λ w)`` s.t. ``G_m(Z w) <= -ε`` for every m
``unconstrained``  maximise ``F(Λ w)``
``violation``      minimise ``max_m (G_m(Z w) + ε)`` (phase 1, and the least-violation problem)

Besides its weights, a master returns an *affine upper model* of its problem: prices ``a`` (K') and ``b`` (d') and
a constant ``κ`` such that for every occupancy ``ρ`` of the kernel satisfying the rows of the mode,

    value(ρ) <= κ + a·λ'(ρ) + b·ζ'(ρ)

(``value`` is ``F`` in the first two modes and ``-max_m (G_m + ε)`` in the third). Both sides are linear in ρ except
``value``, so maximising the right-hand side over all occupancies is one average-reward MDP (reward
``a·r' + b·c'`` per pair) and bounds the optimum of the whole problem: the certificate of column generation.
The model comes from the master's multipliers (an epigraph's and the rows' duals, or gradients and row duals for a
smooth utility); it is valid for *any* non-negative multipliers, so an inexact master can loosen the certificate but
never make it wrong.

:class:`LinearMaster` solves LP-representable problems with HiGHS; :class:`ConicMaster` DCP ones with CVXPY
(compiled once with Parameters, re-solved as columns arrive).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..results import Status
from .problem import OccupancyProblem

__all__ = ["MasterSolution", "LinearMaster", "MODES", "epigraph_model"]

MODES = ("objective", "unconstrained", "violation")


@dataclass
class MasterSolution:
    """A master's answer: status, weights and the affine upper model (module doc)."""

    status: Status
    weights: np.ndarray | None = None
    objective_prices: np.ndarray = field(default_factory=lambda: np.zeros(0))
    constraint_prices: np.ndarray = field(default_factory=lambda: np.zeros(0))
    constant: float = 0.0
    message: str = ""
    solver_time: float = 0.0


def _simplex(weights: np.ndarray) -> np.ndarray:
    """Non-negative weights summing to 1 (a multiplier vector made exactly dual feasible); zeros stay zeros."""
    weights = np.clip(np.asarray(weights, dtype=float), 0.0, None)
    total = weights.sum()
    return weights / total if total > 0 else weights


def epigraph_model(pieces: tuple[np.ndarray, np.ndarray], multipliers: np.ndarray) -> tuple[np.ndarray, float]:
    """``(a, κ)`` with ``min_j (W_j y + c_j) <= a·y + κ`` for every y: the pieces averaged by ``multipliers``
    (made a distribution)."""
    w, c = pieces
    y = _simplex(multipliers)
    return y @ w, float(y @ c)


def rows_model(pieces: list[tuple[np.ndarray, np.ndarray]], multipliers: np.ndarray, epsilon: float,
               normalise: bool) -> tuple[np.ndarray, float]:
    """``(b, κ)`` with ``-Σ μ_mj (W_mj ζ + c_mj + ε) = b·ζ + κ`` for the rows' multipliers μ >= 0 (made a
    distribution when ``normalise``: the violation mode's bound ``max >= Σ μ (...)`` needs one)."""
    w = np.vstack([p[0] for p in pieces])
    c = np.concatenate([p[1] for p in pieces])
    mu = _simplex(multipliers) if normalise else np.clip(multipliers, 0.0, None)
    return -(mu @ w), float(-(mu @ (c + epsilon)))


class LinearMaster:
    """The master as an LP on HiGHS, for LP-representable utilities (affine pieces).

    Columns: the weights ``w`` and, in the violation mode or for an objective with several pieces, one free level
    ``t``. Rows: ``Σ w = 1``; the objective's epigraph ``t - W_j Λ w <= c_j``; each constraint piece
    ``W_mj Z w <= -c_mj - ε`` (minus ``t`` in the violation mode, whose objective is ``max -t``).
    """

    solver = "HiGHS"

    def __init__(self, problem: OccupancyProblem, options: dict[str, Any]):
        self.problem = problem
        self.options = dict(options)
        self.f_pieces: Any = None if problem.objective is None else problem.objective.affine_pieces()
        self.g_pieces: Any = [g.affine_pieces() for g in problem.constraints]

    def solve(self, rewards: np.ndarray, costs: np.ndarray, epsilon: float, mode: str,
              time_left: float | None = None) -> MasterSolution:
        """The master over columns with reward aggregates ``rewards`` (K', n) and cost aggregates ``costs`` (d', n);
        HiGHS gets ``time_left`` seconds (None: no limit)."""
        import highspy

        from ..highs.backend import STATUS_MAP, new_highs

        matrix, lower, upper, cost, offset, groups = self._lp(rewards, costs, epsilon, mode)
        n = rewards.shape[1] if rewards.size else costs.shape[1]
        n_cols = matrix.shape[1]
        highs = new_highs()
        for key, value in self.options.items():
            highs.setOptionValue(key, value)
        if time_left is not None:
            highs.setOptionValue("time_limit", max(time_left, 0.0))
        inf = highspy.kHighsInf
        col_lower = np.concatenate([np.zeros(n), np.full(n_cols - n, -inf)])
        col_upper = np.full(n_cols, inf)
        csc = sp.csc_array(matrix)
        highs.passModel(n_cols, matrix.shape[0], csc.nnz, int(highspy.MatrixFormat.kColwise),
                        int(highspy.ObjSense.kMaximize), offset, cost, col_lower, col_upper,
                        np.where(np.isfinite(lower), lower, -inf), np.where(np.isfinite(upper), upper, inf),
                        csc.indptr.astype(np.int32), csc.indices.astype(np.int32), csc.data,
                        np.zeros(n_cols, dtype=np.int32))
        started = time.perf_counter()
        highs.run()
        elapsed = time.perf_counter() - started
        name = highs.getModelStatus().name
        status = STATUS_MAP.get(name, Status.UNKNOWN)
        if status is not Status.OPTIMAL:
            return MasterSolution(status, message=f"HiGHS model status {name} on the master", solver_time=elapsed)
        solution = highs.getSolution()
        duals = np.asarray(solution.row_dual, dtype=float)
        weights = np.clip(np.asarray(solution.col_value, dtype=float)[:n], 0.0, None)
        a, b, kappa = self._model(duals, groups, epsilon, mode, rewards.shape[0], costs.shape[0])
        return MasterSolution(Status.OPTIMAL, weights, a, b, kappa, solver_time=elapsed)

    def _lp(self, rewards: np.ndarray, costs: np.ndarray, epsilon: float, mode: str
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, dict[str, slice]]:
        """The LP's matrix (dense, small), row bounds, costs, offset and row groups."""
        n = rewards.shape[1] if rewards.size else costs.shape[1]
        epigraph = mode != "violation" and self.f_pieces is not None and self.f_pieces[0].shape[0] > 1
        level = epigraph or mode == "violation"
        width = n + (1 if level else 0)
        blocks = [np.concatenate([np.ones(n), np.zeros(width - n)])[None]]
        lower, upper = [np.ones(1)], [np.ones(1)]
        groups: dict[str, slice] = {}
        cost, offset = np.zeros(width), 0.0
        row = 1
        if mode != "violation":
            w, c = self.f_pieces
            if epigraph:
                blocks.append(np.hstack([-(w @ rewards), np.ones((w.shape[0], 1))]))
                lower.append(np.full(w.shape[0], -np.inf))
                upper.append(c.astype(float))
                groups["epigraph"] = slice(row, row + w.shape[0])
                row += w.shape[0]
                cost[n] = 1.0
            else:
                cost[:n] = w[0] @ rewards
                offset = float(c[0])
        if mode != "unconstrained" and self.g_pieces:
            w = np.vstack([p[0] for p in self.g_pieces])
            c = np.concatenate([p[1] for p in self.g_pieces])
            rows = w @ costs
            if mode == "violation":
                rows = np.hstack([rows, -np.ones((rows.shape[0], 1))])
                cost[n] = -1.0
            elif level:
                rows = np.hstack([rows, np.zeros((rows.shape[0], 1))])
            blocks.append(rows)
            lower.append(np.full(rows.shape[0], -np.inf))
            upper.append(-c - epsilon)
            groups["constraints"] = slice(row, row + rows.shape[0])
        return (np.vstack(blocks), np.concatenate(lower), np.concatenate(upper), cost, offset, groups)

    def _model(self, duals: np.ndarray, groups: dict[str, slice], epsilon: float, mode: str, n_rewards: int,
               n_costs: int) -> tuple[np.ndarray, np.ndarray, float]:
        """The affine upper model (module doc) from HiGHS's row duals (for a maximisation: d value / d bound)."""
        a, b, kappa = np.zeros(n_rewards), np.zeros(n_costs), 0.0
        if mode != "violation":
            w, c = self.f_pieces
            if "epigraph" in groups:
                a, kappa = epigraph_model((w, c), duals[groups["epigraph"]])
            else:
                a, kappa = w[0].astype(float), float(c[0])
        if "constraints" in groups:
            b, more = rows_model(self.g_pieces, duals[groups["constraints"]], epsilon, mode == "violation")
            kappa += more
        return a, b, kappa

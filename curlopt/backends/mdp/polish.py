"""An exact solution of the conic master: an active-set Newton method started from the interior-point solution.

An interior-point solver stops at tolerances of about 1e-9 in its own measure. For a smooth master (exponential
cones for a logarithm) that leaves the aggregates off by ~1e-9 and, worse, the multipliers and the Frank–Wolfe gap
of the pool off by up to ~1e-5 (a gap shrinks like the square root of the value's error): enough to keep column
generation's certificate from closing. The master is tiny (a few columns, a few constraints), so it is solved
again exactly, from the interior-point solution:

1. the support ``J`` (columns of weight >= :data:`SUPPORT_WEIGHT`) is reduced to affinely independent aggregates
   with the same mixture (Carathéodory: a null vector of ``[Y_J; 1]`` moves weight until a column leaves), so that
   the Karush–Kuhn–Tucker system below is square and regular;
2. Newton's method solves, for the support ``J`` and the active rows ``M``,

       Λ_j·∇F(Λw) - Σ_{m in M} μ_m ∇G_m(Zw)·Z_j - θ = 0     for j in J      (stationarity)
       G_m(Zw) + ε = 0                                      for m in M      (active rows)
       Σ_{j in J} w_j = 1

   (``maximise F(Λw)`` over the simplex with rows ``G_m(Zw) <= -ε``);
3. active-set steps: a negative weight leaves ``J``, a negative multiplier leaves ``M``, a violated row joins ``M``,
   and a pool column with a positive reduced value ``Λ_j·∇F - Σ μ_m ∇G_m·Z_j - θ`` joins ``J``; then 2 again.

It ends at a point satisfying every optimality condition of the master over the whole pool (to ~1e-12), or gives up
(None) after :data:`ATTEMPTS` steps, and the interior-point solution stands. Either way the certificate stays valid
(it holds for any non-negative multipliers): polishing only makes it tight.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ...utilities.library import Utility
from .problem import OccupancyProblem

__all__ = ["polish", "SUPPORT_WEIGHT", "ACTIVE_SLACK"]

#: columns with at least this weight in the interior-point solution form the first support (lighter ones are
#: interior-point residue; the active-set steps bring back any that the optimum needs)
SUPPORT_WEIGHT = 1e-6
#: a row with at most this slack (or a positive multiplier) starts in the active set
ACTIVE_SLACK = 1e-7
#: Newton steps per support, and the residual at which the system counts as solved
STEPS = 30
SOLVED = 1e-12
#: active-set steps before giving up
ATTEMPTS = 40
#: step halvings of a damped Newton step before giving up
HALVINGS = 30
#: aggregates whose affine span has a singular value below this share of the largest count as dependent
DEPENDENT = 1e-9


def polish(problem: OccupancyProblem, rewards: np.ndarray, costs: np.ndarray, weights: np.ndarray,
           multipliers: np.ndarray, epsilon: float, with_rows: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """Exact ``(weights, multipliers)`` of the master ``maximise F(Λw)`` (rows ``G_m(Zw) <= -ε`` when
    ``with_rows``) from the interior-point solution, or None when the active-set method does not end."""
    aggregates = np.vstack([rewards, costs])
    support, w = _independent(aggregates, weights)
    n_rows = len(problem.constraints) if with_rows else 0
    slack = np.array([-(float(g.value(costs @ weights)) + epsilon) for g in problem.constraints[:n_rows]])
    active = np.flatnonzero((slack <= ACTIVE_SLACK) | (multipliers[:n_rows] > ACTIVE_SLACK))
    system = _System(problem, rewards, costs, epsilon)
    for _ in range(ATTEMPTS):
        found = system.newton(support, active, w)
        if found is None:
            return None
        w, mu, theta = found
        if w.min() < -SOLVED:  # the most negative column leaves the support
            keep = np.arange(w.size) != int(np.argmin(w))
            support, w = support[keep], np.clip(w[keep], 0.0, None)
            continue
        if mu.size and mu.min() < -SOLVED:  # the most negative multiplier's row is not active
            active = np.delete(active, int(np.argmin(mu)))
            continue
        full = np.zeros(weights.size)
        full[support] = np.clip(w, 0.0, None)
        full /= full.sum()
        step = system.improvement(full, active, mu, theta, n_rows)
        if step is None:
            out_mu = np.zeros(len(problem.constraints))
            out_mu[active] = np.clip(mu, 0.0, None)
            return full, out_mu
        kind, index = step
        if kind == "row":
            active = np.append(active, index)
        else:
            support, w = np.append(support, index), np.append(w, 0.0)
    return None


def _independent(aggregates: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The support of ``weights`` reduced to columns with affinely independent aggregates, same mixture."""
    support = np.flatnonzero(weights >= SUPPORT_WEIGHT)
    w = weights[support] / weights[support].sum()
    while support.size > 1:
        matrix = np.vstack([aggregates[:, support], np.ones(support.size)])
        _, singular, vt = np.linalg.svd(matrix)
        rank = int(np.sum(singular > DEPENDENT * max(1.0, singular[0])))
        if rank >= support.size:
            break
        z = vt[-1]
        if z.max() <= 0:
            z = -z
        ratios = np.where(z > 0, w / np.where(z > 0, z, 1.0), np.inf)
        leaving = int(np.argmin(ratios))
        w = w - ratios[leaving] * z
        keep = np.arange(support.size) != leaving
        support, w = support[keep], np.clip(w[keep], 0.0, None)
    return support, w / w.sum()


class _System:
    """The master's optimality conditions over the pool (module doc)."""

    def __init__(self, problem: OccupancyProblem, rewards: np.ndarray, costs: np.ndarray, epsilon: float):
        self.f = cast(Utility, problem.objective)  # polished masters have an objective
        self.rows = problem.constraints
        self.rewards, self.costs, self.epsilon = rewards, costs, epsilon

    def residual(self, support: np.ndarray, active: np.ndarray, w: np.ndarray, mu: np.ndarray,
                 theta: float) -> tuple[np.ndarray, list]:
        """The system's residual at ``(w_J, μ_M, θ)`` and the active rows' gradients (NaN outside F's domain)."""
        lam_cols, zeta_cols = self.rewards[:, support], self.costs[:, support]
        lam, zeta = lam_cols @ w, zeta_cols @ w
        rows = [self.rows[m] for m in active]
        grads = [np.asarray(g.gradient(zeta), dtype=float) for g in rows]
        with np.errstate(all="ignore"):
            stationarity = lam_cols.T @ np.asarray(self.f.gradient(lam), dtype=float) - theta
            for m, grad in enumerate(grads):
                stationarity = stationarity - mu[m] * (zeta_cols.T @ grad)
            residual = np.concatenate([stationarity, [float(g.value(zeta)) + self.epsilon for g in rows],
                                       [w.sum() - 1.0]])
        inside = np.all(lam > self.f.domain_lower()) and np.all(np.isfinite(residual))
        return (residual if inside else np.full(residual.size, np.nan)), grads

    def newton(self, support: np.ndarray, active: np.ndarray,
               start: np.ndarray) -> tuple[np.ndarray, np.ndarray, float] | None:
        """``(w_J, μ_M, θ)`` solving the system of the module doc from ``start`` (the multipliers first fitted by
        least squares, then damped Newton steps), or None."""
        lam_cols, zeta_cols = self.rewards[:, support], self.costs[:, support]
        w = start / start.sum()
        mu, theta = self._fit(support, active, w)
        rows = [self.rows[m] for m in active]
        for _ in range(STEPS):
            residual, grads = self.residual(support, active, w, mu, theta)
            norm = float(np.abs(residual).max())
            if not np.isfinite(norm):
                return None
            if norm <= SOLVED:
                return w, mu, theta
            lam, zeta = lam_cols @ w, zeta_cols @ w
            jacobian = _jacobian(lam_cols, zeta_cols, self.f.hessian(lam), [g.hessian(zeta) for g in rows], grads,
                                 mu)
            delta = np.linalg.lstsq(jacobian, -residual, rcond=None)[0]
            for _ in range(HALVINGS):  # damped: a step must lower the residual (and stay in F's domain)
                trial = (w + delta[: w.size], mu + delta[w.size: w.size + mu.size], theta + delta[-1])
                if float(np.abs(self.residual(support, active, *trial)[0]).max()) < norm:
                    break
                delta = delta / 2
            else:
                return None
            w, mu, theta = trial
        return None

    def _fit(self, support: np.ndarray, active: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
        """``(μ_M, θ)`` minimising the stationarity residual at fixed weights (least squares)."""
        lam_cols, zeta_cols = self.rewards[:, support], self.costs[:, support]
        zeta = zeta_cols @ w
        columns = [-(zeta_cols.T @ np.asarray(self.rows[m].gradient(zeta), dtype=float)) for m in active]
        matrix = np.column_stack(columns + [-np.ones(support.size)])
        target = -(lam_cols.T @ np.asarray(self.f.gradient(lam_cols @ w), dtype=float))
        solution = np.linalg.lstsq(matrix, target, rcond=None)[0]
        return solution[:-1], float(solution[-1])

    def improvement(self, weights: np.ndarray, active: np.ndarray, mu: np.ndarray, theta: float,
                    n_rows: int) -> tuple[str, int] | None:
        """A violated inactive row (``("row", m)``), else the pool column of largest positive reduced value
        (``("column", j)``), else None: the point is optimal over the whole pool."""
        lam, zeta = self.rewards @ weights, self.costs @ weights
        for m in range(n_rows):
            if m not in active and float(self.rows[m].value(zeta)) + self.epsilon > SOLVED:
                return "row", m
        reduced = self.rewards.T @ np.asarray(self.f.gradient(lam), dtype=float) - theta
        for m, multiplier in zip(active, mu, strict=True):
            reduced -= multiplier * (self.costs.T @ np.asarray(self.rows[m].gradient(zeta), dtype=float))
        reduced[weights > 0] = -np.inf
        best = int(np.argmax(reduced))
        return ("column", best) if reduced[best] > SOLVED * max(1.0, abs(theta)) else None


def _jacobian(lam_cols: np.ndarray, zeta_cols: np.ndarray, f_hessian: np.ndarray, g_hessians: list,
              grads: list, mu: np.ndarray) -> np.ndarray:
    """The system's Jacobian in ``(w_J, μ_M, θ)``."""
    n, k = lam_cols.shape[1], len(grads)
    top = lam_cols.T @ np.asarray(f_hessian, dtype=float) @ lam_cols
    for m in range(k):
        top = top - mu[m] * (zeta_cols.T @ np.asarray(g_hessians[m], dtype=float) @ zeta_cols)
    jacobian = np.zeros((n + k + 1, n + k + 1))
    jacobian[:n, :n] = top
    for m, grad in enumerate(grads):
        jacobian[:n, n + m] = -(zeta_cols.T @ grad)
        jacobian[n + m, :n] = zeta_cols.T @ grad
    jacobian[:n, -1] = -1.0
    jacobian[-1, :n] = 1.0
    return jacobian

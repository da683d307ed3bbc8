"""Independent reference solvers for the programs of SPEC §2 and §3.

Nothing here imports curlopt: every row is written again from the SPEC formulas
and handed to ``scipy.optimize.linprog`` (HiGHS through scipy's own interface),
so a slip in ``curlopt.program`` or in a backend cannot be copied into the
reference. On purpose the structure differs from the library's:

* the occupancy LP (SPEC §2) keeps **all** S flow-balance rows (the library drops
  the redundant last one);
* the optimistic LP (SPEC §3) has exactly the variables of the SPEC, ``p(s,a,s')``
  and ``α(s,a,s')`` (``2·S²·A`` columns), with ``ρ(s,a)`` written as
  ``Σ_{s'} p(s,a,s')`` inside every row (the library keeps ρ as its own block and
  adds link rows); ``P^`` and ``β`` are computed here from the counts.

Objectives (maximised) and constraints are described by the small classes below,
with their own value/gradient formulas:

* :class:`LinearObjective` ``f(λ) = w·λ + offset`` — solved as one LP;
* :class:`LogObjective` ``f(λ) = Σ_k w_k ln(λ_k + shift)`` — solved by Kelley's
  cutting-plane method over the same polytope: each iteration is an LP
  ``max t`` s.t. ``t <= f(λ_j) + ∇f(λ_j)·(λ - λ_j)`` for all cuts so far. The LP
  value is an upper bound of the optimum (the cuts over-estimate a concave f), the
  best ``f(λ_j)`` met is a lower bound, so the result comes with a certified
  bracket ``[lower, upper]`` and the iteration stops when the bracket is narrower
  than ``gap``.

A constraint is a pair ``(W, b)`` with ``W`` of shape (J, d): ``g(ζ) = max_j (W_j·ζ - b_j)``
(J = 1 is a linear constraint ``w·ζ - b``); the ε-tight program asks ``g(ζ) <= -ε``,
i.e. ``W_j·ζ <= b_j - ε`` for every piece j.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

__all__ = [
    "LinearObjective",
    "LogObjective",
    "Polytope",
    "Reference",
    "occupancy_polytope",
    "optimistic_polytope",
    "empirical_kernel",
    "l1_radius",
    "solve_reference",
    "max_tightness",
]

_LINPROG_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


# ----------------------------------------------------------------------------
# Objectives (written from the formulas, not from curlopt.utilities)
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class LinearObjective:
    """``f(λ) = w·λ + offset``."""

    weights: np.ndarray
    offset: float = 0.0

    def value(self, lam: np.ndarray) -> float:
        return float(np.dot(self.weights, lam) + self.offset)


@dataclass(frozen=True)
class LogObjective:
    """``f(λ) = Σ_k w_k ln(λ_k + shift)`` (``w >= 0``; ``-inf`` outside the domain)."""

    weights: np.ndarray
    shift: float = 0.0

    def value(self, lam: np.ndarray) -> float:
        z = np.asarray(lam, dtype=float) + self.shift
        if np.any(z <= 0):
            return -math.inf
        return float(np.dot(self.weights, np.log(z)))

    def gradient(self, lam: np.ndarray) -> np.ndarray:
        return self.weights / (np.asarray(lam, dtype=float) + self.shift)


def constraint_value(pieces: tuple[np.ndarray, np.ndarray], zeta: np.ndarray) -> float:
    """``g(ζ) = max_j (W_j·ζ - b_j)``."""
    W, b = pieces
    return float(np.max(np.asarray(W) @ np.asarray(zeta) - np.asarray(b)))


# ----------------------------------------------------------------------------
# The two polytopes
# ----------------------------------------------------------------------------


@dataclass
class Polytope:
    """``{x >= 0 : A_eq x = b_eq, A_ub x <= b_ub}`` and the map ``ρ = occupancy @ x`` (ρ flattened (s,a))."""

    A_eq: sp.csr_matrix
    b_eq: np.ndarray
    A_ub: sp.csr_matrix | None
    b_ub: np.ndarray | None
    occupancy: sp.csr_matrix  # (S*A, n)
    n_states: int
    n_actions: int

    @property
    def n_vars(self) -> int:
        return self.occupancy.shape[1]


def occupancy_polytope(kernel: np.ndarray) -> Polytope:
    """SPEC §2: ρ(s,a) >= 0, Σρ = 1, and for **every** s': Σ_a ρ(s',a) = Σ_{s,a} Q(s'|s,a) ρ(s,a)."""
    Q = np.asarray(kernel, dtype=float)
    S, A, _ = Q.shape
    n = S * A
    # column of ρ(s,a) is s*A + a
    mass = np.ones((1, n))
    flow = np.zeros((S, n))
    for target in range(S):
        for s in range(S):
            for a in range(A):
                flow[target, s * A + a] = (1.0 if s == target else 0.0) - Q[s, a, target]
    A_eq = sp.csr_matrix(np.vstack([mass, flow]))
    b_eq = np.concatenate([[1.0], np.zeros(S)])
    return Polytope(A_eq, b_eq, None, None, sp.identity(n, format="csr"), S, A)


def empirical_kernel(counts: np.ndarray) -> np.ndarray:
    """``P^(s'|s,a) = n(s,a,s') / max(1, N(s,a))`` with ``N(s,a) = Σ_{s'} n(s,a,s')`` (zeros when unvisited)."""
    n = np.asarray(counts, dtype=float)
    visits = n.sum(axis=2)
    return n / np.maximum(1.0, visits)[:, :, None]


def l1_radius(counts: np.ndarray, time: float) -> np.ndarray:
    """``β(s,a) = sqrt(14 · S · ln(2 · A · t_e) / max(1, N(s,a)))``."""
    n = np.asarray(counts, dtype=float)
    S, A, _ = n.shape
    visits = n.sum(axis=2)
    return np.sqrt(14.0 * S * math.log(2.0 * A * float(time)) / np.maximum(1.0, visits))


def optimistic_polytope(counts: np.ndarray, time: float) -> Polytope:
    """SPEC §3 over ``x = (p, α)``, ``p`` and ``α`` of shape (S, A, S), ρ(s,a) = Σ_{s'} p(s,a,s').

    Rows: Σ p = 1; flow for every s; ``p - P^ ρ - α <= 0``; ``P^ ρ - p - α <= 0``;
    ``Σ_{s'} α - β ρ <= 0``.
    """
    n = np.asarray(counts, dtype=float)
    S, A, _ = n.shape
    P_hat = empirical_kernel(n)
    beta = l1_radius(n, time)
    n3 = S * A * S

    def p_col(s, a, t):
        return (s * A + a) * S + t

    def alpha_col(s, a, t):
        return n3 + (s * A + a) * S + t

    n_vars = 2 * n3
    eq_rows, eq_cols, eq_vals = [], [], []
    # total mass
    for s in range(S):
        for a in range(A):
            for t in range(S):
                eq_rows.append(0)
                eq_cols.append(p_col(s, a, t))
                eq_vals.append(1.0)
    # flow balance for every state: out of s (Σ_{a,s'} p(s,a,s')) minus into s (Σ_{s'',a} p(s'',a,s))
    for target in range(S):
        row = 1 + target
        coef: dict[int, float] = {}
        for a in range(A):
            for t in range(S):
                coef[p_col(target, a, t)] = coef.get(p_col(target, a, t), 0.0) + 1.0
        for s in range(S):
            for a in range(A):
                coef[p_col(s, a, target)] = coef.get(p_col(s, a, target), 0.0) - 1.0
        for col, val in coef.items():
            eq_rows.append(row)
            eq_cols.append(col)
            eq_vals.append(val)
    A_eq = sp.csr_matrix((eq_vals, (eq_rows, eq_cols)), shape=(1 + S, n_vars))
    b_eq = np.concatenate([[1.0], np.zeros(S)])

    ub_rows, ub_cols, ub_vals = [], [], []
    row = 0
    for sign in (1.0, -1.0):
        # sign * (p(s,a,t) - P^(t|s,a) Σ_u p(s,a,u)) - α(s,a,t) <= 0
        for s in range(S):
            for a in range(A):
                for t in range(S):
                    coef = {}
                    for u in range(S):
                        coef[p_col(s, a, u)] = -sign * P_hat[s, a, t]
                    coef[p_col(s, a, t)] += sign
                    coef[alpha_col(s, a, t)] = -1.0
                    for col, val in coef.items():
                        ub_rows.append(row)
                        ub_cols.append(col)
                        ub_vals.append(val)
                    row += 1
    # Σ_t α(s,a,t) - β(s,a) Σ_u p(s,a,u) <= 0
    for s in range(S):
        for a in range(A):
            for t in range(S):
                ub_rows.append(row)
                ub_cols.append(alpha_col(s, a, t))
                ub_vals.append(1.0)
                ub_rows.append(row)
                ub_cols.append(p_col(s, a, t))
                ub_vals.append(-beta[s, a])
            row += 1
    A_ub = sp.csr_matrix((ub_vals, (ub_rows, ub_cols)), shape=(row, n_vars))
    b_ub = np.zeros(row)

    occ_rows = [s * A + a for s in range(S) for a in range(A) for t in range(S)]
    occ_cols = [p_col(s, a, t) for s in range(S) for a in range(A) for t in range(S)]
    occupancy = sp.csr_matrix((np.ones(len(occ_rows)), (occ_rows, occ_cols)), shape=(S * A, n_vars))
    return Polytope(A_eq, b_eq, A_ub, b_ub, occupancy, S, A)


# ----------------------------------------------------------------------------
# Solving
# ----------------------------------------------------------------------------


@dataclass
class Reference:
    """A reference optimum.

    ``feasible`` is False when linprog proved the program infeasible (status 2);
    then ``value`` is NaN. For a log objective ``lower <= optimum <= upper``
    (certified by the cutting planes); for a linear one both equal ``value``.
    """

    feasible: bool
    value: float = math.nan
    lower: float = math.nan
    upper: float = math.nan
    occupancy: np.ndarray | None = None  # (S, A)
    x: np.ndarray | None = None
    iterations: int = 0


def _aggregate_rows(poly: Polytope, signals: np.ndarray) -> sp.csr_matrix:
    """Rows mapping x to ``Σ_{s,a} ρ(s,a) signal_k(s,a)`` for each signal k, shape (K, n)."""
    flat = np.asarray(signals, dtype=float).reshape(signals.shape[0], -1)
    return sp.csr_matrix(flat) @ poly.occupancy


def _constraint_rows(poly, costs, constraints, epsilon):
    """Rows ``W_j C x <= b_j - ε`` of every piece of every constraint."""
    if not constraints:
        return None, None
    C = _aggregate_rows(poly, costs)
    rows, rhs = [], []
    for W, b in constraints:
        W = np.atleast_2d(np.asarray(W, dtype=float))
        rows.append(sp.csr_matrix(W) @ C)
        rhs.append(np.asarray(b, dtype=float).reshape(-1) - epsilon)
    return sp.vstack(rows).tocsr(), np.concatenate(rhs)


def _linprog(c, A_ub, b_ub, A_eq, b_eq, bounds):
    res = linprog(
        c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs", options=_LINPROG_OPTIONS
    )
    if res.status not in (0, 2):
        raise RuntimeError(f"reference linprog ended with status {res.status}: {res.message}")
    return res


def _stack(blocks):
    blocks = [b for b in blocks if b[0] is not None]
    if not blocks:
        return None, None
    return sp.vstack([b[0] for b in blocks]).tocsr(), np.concatenate([b[1] for b in blocks])


def _pad(matrix, extra):
    if matrix is None:
        return None
    return sp.hstack([matrix, sp.csr_matrix((matrix.shape[0], extra))]).tocsr()


def solve_reference(
    poly: Polytope,
    rewards: np.ndarray,
    costs: np.ndarray,
    objective,
    constraints=(),
    epsilon: float = 0.0,
    with_constraints: bool = True,
    gap: float = 1e-10,
    max_iterations: int = 500,
) -> Reference:
    """Maximise ``objective(λ)`` over ``poly`` with ``g_m(ζ) <= -ε`` (when ``with_constraints``)."""
    S, A = poly.n_states, poly.n_actions
    n = poly.n_vars
    G, h = _constraint_rows(poly, costs, list(constraints) if with_constraints else [], epsilon)
    R = _aggregate_rows(poly, rewards)  # (K, n)

    if isinstance(objective, LinearObjective):
        c = -(sp.csr_matrix(np.asarray(objective.weights, dtype=float).reshape(1, -1)) @ R).toarray().ravel()
        A_ub, b_ub = _stack([(poly.A_ub, poly.b_ub), (G, h)])
        res = _linprog(c, A_ub, b_ub, poly.A_eq, poly.b_eq, [(0, None)] * n)
        if res.status == 2:
            return Reference(False)
        x = res.x
        value = float(-res.fun + objective.offset)
        return Reference(True, value, value, value, (poly.occupancy @ x).reshape(S, A), x, 1)

    if isinstance(objective, LogObjective):
        return _kelley(poly, R, objective, G, h, gap, max_iterations)
    raise TypeError(f"unknown reference objective {objective!r}")


def _kelley(poly, R, objective, G, h, gap, max_iterations) -> Reference:
    """Cutting planes for a concave objective of λ = R x over the polytope (see module docstring)."""
    S, A = poly.n_states, poly.n_actions
    n = poly.n_vars
    A_ub, b_ub = _stack([(poly.A_ub, poly.b_ub), (G, h)])
    # a feasible point first (zero objective); infeasibility shows up here
    res = _linprog(np.zeros(n), A_ub, b_ub, poly.A_eq, poly.b_eq, [(0, None)] * n)
    if res.status == 2:
        return Reference(False)
    R_dense = R.toarray()
    x_best = res.x
    lam = R_dense @ x_best
    lower = objective.value(lam)
    upper = math.inf
    cut_rows: list[np.ndarray] = []
    cut_rhs: list[float] = []
    A_eq = _pad(poly.A_eq, 1)
    A_ub_t = _pad(A_ub, 1)
    c = np.zeros(n + 1)
    c[n] = -1.0  # maximise t
    iterations = 0
    for iterations in range(1, max_iterations + 1):
        # cut at λ: t - ∇f(λ)·R x <= f(λ) - ∇f(λ)·λ
        grad = objective.gradient(lam)
        cut_rows.append(np.concatenate([-(grad @ R_dense), [1.0]]))
        cut_rhs.append(objective.value(lam) - float(grad @ lam))
        cuts = sp.csr_matrix(np.vstack(cut_rows))
        rows, rhs = _stack([(A_ub_t, b_ub), (cuts, np.asarray(cut_rhs))])
        res = _linprog(c, rows, rhs, A_eq, poly.b_eq, [(0, None)] * n + [(None, None)])
        if res.status != 0:
            raise RuntimeError(f"cutting-plane LP failed after a feasible start: {res.message}")
        upper = min(upper, float(-res.fun))
        x = res.x[:n]
        lam = R_dense @ x
        value = objective.value(lam)
        if value > lower:
            lower, x_best = value, x
        if upper - lower <= gap:
            break
    else:
        raise RuntimeError(f"cutting planes did not close the gap ({upper - lower:.3g}) in {max_iterations} iterations")
    return Reference(True, lower, lower, upper, (poly.occupancy @ x_best).reshape(S, A), x_best, iterations)


def max_tightness(poly: Polytope, costs: np.ndarray, constraints) -> float:
    """The largest ε for which the ε-tight program is feasible: ``max_x min_j (b_j - W_j·ζ(x))``.

    One LP in ``(x, s)``: maximise s subject to ``W_j C x + s <= b_j``. The ε-tight
    program is feasible exactly when ``ε <= max_tightness``; ``|max_tightness - ε|``
    is how far a case is from the feasibility boundary. ``+inf`` without constraints.
    """
    if not constraints:
        return math.inf
    n = poly.n_vars
    G, h = _constraint_rows(poly, costs, list(constraints), 0.0)
    G_s = sp.hstack([G, sp.csr_matrix(np.ones((G.shape[0], 1)))]).tocsr()
    A_ub, b_ub = _stack([(_pad(poly.A_ub, 1), poly.b_ub), (G_s, h)])
    c = np.zeros(n + 1)
    c[n] = -1.0
    res = _linprog(c, A_ub, b_ub, _pad(poly.A_eq, 1), poly.b_eq, [(0, None)] * n + [(None, None)])
    if res.status != 0:
        raise RuntimeError(f"the margin LP failed: {res.message}")
    return float(-res.fun)

"""Independent reference solvers for the programs of docs/math.md (sections 2, 3 and 9).

Nothing here imports curlopt: every row is written again from the formulas of
docs/math.md and handed to ``scipy.optimize.linprog`` (HiGHS through SciPy's own
interface), so a slip in ``curlopt.programs``, ``curlopt.programs.lp`` or a backend cannot
be copied into the reference. On purpose the structure differs from the library's:

* the occupancy LP (section 2) keeps **all** S flow-balance rows (the library
  drops the redundant last one);
* the optimistic LP (section 3) has exactly the variables of the mathematics,
  ``p(s,a,s')`` and ``α(s,a,s')`` (``2·S²·A`` columns), with ``ρ(s,a)`` written as
  ``Σ_{s'} p(s,a,s')`` inside every row (the library keeps ρ as its own block and
  adds link rows); ``P^`` and ``β`` are computed here from the counts;
* UCRL-CMDP's box program (section 9) likewise has the ``p(s,a,s')`` columns
  only, and its radius ``b(s,a)`` is computed here from the counts and horizon;
* a program on a sparse support (the library gives it variables only on the support) keeps all
  ``S·A·S`` columns here, with one equality row ``p(s,a,s') = 0`` per entry outside the support.

Objectives (maximised) and constraints are described by the small classes below,
with their own value/gradient formulas:

* :class:`LinearObjective` ``f(λ) = w·λ + offset`` — solved as one LP;
* :class:`PiecewiseObjective` ``f(λ) = min_j (W_j·λ + c_j)`` — one LP with an
  epigraph column ``t <= W_j·λ + c_j``;
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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

__all__ = [
    "LinearObjective",
    "LogObjective",
    "PiecewiseObjective",
    "Polytope",
    "Reference",
    "occupancy_polytope",
    "optimistic_polytope",
    "box_polytope",
    "box_radius",
    "empirical_kernel",
    "l1_radius",
    "solve_reference",
    "max_tightness",
    "constraint_value",
    "model_optimum",
    "ClosedForm",
    "two_state_problems",
    "TWO_STATE_KERNEL",
    "TWO_STATE_REWARDS",
    "TWO_STATE_COSTS",
]

#: constraint pieces ``(W (J, d), b (J,))``: ``g(ζ) = max_j (W_j·ζ - b_j)``
Pieces = tuple[np.ndarray, np.ndarray]

_LINPROG_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


# ----------------------------------------------------------------------------
# Objectives (written from the formulas, not from curlopt.utilities.library)
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


@dataclass(frozen=True)
class PiecewiseObjective:
    """``f(λ) = min_j (W_j·λ + c_j)``, ``W`` of shape (J, K): concave, not smooth."""

    matrix: np.ndarray
    offset: np.ndarray

    def value(self, lam: np.ndarray) -> float:
        return float(np.min(np.asarray(self.matrix) @ np.asarray(lam, dtype=float) + np.asarray(self.offset)))


#: a reference objective (each is written from its formula)
Objective = LinearObjective | LogObjective | PiecewiseObjective


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
    """Section 2: ρ(s,a) >= 0, Σρ = 1, and for **every** s': Σ_a ρ(s',a) = Σ_{s,a} Q(s'|s,a) ρ(s,a)."""
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


def _joint_equalities(S: int, A: int, n_vars: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """``Σ p = 1`` and flow balance for **every** state over the columns ``p(s,a,s')`` at ``(s*A + a)*S + s'``.

    Flow of state s: out of s (``Σ_{a,s'} p(s,a,s')``) minus into s (``Σ_{s'',a} p(s'',a,s)``) = 0.
    """
    n3 = S * A * S
    rows, cols, vals = [np.zeros(n3, dtype=np.int64)], [np.arange(n3)], [np.ones(n3)]
    for target in range(S):
        coef: dict[int, float] = {}
        for a in range(A):
            for t in range(S):
                out = (target * A + a) * S + t
                coef[out] = coef.get(out, 0.0) + 1.0
        for s in range(S):
            for a in range(A):
                into = (s * A + a) * S + target
                coef[into] = coef.get(into, 0.0) - 1.0
        rows.append(np.full(len(coef), 1 + target))
        cols.append(np.fromiter(coef.keys(), dtype=np.int64))
        vals.append(np.fromiter(coef.values(), dtype=float))
    A_eq = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(1 + S, n_vars))
    return A_eq, np.concatenate([[1.0], np.zeros(S)])


def _joint_occupancy(S: int, A: int, n_vars: int) -> sp.csr_matrix:
    """The map ``x -> ρ``, ``ρ(s,a) = Σ_{s'} p(s,a,s')`` (p in the first ``S·A·S`` columns)."""
    n3 = S * A * S
    return sp.csr_matrix((np.ones(n3), (np.arange(n3) // S, np.arange(n3))), shape=(S * A, n_vars))


def _outside(support: np.ndarray | None, A_eq: sp.csr_matrix, b_eq: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """``A_eq``, ``b_eq`` with a row ``p(s,a,t) = 0`` for every ``(s, a, t)`` outside ``support`` (p first)."""
    if support is None:
        return A_eq, b_eq
    outside = np.flatnonzero(~np.asarray(support, dtype=bool).ravel())
    rows = sp.csr_matrix((np.ones(outside.size), (np.arange(outside.size), outside)), shape=(outside.size, A_eq.shape[1]))
    return sp.vstack([A_eq, rows]).tocsr(), np.concatenate([b_eq, np.zeros(outside.size)])


def optimistic_polytope(counts: np.ndarray, time: float, support: np.ndarray | None = None) -> Polytope:
    """Section 3 over ``x = (p, α)``, ``p`` and ``α`` of shape (S, A, S), ρ(s,a) = Σ_{s'} p(s,a,s').

    Rows: Σ p = 1; flow for every s; ``p - P^ ρ - α <= 0``; ``P^ ρ - p - α <= 0``;
    ``Σ_{s'} α - β ρ <= 0``; and, given a ``support`` (boolean (S, A, S)), ``p = 0`` outside it.
    """
    n = np.asarray(counts, dtype=float)
    S, A, _ = n.shape
    P_hat = empirical_kernel(n)
    beta = l1_radius(n, time)
    n3 = S * A * S
    n_vars = 2 * n3
    A_eq, b_eq = _outside(support, *_joint_equalities(S, A, n_vars))

    # sign * (p(s,a,t) - P^(t|s,a) Σ_u p(s,a,u)) - α(s,a,t) <= 0
    ub_rows, ub_cols, ub_vals, row = _deviation_rows(P_hat, np.zeros((S, A)), slack=n3)
    # Σ_t α(s,a,t) - β(s,a) Σ_u p(s,a,u) <= 0
    for s in range(S):
        for a in range(A):
            pair = (s * A + a) * S
            for t in range(S):
                ub_rows += [row, row]
                ub_cols += [n3 + pair + t, pair + t]
                ub_vals += [1.0, -beta[s, a]]
            row += 1
    A_ub = sp.csr_matrix((ub_vals, (ub_rows, ub_cols)), shape=(row, n_vars))
    return Polytope(A_eq, b_eq, A_ub, np.zeros(row), _joint_occupancy(S, A, n_vars), S, A)


def _deviation_rows(P_hat: np.ndarray, widen: np.ndarray, slack: int | None) -> tuple[list, list, list, int]:
    """For sign in (+1, -1) and every (s, a, t) the row ``sign p(s,a,t) - (sign P^(t|s,a) + widen(s,a)) Σ_u p(s,a,u)
    [- x(slack + (s,a,t))] <= 0``, as coordinate lists over ``x = (p, ...)``; returns them and the row count."""
    S, A, _ = P_hat.shape
    rows, cols, vals = [], [], []
    row = 0
    for sign in (1.0, -1.0):
        for s in range(S):
            for a in range(A):
                pair = (s * A + a) * S
                for t in range(S):
                    coef = {pair + u: -(sign * P_hat[s, a, t] + widen[s, a]) for u in range(S)}
                    coef[pair + t] += sign
                    if slack is not None:
                        coef[slack + pair + t] = -1.0
                    rows += [row] * len(coef)
                    cols += list(coef)
                    vals += list(coef.values())
                    row += 1
    return rows, cols, vals, row


def box_radius(counts: np.ndarray, horizon: float) -> np.ndarray:
    """``b(s,a) = min(1, sqrt(ln(2 S² A T²) / (2 max(1, N(s,a)))))`` (docs/math.md, section 9)."""
    n = np.asarray(counts, dtype=float)
    S, A, _ = n.shape
    visits = n.sum(axis=2)
    return np.minimum(1.0, np.sqrt(math.log(2.0 * S * S * A * float(horizon) ** 2) / (2.0 * np.maximum(1.0, visits))))


def box_polytope(counts: np.ndarray, horizon: float, support: np.ndarray | None = None) -> Polytope:
    """UCRL-CMDP's optimistic program (section 9) over ``x = p`` of shape (S, A, S), ρ(s,a) = Σ_{s'} p(s,a,s').

    Rows: Σ p = 1; flow for every s; and the box ``|P~(t|s,a) - P^(t|s,a)| <= b(s,a)`` on the implied
    kernel ``P~ = p / ρ``, multiplied out by ρ: ``p(s,a,t) - (P^ + b) ρ(s,a) <= 0`` and
    ``(P^ - b) ρ(s,a) - p(s,a,t) <= 0``; given a ``support`` (boolean (S, A, S)), ``p = 0`` outside it.
    """
    n = np.asarray(counts, dtype=float)
    S, A, _ = n.shape
    P_hat = empirical_kernel(n)
    b = box_radius(n, horizon)
    n_vars = S * A * S
    A_eq, b_eq = _outside(support, *_joint_equalities(S, A, n_vars))
    # sign * p(s,a,t) - (sign P^(t|s,a) + b(s,a)) Σ_u p(s,a,u) <= 0
    ub_rows, ub_cols, ub_vals, row = _deviation_rows(P_hat, b, slack=None)
    A_ub = sp.csr_matrix((ub_vals, (ub_rows, ub_cols)), shape=(row, n_vars))
    return Polytope(A_eq, b_eq, A_ub, np.zeros(row), _joint_occupancy(S, A, n_vars), S, A)


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


def _constraint_rows(poly: Polytope, costs: np.ndarray, constraints: Sequence[Pieces],
                     epsilon: float) -> tuple[Any, np.ndarray | None]:
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


def _linprog(c: np.ndarray, A_ub: Any, b_ub: np.ndarray | None, A_eq: Any, b_eq: np.ndarray,
             bounds: list[tuple[float | None, float | None]]) -> Any:
    res = linprog(
        c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs", options=_LINPROG_OPTIONS
    )
    if res.status not in (0, 2):
        raise RuntimeError(f"reference linprog ended with status {res.status}: {res.message}")
    return res


def _stack(blocks: list[tuple[Any, np.ndarray | None]]) -> tuple[Any, np.ndarray | None]:
    blocks = [b for b in blocks if b[0] is not None]
    if not blocks:
        return None, None
    return sp.vstack([b[0] for b in blocks]).tocsr(), np.concatenate([b[1] for b in blocks])


def _pad(matrix: Any, extra: int) -> Any:
    if matrix is None:
        return None
    return sp.hstack([matrix, sp.csr_matrix((matrix.shape[0], extra))]).tocsr()


def solve_reference(
    poly: Polytope,
    rewards: np.ndarray,
    costs: np.ndarray,
    objective: Objective,
    constraints: Sequence[Pieces] = (),
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

    if isinstance(objective, PiecewiseObjective):
        return _epigraph(poly, R, objective, G, h)
    if isinstance(objective, LogObjective):
        return _kelley(poly, R, objective, G, h, gap, max_iterations)
    raise TypeError(f"unknown reference objective {objective!r}")


def _epigraph(poly: Polytope, R: Any, objective: PiecewiseObjective, G: Any, h: np.ndarray | None) -> Reference:
    """``max t`` over ``(x, t)`` with ``t - W_j R x <= c_j`` for every piece j."""
    S, A = poly.n_states, poly.n_actions
    n = poly.n_vars
    W = np.atleast_2d(np.asarray(objective.matrix, dtype=float))
    pieces = sp.hstack([-(sp.csr_matrix(W) @ R), sp.csr_matrix(np.ones((W.shape[0], 1)))]).tocsr()
    A_ub, b_ub = _stack([(_pad(poly.A_ub, 1), poly.b_ub), (_pad(G, 1), h),
                         (pieces, np.asarray(objective.offset, dtype=float).reshape(-1))])
    c = np.zeros(n + 1)
    c[n] = -1.0  # maximise t
    res = _linprog(c, A_ub, b_ub, _pad(poly.A_eq, 1), poly.b_eq, [(0, None)] * n + [(None, None)])
    if res.status == 2:
        return Reference(False)
    x = res.x[:n]
    value = float(-res.fun)
    return Reference(True, value, value, value, (poly.occupancy @ x).reshape(S, A), x, 1)


def _kelley(poly: Polytope, R: Any, objective: LogObjective, G: Any, h: np.ndarray | None, gap: float,
            max_iterations: int) -> Reference:
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
    for _ in range(max_iterations):
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
    # one cut per iteration, so len(cut_rows) counts the iterations
    return Reference(True, lower, lower, upper, (poly.occupancy @ x_best).reshape(S, A), x_best, len(cut_rows))


def max_tightness(poly: Polytope, costs: np.ndarray, constraints: Sequence[Pieces]) -> float:
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


def model_optimum(model: Any, kernel: np.ndarray | None = None, epsilon: float = 0.0,
                  with_constraints: bool = True) -> Reference:
    """The occupancy program (section 2) of a model with LP-representable utilities, solved here.

    ``model`` is read for its data only, duck-typed: ``kernel``, ``rewards`` (K, S, A), ``costs``
    (d, S, A), and the affine pieces ``(W, c)`` of its objective (``f = min_j (W_j·λ + c_j)``) and
    constraints (``g = max_j (W_j·ζ + c_j)``). Tests take numbers such as the queue's optimum from here
    rather than typing them in.

    Raises
    ------
    ValueError
        When a utility has no affine pieces (not LP-representable).
    """
    def pieces(utility: Any, role: str) -> tuple[np.ndarray, np.ndarray]:
        found = utility.affine_pieces()
        if found is None:
            raise ValueError(f"model_optimum needs LP-representable utilities; the {role} {utility!r} is not.")
        return np.atleast_2d(np.asarray(found[0], dtype=float)), np.asarray(found[1], dtype=float).reshape(-1)

    W, c = pieces(model.objective, "objective")
    objective = LinearObjective(W[0], float(c[0])) if W.shape[0] == 1 else PiecewiseObjective(W, c)
    # g = max_j (W_j ζ + c_j) <= -ε  <=>  W_j ζ <= b_j - ε with b_j = -c_j
    constraints = [(Wg, -cg) for Wg, cg in (pieces(g, f"constraint {m}") for m, g in enumerate(model.constraints))]
    Q = np.asarray(model.kernel if kernel is None else kernel, dtype=float)
    return solve_reference(occupancy_polytope(Q), np.asarray(model.rewards), np.asarray(model.costs), objective,
                           constraints, epsilon, with_constraints=with_constraints)


# ----------------------------------------------------------------------------
# A model solved by hand
# ----------------------------------------------------------------------------
#
# Two states {0, 1}, two actions {0, 1}; action 1 pushes towards state 1:
#
#     P(1 | s=0, a=0) = 0.1    P(1 | s=0, a=1) = 0.6
#     P(1 | s=1, a=0) = 0.5    P(1 | s=1, a=1) = 0.9
#
# reward r(s,a) = 1{s = 1} (f(λ) = λ), cost c(s,a) = 1{a = 1}, one constraint ζ <= B, whose ε-tight row is
# ζ <= b := B - ε. With (a, b_, c, d) = (ρ(0,0), ρ(0,1), ρ(1,0), ρ(1,1)): mass a + b_ + c + d = 1 and the flow
# into state 1, 0.5 c + 0.1 d = 0.1 a + 0.6 b_; λ = c + d, ζ = b_ + d. The vertices (one non-zero pair per
# state, i.e. the deterministic policies) are
#     (a, c): a = 5/6,  c = 1/6    ζ = 0,     λ = 1/6
#     (a, d): a = d = 1/2          ζ = 1/2,   λ = 1/2
#     (b_, c): b_ = 5/11, c = 6/11 ζ = 5/11,  λ = 6/11
#     (b_, d): b_ = 1/7,  d = 6/7  ζ = 1,     λ = 6/7
# The upper boundary of their convex hull in the (ζ, λ) plane runs (0, 1/6) -> (5/11, 6/11) (slope 5/6), then
# -> (1, 6/7) (slope 4/7), with (1/2, 1/2) below it. So λ*(b) = 1/6 + 5b/6 on [0, 5/11], 6/11 + (4/7)(b - 5/11)
# on [5/11, 1], 6/7 beyond, and the program is infeasible for b < 0. Each optimum is unique:
#   B = 0.5, ε = 0.1 (b = 0.4): 0.88 of (b_, c) and 0.12 of (a, c): ρ* = (0.1, 0.4, 0.5, 0), λ* = 1/2;
#   B = 0.8, ε = 0.1 (b = 0.7): 0.45 of (b_, d), 0.55 of (b_, c): ρ* = (0, 11/35, 3/10, 27/70), λ* = 24/35;
#   B = 0.05, ε = 0.1 (b < 0): infeasible; without the row the best vertex is (b_, d): λ = 6/7.
#
# Both optimistic programs with no data (counts 0): P^ = 0, and the L1 radius β (t_e = 1) exceeds 2 while the
# box radius is 1 (T >= 2), so any implied kernel is allowed and any ρ in the simplex is reachable. The optimum
# puts all mass on state 1, λ* = 1 at ζ = 0: feasible for b >= 0, and for b < 0 the fallback has the same value.

TWO_STATE_KERNEL = np.stack([1.0 - np.array([[0.1, 0.6], [0.5, 0.9]]), np.array([[0.1, 0.6], [0.5, 0.9]])], axis=2)
TWO_STATE_REWARDS = np.array([[0.0, 0.0], [1.0, 1.0]])  # (S, A): 1 in state 1
TWO_STATE_COSTS = np.array([[0.0, 1.0], [0.0, 1.0]])    # (S, A): 1 for action 1


@dataclass(frozen=True)
class ClosedForm:
    """A program of the two-state model solved by hand (derivation above).

    ``kind`` is ``occupancy``, ``optimistic`` or ``box-optimistic`` (the last two with no data);
    ``occupancy`` is the unique optimal ρ when there is one (None otherwise).
    """

    kind: str
    bound: float
    epsilon: float
    feasible: bool
    value: float
    occupancy: np.ndarray | None = None


def two_state_problems() -> list[ClosedForm]:
    """The closed-form cases of the two-state model, for every program kind."""
    cases = [
        ClosedForm("occupancy", 0.5, 0.1, True, 1 / 2, np.array([[0.1, 0.4], [0.5, 0.0]])),
        ClosedForm("occupancy", 0.8, 0.1, True, 24 / 35, np.array([[0.0, 11 / 35], [3 / 10, 27 / 70]])),
        ClosedForm("occupancy", 0.05, 0.1, False, 6 / 7, np.array([[0.0, 1 / 7], [0.0, 6 / 7]])),
    ]
    for kind in ("optimistic", "box-optimistic"):
        cases += [ClosedForm(kind, 0.5, 0.1, True, 1.0), ClosedForm(kind, 0.05, 0.1, False, 1.0)]
    return cases

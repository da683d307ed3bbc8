"""Independent reference LPs of the episodic and discounted programs, for the conformance suite.

Written from the formulas of docs/math.md §10 with numpy and
handed to ``scipy.optimize.linprog``; nothing of curlopt is imported (a bug in a program or the LP form cannot
reach its own reference). Utilities enter as affine pieces: the objective ``min_j (W_j·λ + c_j)``, each
constraint ``max_j (W_j·ζ + c_j) <= −ε``.

Variables are laid out as ``q`` (H·S·A, index ``h·S·A + s·A + a``), then the joint ``z`` (H·S·A·S) and, for L1 sets,
the deviations α (H·S·A·S). The extended program here has a joint at **every** step, the last included, as the
program is written on paper.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

__all__ = ["Polytope", "episodic_polytope", "extended_polytope", "discounted_polytope", "solve_pieces",
           "max_tightness"]


@dataclass
class Polytope:
    """``A_eq x = b_eq``, ``A_ub x <= b_ub``, ``x >= 0``, with the signal maps' columns: the first ``n_signal``
    columns are the occupancy the signals (flattened (H, ·, S, A) or (·, S, A)) act on."""

    A_eq: sp.csr_matrix
    b_eq: np.ndarray
    A_ub: sp.csr_matrix
    b_ub: np.ndarray
    n_signal: int

    @property
    def n(self) -> int:
        return self.A_eq.shape[1]


def _flow_block(S: int, A: int) -> sp.csr_matrix:
    """(S, S·A): ``Σ_a x(s,a)`` per state."""
    return sp.csr_matrix(sp.kron(sp.eye(S), np.ones((1, A))))


def episodic_polytope(kernels: Sequence[np.ndarray], mu: np.ndarray, H: int, S: int, A: int) -> Polytope:
    """``Σ_a q_0(s,a) = μ(s)``; ``Σ_a q_{h+1}(s',a) = Σ_{s,a} P_h(s'|s,a) q_h(s,a)``; dense (S, A, S) kernels."""
    n = H * S * A
    blocks: list[list[sp.spmatrix | None]] = [[None] * H for _ in range(H)]
    blocks[0][0] = _flow_block(S, A)
    for h in range(H - 1):
        blocks[h + 1][h] = -sp.csr_matrix(np.asarray(kernels[h]).reshape(S * A, S).T)
        blocks[h + 1][h + 1] = _flow_block(S, A)
    A_eq = sp.bmat(blocks, format="csr") if H > 1 else sp.csr_matrix(blocks[0][0])
    b_eq = np.concatenate([mu, np.zeros((H - 1) * S)])
    return Polytope(A_eq, b_eq, sp.csr_matrix((0, n)), np.zeros(0), n)


def extended_polytope(estimates: Sequence[np.ndarray], radii: Sequence[np.ndarray], confidence: str,
                      mu: np.ndarray, H: int, S: int, A: int) -> Polytope:
    """The extended program with a joint at every step; ``estimates[h]`` (S, A, S) and ``radii[h]`` ((S, A, S) for
    entry sets, (S, A) for L1) at step h (the last step reuses the last transition's)."""
    nq, nz = H * S * A, H * S * A * S
    n = nq + nz + (nz if confidence == "l1" else 0)
    eq_rows: list[int] = []
    eq_cols: list[int] = []
    eq_vals: list[float] = []
    b_eq: list[float] = []

    def add(cols: Sequence[int], vals: Sequence[float], rhs: float, store: tuple) -> None:
        rows_, cols_, vals_, rhs_ = store
        rows_.extend([len(rhs_)] * len(cols))
        cols_.extend(cols)
        vals_.extend(vals)
        rhs_.append(rhs)

    eq = (eq_rows, eq_cols, eq_vals, b_eq)
    ub_rows: list[int] = []
    ub_cols: list[int] = []
    ub_vals: list[float] = []
    b_ub: list[float] = []
    ub = (ub_rows, ub_cols, ub_vals, b_ub)

    def q(h: int, s: int, a: int) -> int:
        return (h * S + s) * A + a

    def z(h: int, s: int, a: int, t: int) -> int:
        return nq + ((h * S + s) * A + a) * S + t

    def alpha(h: int, s: int, a: int, t: int) -> int:
        return nq + nz + ((h * S + s) * A + a) * S + t

    for s in range(S):
        add([q(0, s, a) for a in range(A)], [1.0] * A, float(mu[s]), eq)
    for h in range(H):
        for s in range(S):
            for a in range(A):
                add([q(h, s, a)] + [z(h, s, a, t) for t in range(S)], [1.0] + [-1.0] * S, 0.0, eq)
    for h in range(H - 1):
        for t in range(S):
            cols = [q(h + 1, t, a) for a in range(A)] + [z(h, s, a, t) for s in range(S) for a in range(A)]
            add(cols, [1.0] * A + [-1.0] * (S * A), 0.0, eq)
    for h in range(H):
        step = min(h, len(estimates) - 1)
        p_hat, beta = np.asarray(estimates[step]), np.asarray(radii[step])
        for s in range(S):
            for a in range(A):
                for t in range(S):
                    for sign in (1.0, -1.0):
                        if confidence == "entry":   # ±(z − P^ q) <= β q
                            add([z(h, s, a, t), q(h, s, a)], [sign, -sign * p_hat[s, a, t] - beta[s, a, t]], 0.0, ub)
                        else:                       # ±(z − P^ q) <= α
                            add([z(h, s, a, t), q(h, s, a), alpha(h, s, a, t)],
                                [sign, -sign * p_hat[s, a, t], -1.0], 0.0, ub)
                if confidence == "l1":              # Σ_t α <= β q
                    add([alpha(h, s, a, t) for t in range(S)] + [q(h, s, a)], [1.0] * S + [-beta[s, a]], 0.0, ub)
    A_eq = sp.csr_matrix((eq_vals, (eq_rows, eq_cols)), shape=(len(b_eq), n))
    A_ub = sp.csr_matrix((ub_vals, (ub_rows, ub_cols)), shape=(len(b_ub), n))
    return Polytope(A_eq, np.array(b_eq), A_ub, np.array(b_ub), nq)


def discounted_polytope(kernel: np.ndarray, mu: np.ndarray, gamma: float) -> Polytope:
    """``Σ_a d(s',a) − γ Σ_{s,a} P(s'|s,a) d(s,a) = (1 − γ) μ(s')``."""
    S, A, _ = np.shape(kernel)
    A_eq = _flow_block(S, A) - gamma * sp.csr_matrix(np.asarray(kernel).reshape(S * A, S).T)
    return Polytope(sp.csr_matrix(A_eq), (1.0 - gamma) * np.asarray(mu, dtype=float), sp.csr_matrix((0, S * A)),
                    np.zeros(0), S * A)


def _signal_map(signals: np.ndarray, polytope: Polytope) -> sp.csr_matrix:
    """(count, n): the totals of signals (H, count, S, A) — or (count, S, A) — over the occupancy columns."""
    signals = np.asarray(signals, dtype=float)
    if signals.ndim == 4:
        signals = signals.transpose(1, 0, 2, 3)
    flat = signals.reshape(signals.shape[0], -1)
    out = np.zeros((flat.shape[0], polytope.n))
    out[:, : flat.shape[1]] = flat
    return sp.csr_matrix(out)


def _solve(c: np.ndarray, polytope: Polytope, extra_ub: sp.csr_matrix, extra_b: np.ndarray,
           extra_cols: int, free_bounds: list[tuple[float | None, float | None]]) -> tuple[bool, float | None]:
    """max c·(x, extra) over the polytope (padded with ``extra_cols`` free columns) and ``extra_ub``."""
    pad = lambda m: sp.hstack([m, sp.csr_matrix((m.shape[0], extra_cols))]).tocsr()  # noqa: E731
    A_ub = sp.vstack([pad(polytope.A_ub), extra_ub]).tocsr()
    b_ub = np.concatenate([polytope.b_ub, extra_b])
    res = linprog(-c, A_ub=A_ub if A_ub.shape[0] else None, b_ub=b_ub if A_ub.shape[0] else None,
                  A_eq=pad(polytope.A_eq), b_eq=polytope.b_eq, bounds=[(0, None)] * polytope.n + free_bounds,
                  method="highs", options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status == 2:
        return False, None
    if res.status != 0:
        raise RuntimeError(f"the reference LP failed: {res.message}")
    return True, float(-res.fun)


def solve_pieces(polytope: Polytope, rewards: np.ndarray, costs: np.ndarray,
                 objective: tuple[np.ndarray, np.ndarray], constraints: Sequence[tuple[np.ndarray, np.ndarray]],
                 epsilon: float, with_constraints: bool = True) -> tuple[bool, float | None]:
    """``(feasible, optimum)`` of max ``min_j (W_j λ + c_j)`` subject to the polytope and (``with_constraints``)
    ``W_m ζ + c_m <= −ε`` for every piece of every constraint."""
    R, C = _signal_map(rewards, polytope), _signal_map(costs, polytope)
    W, c = objective
    # t − W_j R x <= c_j
    rows = [sp.hstack([-sp.csr_matrix(W) @ R, sp.csr_matrix(np.ones((W.shape[0], 1)))])]
    rhs = [np.asarray(c, dtype=float)]
    if with_constraints:
        for Wm, cm in constraints:
            rows.append(sp.hstack([sp.csr_matrix(Wm) @ C, sp.csr_matrix((Wm.shape[0], 1))]))
            rhs.append(-np.asarray(cm, dtype=float) - epsilon)
    goal = np.zeros(polytope.n + 1)
    goal[-1] = 1.0
    return _solve(goal, polytope, sp.vstack(rows).tocsr(), np.concatenate(rhs), 1, [(None, None)])


def max_tightness(polytope: Polytope, costs: np.ndarray, constraints: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """The largest ε for which the constraint rows can hold: max t s.t. ``W_m ζ + c_m + t <= 0`` (capped at 1e3)."""
    C = _signal_map(costs, polytope)
    rows = [sp.hstack([sp.csr_matrix(Wm) @ C, sp.csr_matrix(np.ones((Wm.shape[0], 1)))]) for Wm, _ in constraints]
    rhs = [-np.asarray(cm, dtype=float) for _, cm in constraints]
    goal = np.zeros(polytope.n + 1)
    goal[-1] = 1.0
    feasible, value = _solve(goal, polytope, sp.vstack(rows).tocsr(), np.concatenate(rhs), 1, [(None, 1e3)])
    if not feasible or value is None:
        raise RuntimeError("the polytope is empty (a reference bug)")
    return value

"""A transition kernel seen as a matrix of shape (S·A, S), and the chains of deterministic policies on it.

Row ``s·A + a`` holds ``P(·|s,a)``. The kernel is kept either dense (a reshaped view of the (S, A, S) array,
no copy) or as a CSR matrix, whichever makes a kernel–vector product cheaper; everything here uses only such
products, the rows of one policy (an S×S chain) and solves with that chain — never a factorisation of the
S×(S·A) flow matrix of the occupancy program.

A deterministic policy's chain may have several recurrent classes (a *multichain* policy). Each closed class
``C`` then carries its own stationary distribution, and each is a vertex of the occupancy polytope
(docs/math.md §2): :func:`stationary_distributions` returns one per class, so that column generation stays
exact on such models, and the caller reports that the model is not unichain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["KernelMatrix", "ClassDistribution", "closed_classes", "stationary_distributions", "policy_classes",
           "SPARSE_DENSITY"]

#: a dense kernel with fewer nonzeros than this share of its entries is converted to CSR (products cost nnz)
SPARSE_DENSITY = 0.25
#: largest residual ``|μ P - μ|`` accepted from a stationary solve before it is called inaccurate
STATIONARY_RESIDUAL = 1e-9
#: power iteration: the most products before a factorisation is used instead, the kernel's weight in the aperiodic
#: chain it iterates, and the L1 change between two products at which it has settled
POWER_PRODUCTS = 500
POWER_WEIGHT = 0.95
POWER_SETTLED = 1e-14


class KernelMatrix:
    """``P`` as an (S·A, S) matrix (dense array or CSR) with the few operations column generation needs.

    Parameters
    ----------
    kernel : ndarray (S, A, S) or (S·A, S), or scipy sparse (S·A, S)
        The transition kernel; rows are distributions (already checked by the program).
    n_states, n_actions : int
    """

    def __init__(self, kernel: Any, n_states: int, n_actions: int):
        self.n_states, self.n_actions = int(n_states), int(n_actions)
        shape = (self.n_states * self.n_actions, self.n_states)
        if sp.issparse(kernel):
            matrix: Any = sp.csr_array(kernel, dtype=float)
        else:
            matrix = np.asarray(kernel, dtype=float).reshape(shape)
            nonzeros = int(np.count_nonzero(matrix))
            if nonzeros < SPARSE_DENSITY * matrix.size:
                matrix = sp.csr_array(matrix)
        if matrix.shape != shape:
            raise ValueError(f"a kernel of shape {matrix.shape}, expected {shape}")
        self.matrix = matrix
        self.sparse = sp.issparse(matrix)
        #: the (S, S) kernel when no row depends on the action (exogenous dynamics, e.g. the scheduler's): products
        #: then cost S² instead of S²·A
        self.shared: np.ndarray | None = None
        if not self.sparse and self.n_actions > 1:
            by_action = matrix.reshape(self.n_states, self.n_actions, self.n_states)
            if all(np.array_equal(by_action[:, a], by_action[:, 0]) for a in range(1, self.n_actions)):
                self.shared = by_action[:, 0]
        # Every entry positive: every policy's chain is irreducible, so no class search is needed.
        self.positive = (not self.sparse) and bool(matrix.min() > 0.0)

    def expected(self, values: np.ndarray) -> np.ndarray:
        """``(P v)(s, a) = Σ_s' P(s'|s,a) v(s')``, shape (S, A)."""
        if self.shared is not None:
            return np.repeat((self.shared @ values)[:, None], self.n_actions, axis=1)
        return np.asarray(self.matrix @ values).reshape(self.n_states, self.n_actions)

    def csr(self) -> sp.csr_array:
        """The kernel as a CSR matrix (built once for a dense kernel)."""
        if not hasattr(self, "_csr"):
            self._csr = self.matrix if self.sparse else sp.csr_array(self.matrix)
        return self._csr

    def policy_rows(self, actions: np.ndarray) -> np.ndarray:
        """The row index ``s·A + π(s)`` of each state's action."""
        return np.arange(self.n_states) * self.n_actions + np.asarray(actions, dtype=np.int64)

    def chain(self, actions: np.ndarray) -> Any:
        """The S×S chain ``P_π`` of a deterministic policy (dense array or CSR, as the kernel; read-only)."""
        if self.shared is not None:
            return self.shared
        return self.matrix[self.policy_rows(actions)]


@dataclass(frozen=True)
class ClassDistribution:
    """The stationary distribution of one recurrent class of a deterministic policy's chain.

    Attributes
    ----------
    states : ndarray of int
        The class's states (increasing).
    distribution : ndarray
        ``μ`` on those states (non-negative, sums to 1).
    """

    states: np.ndarray
    distribution: np.ndarray


def closed_classes(chain: Any) -> list[np.ndarray]:
    """The closed communicating classes (recurrent classes) of a chain: strongly connected components that no
    transition leaves. Each is an increasing array of states; a unichain chain has exactly one."""
    from scipy.sparse.csgraph import connected_components

    graph = sp.csr_array(chain)
    graph.eliminate_zeros()
    count, labels = connected_components(graph, directed=True, connection="strong")
    if count == 1:
        return [np.arange(chain.shape[0])]
    coo = graph.tocoo()
    leaves = labels[coo.row] != labels[coo.col]
    open_components = np.zeros(count, dtype=bool)
    open_components[labels[coo.row[leaves]]] = True
    return [np.flatnonzero(labels == c) for c in range(count) if not open_components[c]]


def policy_classes(kernel: KernelMatrix, occupancy: np.ndarray) -> int:
    """How many recurrent classes the chain of the policy extracted from ``occupancy`` has (the actions with mass in
    each visited state, every action in an unvisited one, as policy extraction fills them)."""
    if kernel.positive:
        return 1
    used = occupancy > 0
    used[~used.any(axis=1)] = True
    states, actions = np.nonzero(used)
    pick = sp.csr_array((np.ones(states.size), (states, states * kernel.n_actions + actions)),
                        shape=(kernel.n_states, kernel.n_states * kernel.n_actions))
    return len(closed_classes(pick @ kernel.csr()))


def stationary_distributions(kernel: KernelMatrix, actions: np.ndarray,
                             start: np.ndarray | None = None) -> list[ClassDistribution]:
    """One :class:`ClassDistribution` per recurrent class of the deterministic policy ``actions``.

    ``start`` (S,), optional, is where the power iteration starts (e.g. the policy's law on the previous kernel, a
    warm start when the kernel changed little); default uniform.

    Each class is closed, so the chain restricted to it is an irreducible chain of its own, whose stationary law
    (zero outside the class) is the class's; a unichain policy has one class (its other states are transient, with
    stationary mass 0), a multichain policy several.

    Raises
    ------
    ArithmeticError
        When a solve's residual exceeds :data:`STATIONARY_RESIDUAL` (a chain too ill-conditioned to evaluate).
    """
    chain = kernel.chain(actions)
    classes = [np.arange(kernel.n_states)] if kernel.positive else closed_classes(chain)
    out = []
    for states in classes:
        sub = chain if states.size == kernel.n_states else chain[states][:, states]
        mu = _solve_stationary(sub, None if start is None else start[states])
        out.append(ClassDistribution(states[mu > 0.0], mu[mu > 0.0]))
    return out


def _power_iteration(chain: Any, start: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """``μ`` by repeated products ``μ ← μ P_τ`` with the aperiodic ``P_τ = τ P + (1 - τ) I`` (same stationary law),
    from ``start`` (default the uniform law), and whether it settled within :data:`POWER_PRODUCTS` products.

    A fast-mixing chain settles in tens of products, each costing the chain's nonzeros: far cheaper than a
    factorisation of a dense chain (S³/3); a slowly mixing one is left to the factorisation. Settled means the
    distance still to go, estimated from the last change and the rate ``r`` at which changes shrink
    (``change · r / (1 - r)``, a geometric tail), is below :data:`POWER_SETTLED`: a small change alone is not enough,
    a slowly mixing chain changes little per product while far from its law."""
    n = chain.shape[0]
    mu = np.full(n, 1.0 / n)
    if start is not None and start.sum() > 0:  # mixed with a little of the uniform law: no state starts at 0
        mu = 0.999 * start / start.sum() + 0.001 * mu
    transposed = chain.T
    previous = np.inf
    for _ in range(POWER_PRODUCTS):
        step = POWER_WEIGHT * np.asarray(transposed @ mu) + (1.0 - POWER_WEIGHT) * mu
        step /= step.sum()
        change = float(np.abs(step - mu).sum())
        mu = step
        rate = change / previous if previous > 0 else 0.0
        if change == 0.0 or (rate < 1.0 and change * rate / (1.0 - rate) <= POWER_SETTLED and change <= POWER_SETTLED):
            return mu, True
        previous = change
    return mu, False


def _solve_stationary(chain: Any, start: np.ndarray | None = None) -> np.ndarray:
    """``μ`` with ``μ P = μ``, ``Σ μ = 1`` for an irreducible ``chain`` (dense array or sparse), clipped at 0:
    by power iteration when the chain mixes fast, else by an LU factorisation."""
    n = chain.shape[0]
    if n == 1:
        return np.ones(1)
    estimate, settled = _power_iteration(chain, start)
    if settled:
        return _checked(chain, estimate)
    try:
        if sp.issparse(chain):
            mu = _sparse_solve(chain, int(np.argmax(estimate)))
        else:  # LAPACK on μ (I - P) = 0 with state 0's balance replaced by Σ μ = 1
            system = np.eye(n) - np.asarray(chain).T
            system[0, :] = 1.0
            rhs = np.zeros(n)
            rhs[0] = 1.0
            mu = np.linalg.solve(system, rhs)
    except (RuntimeError, np.linalg.LinAlgError) as exc:  # "Factor is exactly singular"
        raise ArithmeticError(f"the chain's stationary system is singular ({exc})") from None
    return _checked(chain, mu)


def _sparse_solve(chain: Any, reference: int) -> np.ndarray:
    """``μ`` with ``μ(reference) = 1`` and the balance of every other state: ``I - Pᵀ`` without the reference
    state's row and column, by a sparse LU (a dense row of ones in its place would fill the factors). The
    reference is a state of large stationary mass (the power iteration's estimate), so that the others' masses,
    relative to it, stay in floating-point range on a chain whose law spans many orders of magnitude."""
    from scipy.sparse.linalg import splu

    n = chain.shape[0]
    others = np.delete(np.arange(n), reference)
    transposed = sp.csr_array(chain).T.tocsr()
    system = sp.eye_array(n - 1, format="csc") - sp.csc_array(transposed[others][:, others])
    mu = np.empty(n)
    mu[reference] = 1.0
    mu[others] = splu(system).solve(np.asarray(transposed[others][:, [reference]].toarray()).ravel())
    return mu


def _checked(chain: Any, mu: np.ndarray) -> np.ndarray:
    """``mu`` clipped at 0 and normalised, after checking its balance residual."""
    mu = np.clip(mu, 0.0, None)
    total = mu.sum()
    if not np.isfinite(total) or total <= 0.0:
        raise ArithmeticError("the chain's stationary solve gave no distribution")
    mu /= total
    residual = float(np.abs(np.asarray(chain.T @ mu) - mu).max())
    if not residual <= STATIONARY_RESIDUAL:
        raise ArithmeticError(f"the chain's stationary distribution has a balance residual of {residual:.3g}"
                              f" (> {STATIONARY_RESIDUAL:g}): the chain is too ill-conditioned to evaluate")
    return mu

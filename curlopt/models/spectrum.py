"""The second eigenvalue of a Markov chain, for its relaxation time ``1 / (1 − |λ_2|)``.

A slowly mixing chain is often far from normal (the queue drifting towards a full buffer: its stationary
probabilities span hundreds of orders of magnitude), and then the eigenvalues of its matrix ``P`` are badly
conditioned: a general eigensolver, dense or Arnoldi, returns values off by whole percents. A *reversible* chain
(``μ_i P_ij = μ_j P_ji``) avoids this: it is similar to the symmetric matrix ``B_ij = sqrt(P_ij P_ji)``, whose
eigenvalues are perfectly conditioned and which needs no ``μ`` at all. Reversibility is checked on the chain's
nonzeros in log space (potentials ``log μ`` along a spanning forest, then detailed balance on every edge), so no
stationary probability underflows.

So: a reversible chain takes the symmetric route — every eigenvalue (dense) when the chain is small (or up to
:data:`~curlopt.models.chains.EIGENVALUE_DENSE_STATES` states, mostly nonzero), otherwise the two nearest 1 and the
one nearest −1 by shift-invert Lanczos (``scipy.sparse.linalg.eigsh``, a sparse LU inside). Any other chain takes every
eigenvalue of ``P`` (dense) up to that size and is refused above it, with the reason.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError

__all__ = ["second_modulus", "symmetric_form"]

#: relative tolerance of detailed balance in log space (round-off accumulates along the spanning forest)
BALANCE_TOLERANCE = 1e-8
#: shift-invert Lanczos looks for eigenvalues just outside [−1, 1]: ``±(1 + SHIFT)``
SHIFT = 1e-5
#: a symmetric form with at most this many states, or up to the dense limit with more than a quarter of its
#: entries nonzero, has all its eigenvalues computed (dense); a larger sparse one goes to shift-invert Lanczos
SMALL_CHAIN = 256


def second_modulus(chain: np.ndarray | sp.sparray | sp.spmatrix, dense_limit: int) -> float:
    """``|λ_2|``, the second-largest eigenvalue modulus of the stochastic matrix ``chain`` (S, S).

    ``chain`` is a dense array or a scipy sparse matrix; ``dense_limit`` is the most states given to a dense
    eigensolver.

    Raises
    ------
    ModelError
        For a chain that is not reversible and has more than ``dense_limit`` states, or when Lanczos does not
        converge; the message says which.
    """
    n = chain.shape[0]
    if n == 1:
        return 0.0
    symmetric = symmetric_form(sp.csr_array(chain))
    if symmetric is not None:
        return _symmetric_second(symmetric, dense_limit)
    if n > dense_limit:
        raise ModelError(
            f"the relaxation time of this {n:,}-state chain is not computed: the chain is not reversible, so its"
            f" eigenvalues can be badly conditioned, and a dense eigensolver is used only up to {dense_limit:,}"
            " states."
        )
    dense = np.asarray(chain) if isinstance(chain, np.ndarray) else chain.toarray()
    return float(np.sort(np.abs(np.linalg.eigvals(dense)))[::-1][1])


def symmetric_form(chain: sp.csr_array) -> sp.csr_array | None:
    """``B_ij = sqrt(P_ij P_ji)`` when the chain is reversible (similar to ``P``), else ``None``."""
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    n = chain.shape[0]
    matrix = sp.csr_array(chain)
    matrix.eliminate_zeros()
    transpose = sp.csr_array(matrix.T)
    if ((matrix > 0) != (transpose > 0)).nnz:
        return None  # a move whose reverse is impossible: not reversible
    # a spanning forest: a root (node n) joined to the first state of each connected component
    count, labels = connected_components(matrix, directed=False)
    first = np.full(count, n)
    np.minimum.at(first, labels, np.arange(n))
    coo = sp.coo_array(matrix)
    sources = np.concatenate([coo.coords[0], np.full(count, n)])
    targets = np.concatenate([coo.coords[1], first])
    joined = sp.csr_array((np.ones(sources.size), (sources, targets)), shape=(n + 1, n + 1))
    order, parent = breadth_first_order(joined, n, directed=False, return_predecessors=True)
    potential = np.zeros(n + 1)  # log μ, up to a constant per component
    children = order[1:]
    forward = np.log(np.asarray(matrix[parent[children] % n, children]).ravel().clip(min=1e-300))
    backward = np.log(np.asarray(matrix[children, parent[children] % n]).ravel().clip(min=1e-300))
    step = np.where(parent[children] == n, 0.0, forward - backward)
    for node, up, change in zip(children.tolist(), parent[children].tolist(), step.tolist(), strict=True):
        potential[node] = potential[up] + change  # parents come first in breadth-first order
    logs = np.log(coo.data)
    reverse = np.log(np.asarray(transpose[coo.coords[0], coo.coords[1]]).ravel())
    left, right = potential[coo.coords[0]] + logs, potential[coo.coords[1]] + reverse
    scale = np.maximum(1.0, np.maximum(np.abs(left), np.abs(right)))
    if np.any(np.abs(left - right) > BALANCE_TOLERANCE * scale):
        return None
    return sp.csr_array((np.sqrt(coo.data * np.exp(reverse)), coo.coords), shape=(n, n))


def _symmetric_second(symmetric: sp.csr_array, dense_limit: int) -> float:
    """``|λ_2|`` of the symmetric form: every eigenvalue of a small or mostly nonzero one, else shift-invert."""
    n = symmetric.shape[0]
    if n <= SMALL_CHAIN or (n <= dense_limit and symmetric.nnz > n * n // 4):
        return float(np.sort(np.abs(np.linalg.eigvalsh(symmetric.toarray())))[::-1][1])
    coo = sp.coo_array(symmetric)
    if np.all(np.abs(coo.coords[0] - coo.coords[1]) <= 1):
        return _tridiagonal_second(symmetric)
    import scipy.sparse.linalg as spla

    matrix = sp.csc_array(symmetric)
    try:
        top = spla.eigsh(matrix, k=2, sigma=1 + SHIFT, which="LM", tol=1e-8, return_eigenvectors=False)
        bottom = spla.eigsh(matrix, k=1, sigma=-1 - SHIFT, which="LM", tol=1e-8, return_eigenvectors=False)
    except spla.ArpackNoConvergence:
        raise ModelError(f"the relaxation time of this {n:,}-state chain is not computed: the Lanczos iteration"
                         " for its second eigenvalue did not converge.") from None
    second = max(float(np.min(top)), abs(float(bottom[0])))
    return second if math.isfinite(second) else math.inf


def _tridiagonal_second(symmetric: sp.csr_array) -> float:
    """``|λ_2|`` of a tridiagonal symmetric form (a birth-death chain, such as the queue) by bisection on its Sturm
    sequence (LAPACK's ``stebz`` through :func:`scipy.linalg.eigvalsh_tridiagonal`): linear in the states, where
    shift-invert Lanczos needs minutes once the gap is far below its shift (the queue with buffer 100,000)."""
    from scipy.linalg import eigvalsh_tridiagonal

    n = symmetric.shape[0]
    diagonal = np.asarray(symmetric.diagonal(), dtype=float)
    off = np.asarray(symmetric.diagonal(1), dtype=float)
    top = eigvalsh_tridiagonal(diagonal, off, select="i", select_range=(n - 2, n - 1))
    bottom = eigvalsh_tridiagonal(diagonal, off, select="i", select_range=(0, 0))
    return max(abs(float(top[0])), abs(float(bottom[0])))

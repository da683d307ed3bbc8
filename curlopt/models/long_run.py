"""Long-run occupancies where the plain stationary solve is wrong: several recurrent classes, or nearly decomposable
chains.

A policy whose chain has several recurrent classes has no single stationary law: its long-run (Cesàro) average depends
on where it starts, ``μ_∞ = Σ_c a_c(μ_0) π_c`` with ``a_c`` the probability of being absorbed in class ``c`` from the
initial law ``μ_0`` and ``π_c`` the class's stationary law. A chain made of blocks joined by tiny probabilities δ has a
unique law, but the balance equations are singular to round-off: a least-squares solve can pass its own residual test
and still put the wrong mass on each block (0.5 where the exact mass is 0.845 at δ = 1e-10, measured). The
Grassmann–Taksar–Heyman (GTH) elimination uses no subtraction and keeps full relative accuracy there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError

__all__ = ["gth_stationary", "long_run_law", "NEARLY_DECOMPOSABLE", "DENSE_LONG_RUN_STATES"]

#: the dense balance system is called nearly decomposable when its smallest singular value is below this fraction of
#: its largest: past that point a least-squares answer can be wrong in its first digit while its residual is tiny
NEARLY_DECOMPOSABLE = 1e-9

#: the GTH elimination is dense (S³ operations): classes of at most this many states use it
DENSE_LONG_RUN_STATES = 3_000


def gth_stationary(chain: np.ndarray) -> np.ndarray:
    """The stationary law of an irreducible chain by GTH elimination (no subtraction: accurate on nearly decomposable
    chains).

    Parameters
    ----------
    chain : ndarray, shape (n, n)
        A row-stochastic matrix whose graph is strongly connected.

    Raises
    ------
    ModelError
        When the chain is not irreducible (a state with no way back to the states eliminated before it).
    """
    a = np.array(chain, dtype=float)
    n = a.shape[0]
    for k in range(n - 1, 0, -1):
        out = a[k, :k].sum()  # the mass state k sends to the states still in the chain, computed without 1 − p
        if out <= 0.0:
            raise ModelError("the chain is not irreducible: the GTH elimination found a closed set of states.")
        a[:k, k] /= out
        a[:k, :k] += np.outer(a[:k, k], a[k, :k])
    mu = np.zeros(n)
    mu[0] = 1.0
    for k in range(1, n):
        mu[k] = mu[:k] @ a[:k, k]
    return mu / mu.sum()


def _class_law(chain: Any, states: np.ndarray) -> np.ndarray:
    block = chain[states][:, states]
    if states.size > DENSE_LONG_RUN_STATES:
        raise ModelError(
            f"the long-run law of a recurrent class of {states.size:,} states is not computed densely (the limit is"
            f" {DENSE_LONG_RUN_STATES:,}): this policy's chain is multichain or nearly decomposable at a size where"
            " no exact route is implemented."
        )
    dense = block.toarray() if sp.issparse(block) else np.asarray(block, dtype=float)
    dense = dense / dense.sum(axis=1, keepdims=True)  # the class is closed: its rows sum to 1 up to round-off
    return gth_stationary(dense)


def long_run_law(chain: Any, initial: np.ndarray | None) -> tuple[np.ndarray, int]:
    """The long-run average state law of ``chain`` started from ``initial``, and its number of recurrent classes.

    Parameters
    ----------
    chain : ndarray (n, n) or scipy sparse
        The policy's state-to-state matrix.
    initial : ndarray, shape (n,), or None
        The law of the first state; needed only when the chain has more than one recurrent class.

    Raises
    ------
    ModelError
        With several recurrent classes and no ``initial`` (the long-run law depends on the start), or a class too
        large for the dense route.
    """
    from .sparse_chains import chain_classes  # its graph module costs 0.3 s to import: only these chains pay

    matrix = sp.csr_array(chain)
    matrix.eliminate_zeros()
    recurrent, transient = chain_classes(matrix)
    n = matrix.shape[0]
    if len(recurrent) > 1 and initial is None:
        raise ModelError(
            f"the stationary distribution is not unique: the chain of this policy has {len(recurrent)} recurrent"
            " classes, so its long-run average depends on the initial distribution (pass initial=...)."
        )
    laws = [np.asarray(c, dtype=np.intp) for c in recurrent]
    if len(laws) == 1:
        mu = np.zeros(n)
        mu[laws[0]] = _class_law(matrix, laws[0])
        return mu, 1
    start = np.asarray(initial, dtype=float)
    weights = np.array([start[c].sum() for c in laws])
    if transient:
        # absorption: B = (I − Q_TT)^{-1} R_T,c, with Q_TT the transient block and R the mass into each class
        import scipy.sparse.linalg as spla

        t = np.asarray(transient, dtype=np.intp)
        q = sp.csc_array(matrix[t][:, t])
        into = np.column_stack([np.asarray(matrix[t][:, c].sum(axis=1)).ravel() for c in laws])
        absorbed = spla.splu(sp.csc_array(sp.eye_array(t.size) - q)).solve(into)
        weights = weights + start[t] @ np.asarray(absorbed).reshape(t.size, len(laws))
    mu = np.zeros(n)
    for weight, states in zip(weights, laws, strict=True):
        mu[states] += weight * _class_law(matrix, states)
    return mu / mu.sum(), len(laws)

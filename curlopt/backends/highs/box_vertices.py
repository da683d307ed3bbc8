"""UCRL-CMDP's inner step in closed form: the best kernel of a confidence box for a linear function.

UCRL-CMDP's box program (docs/math.md §9) lets the kernel of a pair (s,a) be any ``q`` in

    ``Q(s,a) = {q in the simplex : l <= q <= u}``,  ``l = max(0, P^ - b)``,  ``u = P^ + b``

(entrywise, on the pair's allowed successors; 0 elsewhere). Maximising ``h·q`` over ``Q(s,a)`` for a vector
``h`` is a fractional knapsack: every successor gets its lower end ``l``, and the mass left, ``1 - Σ l``, goes
to the successors by decreasing ``h``, each up to its upper end ``u``. The maximiser depends on ``h`` only
through that ranking, so a vertex of ``Q(s,a)`` can be remembered as a ranking and recomputed on new data.

Arrays are stated over *slots*: slot j of a pair is its j-th allowed successor (on the dense support, slot j is
state j). A pair with fewer successors than slots holds ``l = u = 0`` in the slots it does not have, which can
then carry nothing.
"""

from __future__ import annotations

import numpy as np

__all__ = ["box_vertices", "box_usable", "usable_from_sums", "USABLE_TOLERANCE"]

#: how far ``Σ l`` may exceed 1 (and ``Σ u`` fall short of 1) by rounding for ``Q(s,a)`` still to count as non-empty
USABLE_TOLERANCE = 1e-12


def box_usable(lower: np.ndarray, upper: np.ndarray, lower_sum: np.ndarray | None = None) -> np.ndarray:
    """Which rows have a non-empty box: ``Σ l <= 1 <= Σ u`` (to :data:`USABLE_TOLERANCE`), shape (n,).

    A visited pair's box always holds its empirical kernel; an unvisited pair's (``l = 0``, ``u = b``) is
    empty when its successors' upper ends add up to less than 1. ``lower_sum``, if given, is
    ``lower.sum(axis=1)``, already computed by the caller.
    """
    if lower_sum is None:
        lower_sum = lower.sum(axis=1)
    return usable_from_sums(lower_sum, np.add.reduce(upper, axis=1))


def usable_from_sums(lower_sum: np.ndarray, upper_sum: np.ndarray) -> np.ndarray:
    """:func:`box_usable` from the rows' sums ``Σ l`` and ``Σ u`` (for a caller that has them)."""
    usable = lower_sum <= 1.0 + USABLE_TOLERANCE
    usable &= upper_sum >= 1.0 - USABLE_TOLERANCE
    return usable


def box_vertices(order: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``argmax h·q`` over each row's box ``{q in the simplex : lower <= q <= upper}``, for many rows at once.

    Parameters
    ----------
    order : ndarray of int, shape (n, W) or (W,)
        Each row's slots by decreasing ``h`` (ties in any fixed order: each order gives a vertex, and every
        order consistent with ``h`` gives a maximiser); one shape (W,) order serves every row.
    lower, upper : ndarray, shape (n, W)
        The box's ends, ``0 <= lower <= upper``.

    Returns
    -------
    ndarray, shape (n, W)
        ``lower`` plus the mass ``1 - Σ lower`` poured into the slots in ``order``, each filled up to
        ``upper``. A row whose box is empty (:func:`box_usable`) gets a point that is not in it.

    Notes
    -----
    Optimal by an exchange argument: a feasible ``q`` that leaves room below ``upper`` in a slot of higher
    ``h`` while it holds more than ``lower`` in a slot of lower ``h`` improves (or keeps) ``h·q`` when mass
    moves from the second to the first; the poured vector admits no such move.
    """
    rows = np.arange(lower.shape[0])[:, None] if order.ndim == 2 else slice(None)
    low = lower[rows, order]
    room = upper[rows, order] - low
    free = 1.0 - lower.sum(axis=1)
    before = np.cumsum(room, axis=1) - room            # the room of the slots ranked above
    poured = np.minimum(np.maximum(free[:, None] - before, 0.0), room)
    vertices = np.empty_like(lower)
    vertices[rows, order] = low + poured
    return vertices

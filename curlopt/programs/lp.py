"""The LP form of a program whose utilities are all LP-representable.

Derived once from the abstract program (no solver imported): the program's
linear rows, plus

* for an objective with one affine piece, a cost vector ``W R``; with several
  pieces ``min_j (W_j λ + c_j)``, an epigraph column ``t`` (maximised) and rows
  ``t - W_j R x <= c_j``;
* for each constraint ``max_j (W_j ζ + c_j) <= -ε``, rows ``W_j C x <= -c_j - ε``.

Parameter entries keep their positions, so an LP backend updates coefficients in
place. The constraint rows' upper bounds are the only place ε appears.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import UnsupportedUtilityError
from ..utilities.library import Utility
from .blocks import Program

__all__ = ["LPForm", "piece_rows"]


def piece_rows(utility: Utility, aggregate_map: sp.spmatrix, role: str) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(W M, c)``: the affine pieces ``(W, c)`` of ``utility`` as rows over the program's columns.

    The epigraph of a concave objective ``min_j (W_j λ + c_j)`` is ``t - (W R)_j x <= c_j`` with ``t``
    maximised; a convex constraint ``max_j (W_j ζ + c_j) <= -ε`` is the rows ``(W C)_j x <= -c_j - ε``.
    :class:`LPForm` and the pyomo backend (for its utilities with kinks) build their rows from this.

    Parameters
    ----------
    utility : Utility
    aggregate_map : scipy.sparse matrix, shape (K or d, n_vars)
        ``M``, mapping the program's columns to the utility's aggregate (``λ = R x`` or ``ζ = C x``).
    role : str
        How the utility is named in the error ("the objective", "constraint 0").

    Raises
    ------
    UnsupportedUtilityError
        When the utility has no affine pieces.
    """
    pieces = utility.affine_pieces()
    if pieces is None:
        raise UnsupportedUtilityError(f"{role} {utility!r} is not LP-representable.")
    w, c = pieces
    return sp.csr_matrix(w) @ aggregate_map, c


class LPForm:
    """``maximise cost·x + offset`` s.t. ``row_lower <= A x <= row_upper``, column bounds.

    Attributes
    ----------
    fixed : scipy.sparse.csr_matrix
        Constant coefficients of all rows (program rows, epigraph rows, g rows).
    param_rows, param_cols : ndarray
        Positions of the program's parameter entries (values in ``program.linear.param_values``).
    cost : ndarray
    offset : float
    col_lower, col_upper, row_lower, row_upper : ndarray
        ``row_upper`` holds the g rows at ε = 0; use :meth:`constraint_upper`.
    constraint_rows : slice
        Rows of the g constraints.
    """

    def __init__(self, program: Program):
        self.program = program
        n = program.n_vars
        obj_map, c_obj = piece_rows(program.objective, program.reward_map, "the objective")  # (J, n)
        epigraph = obj_map.shape[0] > 1
        self.n_cols = n + (1 if epigraph else 0)
        col_lower, col_upper = program.column_bounds()
        lin = program.linear

        blocks = [sp.hstack([lin.fixed, sp.csr_matrix((lin.n_rows, self.n_cols - n))])]
        row_lower = [lin.lower]
        row_upper = [lin.upper]
        if epigraph:
            # t - W_j R x <= c_j
            rows = sp.hstack([-obj_map, sp.csr_matrix(np.ones((obj_map.shape[0], 1)))])
            blocks.append(rows)
            row_lower.append(np.full(obj_map.shape[0], -np.inf))
            row_upper.append(c_obj.copy())
            self.cost = np.zeros(self.n_cols)
            self.cost[n] = 1.0
            self.offset = 0.0
            col_lower = np.append(col_lower, -np.inf)
            col_upper = np.append(col_upper, np.inf)
        else:
            self.cost = np.asarray(obj_map.todense()).ravel()
            self.offset = float(c_obj[0])

        first_g = sum(b.shape[0] for b in blocks)
        g_base = []
        for m, g in enumerate(program.constraints):
            rows, c = piece_rows(g, program.cost_map, f"constraint {m}")
            blocks.append(sp.hstack([rows, sp.csr_matrix((rows.shape[0], self.n_cols - n))]))
            row_lower.append(np.full(rows.shape[0], -np.inf))
            g_base.append(-c)
        self.constraint_rows = slice(first_g, first_g + sum(b.size for b in g_base))
        self._g_base = np.concatenate(g_base) if g_base else np.zeros(0)
        row_upper.append(self._g_base.copy())

        self.fixed = sp.vstack(blocks).tocsr()
        self.fixed.sum_duplicates()
        self.param_rows = lin.param_rows
        self.param_cols = lin.param_cols
        self.col_lower, self.col_upper = col_lower, col_upper
        self.row_lower = np.concatenate(row_lower)
        self.row_upper = np.concatenate(row_upper)
        self.n_rows = self.fixed.shape[0]

    def constraint_upper(self, epsilon: float, with_constraints: bool = True) -> np.ndarray:
        """Upper bounds of the g rows: ``-c_j - ε``, or ``+inf`` for the fallback program."""
        if not with_constraints:
            return np.full(self._g_base.size, np.inf)
        return self._g_base - epsilon

    def matrix(self, param_values: np.ndarray) -> sp.csr_matrix:
        """The full matrix with the given parameter values."""
        params = sp.csr_matrix((param_values, (self.param_rows, self.param_cols)), shape=self.fixed.shape)
        return (self.fixed + params).tocsr()

"""Is a simplex basis still optimal after the data changed? The optimality conditions of an LP basis, in numpy.

For ``maximise c·x`` subject to ``row_lower <= A x <= row_upper`` and ``col_lower <= x <= col_upper``, write
the row activities as variables ``r = A x``. A *basis* says, for each column and each row, whether it is basic or
sits at one of its bounds (HiGHS's statuses: lower, upper, or zero for a free variable). With ``m`` rows and
``m`` basic variables it fixes one point: the nonbasic variables at their bounds and the basic ones solving

    ``A_B x_B - r_B = r_N - A_N x_N``   (the rows' equations, basic row activities moved to the left)

and one dual vector ``y`` with ``B^T y = c_B`` (a basic row activity costs 0, so its dual is 0). The basis is
optimal when that point is within every bound and each nonbasic variable's reduced cost (``c_j - a_j·y`` for a
column, ``y_i`` for a row activity) cannot improve the objective by leaving its bound: ``<= 0`` at a lower
bound, ``>= 0`` at an upper bound, ``= 0`` for a free variable (each to a tolerance). These are the conditions
the simplex method stops on; checking them costs one dense solve of the rows' size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ColumnMatrix", "LinearProgram", "StatusCodes", "optimal_point"]


class ColumnMatrix:
    """A sparse matrix stored by column as HiGHS takes it (``indptr``, ``indices``, ``data``), built from
    ``(row, column, value)`` triplets (repeated positions summed, zeros dropped) with numpy alone: for the
    small masters re-solved thousands of times, scipy.sparse's checks cost more than the arithmetic."""

    def __init__(self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray, shape: tuple[int, int]):
        self.shape = (int(shape[0]), int(shape[1]))
        order = np.lexsort((rows, cols))
        rows, cols, values = rows[order], cols[order], np.asarray(values, dtype=float)[order]
        if rows.size:
            first = np.ones(rows.size, dtype=bool)
            first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
            starts = np.flatnonzero(first)
            rows, cols, values = rows[starts], cols[starts], np.add.reduceat(values, starts)
        kept = values != 0.0
        self.indices, self.columns, self.data = rows[kept].astype(np.int32), cols[kept], values[kept]
        self.indptr = np.zeros(self.shape[1] + 1, dtype=np.int32)
        np.cumsum(np.bincount(self.columns, minlength=self.shape[1]), out=self.indptr[1:])

    @property
    def nnz(self) -> int:
        return int(self.data.size)

    def dense_columns(self, which: np.ndarray) -> np.ndarray:
        """The columns ``which`` as a dense (rows, len(which)) array."""
        place = np.full(self.shape[1], -1)
        place[which] = np.arange(which.size)
        picked = place[self.columns] >= 0
        out = np.zeros((self.shape[0], which.size))
        out[self.indices[picked], place[self.columns[picked]]] = self.data[picked]
        return out

    def dot(self, x: np.ndarray) -> np.ndarray:
        """``A x``."""
        return np.bincount(self.indices, weights=self.data * x[self.columns], minlength=self.shape[0])

    def tdot(self, y: np.ndarray) -> np.ndarray:
        """``Aᵀ y``."""
        return np.bincount(self.columns, weights=self.data * y[self.indices], minlength=self.shape[1])


@dataclass
class LinearProgram:
    """``maximise cost·x`` over ``row_lower <= matrix x <= row_upper``, ``col_lower <= x <= col_upper``
    (bounds with numpy's infinities)."""

    matrix: ColumnMatrix
    cost: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray


@dataclass(frozen=True)
class StatusCodes:
    """The integer codes of basis statuses (HiGHS's ``HighsBasisStatus`` values)."""

    basic: int
    lower: int
    upper: int
    zero: int


def _nonbasic_values(status: np.ndarray, lower: np.ndarray, upper: np.ndarray, codes: StatusCodes) -> np.ndarray:
    """Where each nonbasic variable sits: its lower or upper bound, or 0 (free); NaN for a basic one."""
    values = np.where(status == codes.upper, upper, np.where(status == codes.zero, 0.0, lower))
    return np.where(status == codes.basic, np.nan, values)


def _signs_right(reduced: np.ndarray, status: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                 codes: StatusCodes, tolerance: float) -> bool:
    """Nonbasic reduced costs of a maximisation: ``<= tol`` at a lower bound, ``>= -tol`` at an upper one,
    ``|·| <= tol`` when free; a fixed variable (``lower == upper``) may have any."""
    free = lower != upper
    at_lower = free & (status == codes.lower)
    at_upper = free & (status == codes.upper)
    at_zero = status == codes.zero
    return not (np.any(reduced[at_lower] > tolerance) or np.any(reduced[at_upper] < -tolerance)
                or np.any(np.abs(reduced[at_zero]) > tolerance))


def optimal_point(lp: LinearProgram, col_status: np.ndarray, row_status: np.ndarray, codes: StatusCodes,
                  primal_tolerance: float, dual_tolerance: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The basic point ``(x, y)`` of the basis when it is optimal for ``lp`` (module doc), else None.

    None as well when the basis does not have one basic variable per row, is singular, or puts a nonbasic
    variable at an infinite bound.
    """
    m, n = lp.matrix.shape
    basic_cols = np.flatnonzero(col_status == codes.basic)
    basic_rows = np.flatnonzero(row_status == codes.basic)
    if basic_cols.size + basic_rows.size != m:
        return None
    x = _nonbasic_values(col_status, lp.col_lower, lp.col_upper, codes)
    r = _nonbasic_values(row_status, lp.row_lower, lp.row_upper, codes)
    fixed_x, fixed_r = ~np.isnan(x), ~np.isnan(r)
    if not (np.all(np.isfinite(x[fixed_x])) and np.all(np.isfinite(r[fixed_r]))):
        return None
    basis = np.zeros((m, m))
    basis[:, : basic_cols.size] = lp.matrix.dense_columns(basic_cols)
    basis[basic_rows, basic_cols.size + np.arange(basic_rows.size)] = -1.0
    rhs = np.where(fixed_r, r, 0.0) - lp.matrix.dot(np.where(fixed_x, x, 0.0))
    try:
        z = np.linalg.solve(basis, rhs)
        y = np.linalg.solve(basis.T, np.concatenate([lp.cost[basic_cols], np.zeros(basic_rows.size)]))
    except np.linalg.LinAlgError:
        return None
    if not (np.all(np.isfinite(z)) and np.all(np.isfinite(y))):
        return None
    x[basic_cols], r[basic_rows] = z[: basic_cols.size], z[basic_cols.size:]
    primal = (np.all(x >= lp.col_lower - primal_tolerance) and np.all(x <= lp.col_upper + primal_tolerance)
              and np.all(r >= lp.row_lower - primal_tolerance) and np.all(r <= lp.row_upper + primal_tolerance))
    if not primal:
        return None
    reduced = lp.cost - lp.matrix.tdot(y)
    if not (_signs_right(reduced, col_status, lp.col_lower, lp.col_upper, codes, dual_tolerance)
            and _signs_right(y, row_status, lp.row_lower, lp.row_upper, codes, dual_tolerance)):
        return None
    return x, y

"""Supports: the successors a program lets each pair (s, a) reach, and kernels and counts read on them.

A program's structure is fixed by a *support*, a sparsity pattern of shape (S·A, S) whose row ``s·A + a``
lists the successors ``s'`` that the program gives a coefficient or a variable: the occupancy program's flow
rows have a kernel entry only there, the optimistic programs have ``p(s,a,s')`` and ``α(s,a,s')`` only there.
The dense support lists every successor of every pair, which is the program of docs/math.md as written.

A support narrower than the truth is a modelling choice, not a detail: the optimistic programs' L1 ball and
box are then intersected with the distributions on the support, so a successor never in it can never be
reached by an optimistic kernel. A learning agent that declares a support states that it knows the kernel
is zero elsewhere (for instance a queue can only move by one customer a step).

Entries are numbered in CSR order: by pair, then by successor. For the dense support this is the order of an
(S, A, S) array's ``ravel()``, so a dense program's variables and parameters keep the layout they always had.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ProgramError
from ..models.cmdp import KERNEL_TOLERANCE

__all__ = ["Support", "check_kernel", "check_counts"]


def _pair(row: int, n_actions: int) -> tuple[int, int]:
    """``(s, a)`` of the flat pair index ``row = s·A + a``."""
    s, a = divmod(int(row), n_actions)
    return s, a


class Support:
    """The allowed successors of every pair (s, a), as a sparsity pattern of shape (S·A, S).

    Build one with :meth:`dense` (every successor) or :meth:`from_pattern` (the stored entries of a scipy
    sparse matrix). Entry ``k`` is the pair :attr:`pairs` ``[k]`` and successor :attr:`successors` ``[k]``.

    Attributes
    ----------
    n_states, n_actions : int
    indptr : ndarray of int64, shape (S·A + 1,)
        Pair ``i`` owns entries ``indptr[i]:indptr[i+1]``.
    is_dense : bool
        True for the support of every successor.
    """

    def __init__(self, n_states: int, n_actions: int, indptr: np.ndarray, indices: np.ndarray | None):
        self.n_states, self.n_actions = int(n_states), int(n_actions)
        self.indptr = indptr
        self._indices = indices
        self.is_dense = indices is None
        self._pairs: np.ndarray | None = None

    # -- construction ---------------------------------------------------------
    @classmethod
    def dense(cls, n_states: int, n_actions: int) -> Support:
        """Every successor of every pair (its arrays are built only when asked for)."""
        indptr = np.arange(0, n_states * n_actions * n_states + 1, n_states, dtype=np.int64)
        return cls(n_states, n_actions, indptr, None)

    @classmethod
    def from_pattern(cls, pattern: Any, n_states: int, n_actions: int) -> Support:
        """The support whose allowed successors are the stored entries of ``pattern`` (S·A, S).

        Stored zeros count as allowed (the pattern, not the values, is the support).

        Raises
        ------
        ProgramError
            For something that is not a scipy sparse matrix of shape (S·A, S), or a pair with no successor
            (no kernel row could then sum to 1).
        """
        expected = (n_states * n_actions, n_states)
        if not sp.issparse(pattern):
            raise ProgramError(
                f"support must be a scipy sparse matrix of shape (S·A, S) = {expected} whose stored entries are the"
                f" allowed successors (e.g. model.transitions), got {type(pattern).__name__}."
            )
        if pattern.shape != expected:
            raise ProgramError(f"support must have shape (S·A, S) = {expected} (row s·A + a), got {pattern.shape}.")
        csr = sp.csr_array(pattern, copy=True)
        csr.sum_duplicates()   # merges repeated positions and sorts each row's successors
        counts = np.diff(csr.indptr)
        if np.any(counts == 0):
            row = int(np.argmax(counts == 0))
            raise ProgramError(
                f"support has no successor for the pair (s, a) = {_pair(row, n_actions)}: every pair needs at least"
                " one allowed successor (its kernel row must sum to 1)."
            )
        return cls(n_states, n_actions, csr.indptr.astype(np.int64), csr.indices.astype(np.int64))

    @classmethod
    def of_model(cls, model: Any, support: Any = None) -> Support:
        """``support`` read as a pattern; by default the model's own kernel pattern when the model stores its
        kernel sparse, else the dense support."""
        S, A = model.n_states, model.n_actions
        if support is not None:
            return cls.from_pattern(support, S, A)
        if model.sparse:
            return cls.from_pattern(model.transitions, S, A)
        return cls.dense(S, A)

    # -- facts ----------------------------------------------------------------
    @property
    def nnz(self) -> int:
        """The number of allowed (pair, successor) entries."""
        return int(self.indptr[-1])

    @property
    def n_pairs(self) -> int:
        return self.n_states * self.n_actions

    @property
    def successors(self) -> np.ndarray:
        """The successor of every entry, shape (nnz,)."""
        if self._indices is None:
            self._indices = np.tile(np.arange(self.n_states, dtype=np.int64), self.n_pairs)
        return self._indices

    @property
    def pairs(self) -> np.ndarray:
        """The flat pair index ``s·A + a`` of every entry, shape (nnz,)."""
        if self._pairs is None:
            self._pairs = np.repeat(np.arange(self.n_pairs, dtype=np.int64), np.diff(self.indptr))
        return self._pairs

    @property
    def row_counts(self) -> np.ndarray:
        """How many successors each pair allows, shape (S·A,)."""
        return np.diff(self.indptr)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of a block of values on this support: (S, A, S) when dense, else (nnz,)."""
        return (self.n_states, self.n_actions, self.n_states) if self.is_dense else (self.nnz,)

    def matrix(self, values: np.ndarray) -> sp.csr_array:
        """The (S·A, S) CSR matrix holding ``values`` (one per entry) on this support's pattern."""
        values = np.array(values, dtype=float).reshape(-1)
        # copies: the matrix's owner may drop zeros in place, which must not touch the support's own arrays
        return sp.csr_array((values, self.successors.copy(), self.indptr.copy()), shape=(self.n_pairs, self.n_states))

    def uniform(self) -> sp.csr_array:
        """The kernel uniform over each pair's allowed successors, as a CSR (S·A, S) matrix."""
        return self.matrix(1.0 / self.row_counts[self.pairs])

    def pattern(self) -> sp.csr_array:
        """The support as a (S·A, S) CSR matrix of ones."""
        return self.matrix(np.ones(self.nnz))

    def row_sums(self, values: np.ndarray) -> np.ndarray:
        """``Σ`` of ``values`` over each pair's entries, shape (S·A,)."""
        values = np.asarray(values, dtype=float).reshape(-1)
        if self.is_dense:
            return values.reshape(self.n_pairs, self.n_states).sum(axis=1)
        return np.add.reduceat(values, self.indptr[:-1])   # no pair has an empty row (from_pattern refuses one)

    # -- reading data on the support -------------------------------------------
    def gather(self, data: Any, name: str) -> np.ndarray:
        """``data`` (a dense (S, A, S) array or a sparse (S·A, S) matrix) at every entry, shape (nnz,).

        Raises
        ------
        ProgramError
            When ``data`` has a nonzero outside the support (naming the pair and the successor).
        """
        S = self.n_states
        if self.is_dense:
            return data.toarray().reshape(-1) if sp.issparse(data) else np.asarray(data).reshape(-1)
        if sp.issparse(data) and data.format == "csr" and _same_pattern(data, self):
            # stored on this support's own pattern (a posterior draw, a plug-in estimate): its values in order
            return np.array(data.data, dtype=float)
        if sp.issparse(data):
            keys = self.pairs * S + self.successors           # sorted: CSR order
            rows = np.repeat(np.arange(self.n_pairs, dtype=np.int64), np.diff(data.indptr))
            wanted = rows * S + data.indices
            at = np.minimum(np.searchsorted(keys, wanted), max(self.nnz - 1, 0))
            outside = keys[at] != wanted
            if np.any(outside):
                first = int(np.argmax(outside))
                self._outside(name, int(rows[first]), int(data.indices[first]), float(data.data[first]))
            values = np.zeros(self.nnz)
            values[at] = data.data
            return values
        flat = np.asarray(data).reshape(self.n_pairs, S)
        values = flat[self.pairs, self.successors]
        if np.count_nonzero(flat) != np.count_nonzero(values):
            mask = flat != 0
            mask[self.pairs, self.successors] = False
            row, successor = (int(i) for i in np.argwhere(mask)[0])
            self._outside(name, row, successor, float(flat[row, successor]))
        return values

    def _outside(self, name: str, row: int, successor: int, value: float) -> None:
        raise ProgramError(
            f"{name} has a nonzero entry outside the program's support: the row of (s, a) ="
            f" {_pair(row, self.n_actions)}, successor {successor}, value {value!r}; the program was built on a"
            " support that excludes it (pass support=... covering every successor the data can have)."
        )

    def __repr__(self) -> str:
        kind = "dense" if self.is_dense else "sparse"
        return f"Support({kind}, S={self.n_states}, A={self.n_actions}, nnz={self.nnz})"


# ----------------------------------------------------------------------------
# Checking kernels and counts in either form
# ----------------------------------------------------------------------------


def _sparse_input(data: Any, S: int, A: int, name: str) -> sp.csr_array:
    """``data`` as a canonical CSR array (S·A, S): duplicates summed, indices sorted, stored zeros dropped."""
    expected = (S * A, S)
    if data.shape != expected:
        raise ProgramError(
            f"{name} must have shape (S, A, S) = ({S}, {A}, {S}) or, sparse, (S·A, S) = {expected}, got {data.shape}."
        )
    matrix = sp.csr_array(data, dtype=float, copy=True)
    matrix.sum_duplicates()
    return matrix


def _check_entries(values: np.ndarray, rows: np.ndarray, columns: np.ndarray, A: int, name: str,
                   upper: float | None) -> None:
    """NaN/inf, negative entries (and entries above ``upper``), naming the first bad row and successor."""
    bad = ~np.isfinite(values)
    if np.any(bad):
        at = int(np.argmax(bad))
        raise ProgramError(f"{name} contains NaN or infinite entries (first in the row of (s, a) ="
                           f" {_pair(rows[at], A)}, successor {int(columns[at])}).")
    bad = values < 0 if upper is None else (values < 0) | (values > upper)
    if np.any(bad):
        at = int(np.argmax(bad))
        what = "negative" if upper is None else f"outside [0, {upper:g}]"
        raise ProgramError(f"{name} has an entry {what} in the row of (s, a) = {_pair(rows[at], A)}, successor"
                           f" {int(columns[at])}: {float(values[at])!r}.")


def _check_sums(sums: np.ndarray, A: int, name: str) -> None:
    deviation = np.abs(sums - 1.0)
    if np.any(deviation > KERNEL_TOLERANCE):
        row = int(np.argmax(deviation))
        raise ProgramError(f"{name} does not sum to 1 (tolerance {KERNEL_TOLERANCE:g}): the row of (s, a) ="
                           f" {_pair(row, A)} sums to {float(sums[row]):.12g}.")


def _dense_input(data: Any, S: int, A: int, name: str) -> np.ndarray:
    try:
        array = np.asarray(data, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ProgramError(f"{name} must be an array of numbers of shape (S, A, S) or a scipy sparse (S·A, S)"
                           f" matrix ({exc}).") from None
    if array.shape != (S, A, S):
        raise ProgramError(
            f"{name} must have shape (S, A, S) = ({S}, {A}, {S}) or, sparse, (S·A, S) = ({S * A}, {S}), got"
            f" {array.shape}."
        )
    return array


def _dense_problem(array: np.ndarray, upper: float | None) -> bool:
    """Whether a dense array has a NaN/inf or an entry outside ``[0, upper]``.

    Two reductions and no temporary arrays (every epoch's counts pass here): a NaN makes both the minimum and
    the maximum NaN, which fails both comparisons; -inf fails the minimum's, +inf the maximum's.
    """
    largest = array.max()
    return not (array.min() >= 0.0 and largest < math.inf and (upper is None or largest <= upper))


def _locate_dense(array: np.ndarray, S: int, A: int, name: str, upper: float | None) -> None:
    """Raise the error naming the first bad entry of a dense array known to have one."""
    flat = array.reshape(S * A, S)
    rows, columns = np.nonzero(~np.isfinite(flat) | (flat < 0) | (flat > (np.inf if upper is None else upper)))
    _check_entries(flat[rows, columns], rows, columns, A, name, upper)


def check_kernel(model: Any, kernel: Any, name: str = "kernel") -> Any:
    """``kernel`` checked: a float array (S, A, S) or a canonical CSR array (S·A, S), each row a distribution.

    Refuses a wrong shape, NaN or infinite entries, entries outside [0, 1] and rows not summing to 1 (within
    :data:`~curlopt.models.cmdp.KERNEL_TOLERANCE`), naming the row (s, a) and, for an entry, the successor.

    Raises
    ------
    ProgramError
    """
    S, A = model.n_states, model.n_actions
    if sp.issparse(kernel):
        q = _sparse_input(kernel, S, A, name)
        rows = np.repeat(np.arange(S * A), np.diff(q.indptr))
        _check_entries(q.data, rows, q.indices, A, name, 1.0)
        q.eliminate_zeros()
        _check_sums(np.asarray(q.sum(axis=1)).ravel(), A, name)
        return q
    q = _dense_input(kernel, S, A, name)
    if _dense_problem(q, 1.0):
        _locate_dense(q, S, A, name, 1.0)
    _check_sums(q.sum(axis=-1).reshape(-1), A, name)
    return q


def check_counts(model: Any, counts: Any, name: str = "counts") -> Any:
    """``counts`` checked: a float array (S, A, S) or a canonical CSR array (S·A, S), finite and non-negative.

    Raises
    ------
    ProgramError
        For a wrong shape, or NaN, infinite or negative entries (naming the row (s, a) and successor).
    """
    S, A = model.n_states, model.n_actions
    if sp.issparse(counts):
        n = _sparse_input(counts, S, A, name)
        rows = np.repeat(np.arange(S * A), np.diff(n.indptr))
        _check_counts_entries(n.data, rows, n.indices, A, name)
        n.eliminate_zeros()
        return n
    n = _dense_input(counts, S, A, name)
    if _dense_problem(n, None):
        flat = n.reshape(S * A, S)
        rows, columns = np.nonzero(~np.isfinite(flat) | (flat < 0))
        _check_counts_entries(flat[rows, columns], rows, columns, A, name)
    return n


def _check_counts_entries(values: np.ndarray, rows: np.ndarray, columns: np.ndarray, A: int, name: str) -> None:
    bad = ~np.isfinite(values) | (values < 0)
    if np.any(bad):
        at = int(np.argmax(bad))
        raise ProgramError(f"{name} must be finite and non-negative: the row of (s, a) = {_pair(rows[at], A)},"
                           f" successor {int(columns[at])}, holds {float(values[at])!r}.")


def _same_pattern(matrix: Any, support: Support) -> bool:
    """Whether a CSR ``matrix`` stores exactly the entries of ``support``, in its order (then its ``data`` are the
    values at the support's entries, as :meth:`Support.gather` would place them)."""
    return (matrix.shape == (support.n_pairs, support.n_states) and matrix.indices.size == support.nnz
            and np.array_equal(matrix.indptr, support.indptr) and np.array_equal(matrix.indices, support.successors))

"""Column generation on HiGHS for an optimistic program: the master, its column loop and its warm start.

This is the part the two column backends share: ``highs-columns`` (UC-CURL's L1 optimistic program,
:mod:`.columns`) and ``highs-box-columns`` (UCRL-CMDP's box program, :mod:`.box_columns`). Both programs say, for a
pair (s,a), only that ``p(s,a,·) = ρ(s,a)·q`` for some ``q`` in a convex set ``Q(s,a)`` of the simplex (an L1 ball
or a box around the empirical kernel ``P^``; the rows are homogeneous in ρ), plus rows on ρ alone. Writing
``p(s,a,·) = Σ_v x(s,a,v)·v`` over points ``v`` of ``Q(s,a)`` (Dantzig–Wolfe) gives an equivalent LP over the
weights ``x >= 0``, with ``ρ(s,a) = Σ_v x(s,a,v)``: the *master*. Its *global* rows (:class:`Master`):

* row 0, the total mass ``Σ x = 1``;
* rows ``1 .. S-1``, the flow of states ``0 .. S-2``: ``Σ_a ρ(s',a) - Σ_{s,a,v} x(s,a,v) v(s') = 0`` (the last
  state's row is implied by the others and the mass, and left out as in the programs);
* then the rows :class:`~curlopt.programs.lp.LPForm` adds on ρ: the objective's epigraph rows and the g rows.

Its columns, in HiGHS's order: the *fixed* ones (artificials for phase 1: ``+1`` and ``-1`` on the mass and flow
rows, ``-1`` on each g row; then the epigraph variable ``t`` when the objective has several pieces); then, in the
order they were added, *vertex columns* ``(pair, v)`` (the *pool*) and *pair blocks*, each a pair's whole
``ρ·Q(s,a)`` in a few columns and rows of its own (below the global rows).

A column's reduced cost under the row duals ``y`` is ``c(s,a) - y·a``; over the points of a pair's ``Q`` it is a
constant plus ``h·v``, with ``h(s') = y(1 + s')`` for ``s' < S - 1`` and ``h(S-1) = 0``. Maximising ``h·v`` over
``Q(s,a)`` is the program's own inner step in closed form, and depends on ``h`` only through a ranking of the
states, so one sort of ``h`` prices every pair at once. Each backend brings what is its own: its ``Q`` (pricing;
how a vertex it remembers by a ranking is recomputed on new data), its pair blocks' rows, and how each epoch's
data reach HiGHS (a rebuilt master, or coefficients rewritten in place). :class:`CompiledColumnGeneration` holds
the rest:

* *the column loop*: master solves and pricing rounds while some pair has a column of reduced cost above
  ``pricing_tolerance``. Pricing is exact, so when it stops the master's optimum is the whole program's (up to the
  solver's tolerances and ``pricing_tolerance``); with total mass 1 the largest reduced cost also bounds the gap
  (:attr:`CompiledColumnGeneration.last_gap`). A run that reaches ``max_rounds`` ends with status
  ``iteration_limit`` and says so (no solution is returned);
* *pair blocks*, against degenerate masters: where the optimum spreads a pair's mass over next states whose duals
  tie, each new vertex enters the basis at 0 and the duals move by one degenerate pivot per round (hundreds of
  rounds at (S, A) = (100, 10), measured). A pair that keeps pricing positive gets a block instead, after which it
  needs no pricing (a block's reduced costs are nonpositive by the master's own optimality);
* *phase 1*, when the kept columns cannot satisfy the rows: artificial columns on the mass, flow and g rows,
  their sum minimised, until the rows hold, or no improving column is left with the sum above
  ``feasibility_tolerance``, which proves the program infeasible (then
  :meth:`~curlopt.backends.base.CompiledProgram.solve` falls back as for every backend, docs/math.md §4);
* *the warm start across epochs*: a vertex column is remembered by its pair and a ranking (the backend's, with
  :data:`CENTRE` for the pair's ``P^``), so that it can be recomputed on new data and stay feasible; a column is
  dropped once it has not been basic for ``keep_solves`` solves, a block once its pair has carried no mass for
  :attr:`~CompiledColumnGeneration.BLOCK_KEEP_SOLVES` solves, and the empirical kernel of a visited pair seeds the
  pool. The basis is kept by part, so that a rebuilt master starts from it;
* the status and the result's assembly, and HiGHS's solutions and bases read and written through its C API
  (:class:`MasterAccess`), which only saves time.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ...errors import BackendError
from ...programs.lp import LPForm
from ...programs.optimistic import JointProgram
from ..base import CompiledProgram, RawSolution
from ..results import Status
from .backend import STATUS_MAP as HIGHS_STATUS_MAP
from .backend import check_representable, new_highs, run_highs
from .solution import SolutionReader

if TYPE_CHECKING:  # imported where a solver is made, so that importing the backends stays cheap
    import highspy

    from .columns import ColumnsBackend

__all__ = ["CENTRE", "ColumnMatrix", "CompiledColumnGeneration", "Master", "MasterAccess", "MasterProgram",
           "SOLVER", "STATUS_MAP"]

#: HiGHS's model status names -> ours (those of the ``highs`` backend); the column loop adds ``iteration_limit``
STATUS_MAP: dict[str, Status] = dict(HIGHS_STATUS_MAP)
#: the solver named in results
SOLVER = "HiGHS (column generation)"
#: the ranking of a pool column that is its pair's empirical kernel ``P^`` (no ranking)
CENTRE = -1


class ColumnMatrix:
    """A sparse matrix stored by column as HiGHS takes it: ``indptr`` (n_cols + 1), ``indices`` (int32 rows) and
    ``data``, each column's entries by increasing row.

    Built from ``(row, column, value)`` triplets (:meth:`from_triplets`) with numpy alone: for the small masters
    re-solved thousands of times, scipy.sparse's checks cost more than the arithmetic.
    """

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n_rows: int):
        self.indptr, self.indices, self.data = indptr, indices, data
        self.shape = (int(n_rows), int(indptr.size - 1))

    @classmethod
    def from_triplets(cls, rows: np.ndarray, cols: np.ndarray, values: np.ndarray,
                      shape: tuple[int, int]) -> ColumnMatrix:
        """The matrix of ``shape`` with these entries: repeated positions summed (in the order given), zeros
        dropped."""
        # by column, then row; a stable sort of one key keeps repeated positions in order and, on triplets that come
        # column after column in long runs, costs about a third of np.lexsort's two passes (measured)
        key = cols.astype(np.int64) * max(int(shape[0]), 1) + rows
        order = np.argsort(key, kind="stable")
        key, rows, cols, values = key[order], rows[order], cols[order], np.asarray(values, dtype=float)[order]
        if rows.size:
            first = np.ones(rows.size, dtype=bool)
            first[1:] = key[1:] != key[:-1]
            starts = np.flatnonzero(first)
            rows, cols, values = rows[starts], cols[starts], np.add.reduceat(values, starts)
        kept = values != 0.0
        indptr = np.zeros(int(shape[1]) + 1, dtype=np.int32)
        np.cumsum(np.bincount(cols[kept], minlength=int(shape[1])), out=indptr[1:])
        return cls(indptr, rows[kept].astype(np.int32), values[kept], shape[0])

    @property
    def nnz(self) -> int:
        return int(self.data.size)


@dataclass
class MasterProgram:
    """The master as an LP: ``maximise cost·x`` over ``row_lower <= matrix x <= row_upper``,
    ``col_lower <= x <= col_upper`` (bounds with numpy's infinities)."""

    matrix: ColumnMatrix
    cost: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray


class Master(ABC):
    """The master's structure (fixed for a compiled program) as arrays, no solver: the pairs' slots, the global
    rows, the fixed columns and the vertex columns (module doc). A subclass adds its program's ``Q``: the epoch's
    data, pricing and the pair blocks.

    Per-pair arrays hold ``W`` *slots*: on the dense support ``W = S`` and slot j is state j; on a sparse support
    (:mod:`curlopt.programs.support`) slot j of a pair is its j-th allowed successor, ``W`` is the most successors a
    pair has, and a pair's slots past its own count are invalid (successor -1, never carrying mass).

    Attributes
    ----------
    S, n_pairs, W : int
        States, pairs (s·A + a) and slots.
    own_state, own_row : ndarray, shape (n_pairs,)
        Each pair's state, and its flow row (-1 for the last state, whose row is left out).
    valid : ndarray of bool, shape (n_pairs, W)
        Which slots are a successor; ``successor`` (-1 where invalid) and ``flow_row`` (-1 where invalid or the
        last state) say which.
    n_global : int
        Global rows: ``S`` (mass and flow) plus LPForm's epigraph and g rows (``n_extra``).
    g_rows : ndarray of int
        The g rows among the global rows.
    extra_of_pair : ndarray, shape (n_pairs, n_extra)
        ρ's coefficients in the extra rows (``extra_rows``: LPForm's rows past the program's own, over its columns;
        ``rho_columns``: ρ's columns there).
    cost : ndarray, shape (n_pairs,)
        ρ's phase-2 cost.
    n_art, n_fixed : int
        Artificial columns, and fixed columns (the artificials, then ``t`` if the objective has an epigraph).
    block_rows, block_cols : int
        Rows and columns of one pair block (set by the subclass).
    """

    block_rows: int
    block_cols: int

    def __init__(self, program: JointProgram, form: LPForm):
        self.program, self.form = program, form
        model = program.model
        S, A = model.n_states, model.n_actions
        self.S, self.n_pairs = S, S * A
        self.own_state = np.repeat(np.arange(S), A)
        self.own_row = np.where(self.own_state < S - 1, 1 + self.own_state, -1)
        self._slots(program)
        lin = program.linear
        self.rho_columns = rho = program.blocks["occupancy"].indices().ravel()
        self.extra_rows = extra = form.fixed[lin.n_rows:]                 # epigraph rows, then g rows (LPForm's order)
        self.n_extra = extra.shape[0]
        self.n_global = S + self.n_extra
        self.epigraph = form.n_cols > program.n_vars
        self.extra_of_pair = np.asarray(extra[:, rho].toarray().T)          # (pairs, extra rows)
        self.extra_lower, self.extra_upper = form.row_lower[lin.n_rows:], form.row_upper[lin.n_rows:]
        self.cost = np.asarray(form.cost[rho], dtype=float)
        self.g_rows = S + np.arange(form.constraint_rows.start, form.constraint_rows.stop) - lin.n_rows
        self._fixed_columns(extra[:, program.n_vars].tocoo() if self.epigraph else None)

    def _slots(self, program: JointProgram) -> None:
        """Slots of each pair: their successors (-1 where invalid) and flow rows (-1 for the last state)."""
        support = program.support
        S = self.S
        self.sparse = not support.is_dense
        if not self.sparse:
            self.W = S
            self.valid = np.ones((self.n_pairs, S), dtype=bool)
            self.successor = np.broadcast_to(np.arange(S), (self.n_pairs, S))
        else:
            sizes = support.row_counts
            self.W = int(sizes.max())
            self.valid = np.arange(self.W)[None, :] < sizes[:, None]
            successor = np.full((self.n_pairs, self.W), -1, dtype=np.int64)
            successor[self.valid] = support.successors                   # CSR order: pair by pair
            self.successor = successor
        self.all_valid = bool(self.valid.all())
        self.flow_row = np.where(self.valid & (self.successor < S - 1), 1 + self.successor, -1)

    def _fixed_columns(self, t_column: Any) -> None:
        """The artificials (+1/-1 on the mass and flow rows, -1 on each g row), then ``t``, as triplets."""
        S, n_g = self.S, self.g_rows.size
        self.n_art = 2 * S + n_g
        rows = [np.arange(S), np.arange(S), self.g_rows]
        values = [np.ones(S), -np.ones(S), -np.ones(n_g)]
        cols = [np.arange(self.n_art)]
        cost = [np.zeros(self.n_art)]
        if t_column is not None:
            rows.append(S + t_column.row)
            values.append(t_column.data)
            cols.append(np.full(t_column.nnz, self.n_art))
            cost.append(np.ones(1))
        self._fixed = (np.concatenate(rows).astype(np.int64), np.concatenate(cols), np.concatenate(values))
        self.fixed_cost = np.concatenate(cost)
        self.n_fixed = self.fixed_cost.size

    def global_row_bounds(self, with_constraints: bool) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of the global rows (numpy infinities), the g rows at ``-c - ε`` or ``+inf`` for the fallback."""
        lower = np.concatenate([[1.0], np.zeros(self.S - 1), self.extra_lower])
        upper = np.concatenate([[1.0], np.zeros(self.S - 1), self.extra_upper])
        upper[self.g_rows] = self.form.constraint_upper(self.program.epsilon, with_constraints)
        return lower, upper

    # -- columns --------------------------------------------------------------------------------------------------

    def column_entries(self, pairs: np.ndarray, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Triplets of the vertex columns ``(pair, v)`` (vertices over slots) over the global rows, columns
        numbered 0 .. k-1 (a vertex's own state appears twice, +1 and -v(s): :class:`ColumnMatrix` sums them)."""
        k = pairs.size
        flow = self.flow_row[pairs]
        column, slot = np.nonzero((flow >= 0) & (vertices != 0.0))
        own = self.own_row[pairs]
        inside = np.flatnonzero(own >= 0)
        extra = self.extra_of_pair[pairs]
        extra_column, extra_row = np.nonzero(extra)
        rows = np.concatenate([np.zeros(k, dtype=np.int64), flow[column, slot], own[inside], self.S + extra_row])
        cols = np.concatenate([np.arange(k), column, inside, extra_column])
        values = np.concatenate([np.ones(k), -vertices[column, slot], np.ones(inside.size), extra[extra_column, extra_row]])
        return rows, cols, values

    def columns(self, pairs: np.ndarray, vertices: np.ndarray) -> ColumnMatrix:
        """The vertex columns ``(pair, v)`` over the global rows."""
        return ColumnMatrix.from_triplets(*self.column_entries(pairs, vertices), (self.n_global, pairs.size))

    @abstractmethod
    def block_entries(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Triplets of each pair's block, ``n · block_cols`` columns (block b's from column ``b · block_cols``)
        over the global rows and the blocks' own rows (block b's from row ``n_global + b · block_rows``)."""

    @abstractmethod
    def block_row_bounds(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of ``count`` blocks' own rows (numpy infinities)."""

    def block_cost(self, pairs: np.ndarray) -> np.ndarray:
        """The phase-2 costs of the blocks' columns: ρ's, then 0."""
        cost = np.zeros((pairs.size, self.block_cols))
        cost[:, 0] = self.cost[pairs]
        return cost.ravel()

    # -- pricing --------------------------------------------------------------------------------------------------

    @abstractmethod
    def price(self, duals: np.ndarray, phase: int) -> tuple[np.ndarray, Any]:
        """Every pair's best reduced cost over its ``Q`` under the global rows' duals (``-inf`` for a pair whose
        ``Q`` is empty; phase 1 prices with cost 0), and what the compiled program needs to make the best vertices
        (its ``_new_vertices``)."""

    # -- the whole master -----------------------------------------------------------------------------------------

    def master_program(self, pool_pairs: np.ndarray, pool_vertices: np.ndarray, block_pairs: np.ndarray,
                       row_lower: np.ndarray, row_upper: np.ndarray) -> MasterProgram:
        """The master with the fixed columns, the vertex columns ``(pool_pairs, pool_vertices)`` and a block for
        each of ``block_pairs``, in phase 2 (artificials held at 0); ``row_lower, row_upper``: the global rows'."""
        k, n_blocks = pool_pairs.size, block_pairs.size
        pool = self.column_entries(pool_pairs, pool_vertices)
        blocks = self.block_entries(block_pairs)
        offsets = (0, self.n_fixed, self.n_fixed + k)
        parts = (self._fixed, pool, blocks)
        rows = np.concatenate([part[0] for part in parts])
        cols = np.concatenate([part[1] + offset for part, offset in zip(parts, offsets, strict=True)])
        values = np.concatenate([part[2] for part in parts])
        n_rows, n_cols = self.n_global + n_blocks * self.block_rows, self.n_fixed + k + n_blocks * self.block_cols
        col_lower, col_upper = np.zeros(n_cols), np.full(n_cols, np.inf)
        col_upper[: self.n_art] = 0.0
        if self.epigraph:
            col_lower[self.n_art] = -np.inf
        block_lower, block_upper = self.block_row_bounds(n_blocks)
        return MasterProgram(ColumnMatrix.from_triplets(rows, cols, values, (n_rows, n_cols)),
                             np.concatenate([self.fixed_cost, self.cost[pool_pairs], self.block_cost(block_pairs)]),
                             col_lower, col_upper, np.concatenate([row_lower, block_lower]),
                             np.concatenate([row_upper, block_upper]))


class MasterAccess:
    """A master's solution, duals and basis as numpy arrays through HiGHS's C API
    (:class:`~curlopt.backends.highs.solution.SolutionReader`), or through highspy's lists where the C API cannot
    be reached or HiGHS uses 64-bit integers (the same values, slower).

    highspy returns them as Python lists of floats and of enum members; at (S, A) = (100, 10) converting the
    basis both ways cost more than HiGHS's own re-solve (measured). Through the C API the solution and the basis
    are read into buffers kept across solves (their addresses taken once, sized by HiGHS's own counts), as a
    master is re-solved thousands of times a run.
    """

    def __init__(self, highs: Any) -> None:
        import highspy

        self.highs = highs
        reader = SolutionReader.create(highs)
        self._api = reader if reader is not None and reader.has_int32_basis() else None
        # the model status by name without highspy's enum ``name`` property (a few microseconds a call)
        self._status_names = {member: name for name, member in highspy.HighsModelStatus.__members__.items()}
        self._status_of_code = {int(member): name for member, name in self._status_names.items()}
        self._values, self._duals = np.empty(0), np.empty(0)
        self._values_at = self._duals_at = 0
        # two pairs of basis buffers, used in turn: a basis read stays valid until the read after next (the
        # caller's last basis, kept by part, is read while the new one is written)
        self._bases = [(np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int32), 0, 0) for _ in range(2)]
        self._turn = 0
        if self._api is not None:
            # Highs_getSolution and Highs_getBasis on the reader's pointer, writing into the buffers by address
            # (the reader's own methods allocate the arrays, or take their addresses, at every call); the model
            # status as HiGHS's integer code (a seventh of a microsecond; highspy's enum hashes slower)
            calls = self._api.c_calls()
            self._read_solution, self._read_basis = calls.get_solution, calls.get_basis
            self._model_status, self._pointer = calls.model_status, calls.pointer

    def status_name(self) -> str:
        """HiGHS's model status, as the name of its ``HighsModelStatus`` member."""
        if self._api is None:
            return self._status_names[self.highs.getModelStatus()]
        return self._status_of_code[self._model_status(self._pointer)]

    def solution(self) -> tuple[np.ndarray, np.ndarray]:
        """Column values and row duals of the current solution. Through the C API they are views of buffers that
        the next call overwrites: a caller keeps a copy of what it needs past the next master solve."""
        if self._api is None:
            solution = self.highs.getSolution()
            return np.asarray(solution.col_value, dtype=float), np.asarray(solution.row_dual, dtype=float)
        # HiGHS writes as many values as its model has columns and rows: the buffers are sized by its own counts
        n_cols, n_rows = self.highs.getNumCol(), self.highs.getNumRow()
        if n_cols > self._values.size:
            self._values = np.empty(2 * n_cols)
            self._values_at = self._values.ctypes.data
        if n_rows > self._duals.size:
            self._duals = np.empty(2 * n_rows)
            self._duals_at = self._duals.ctypes.data
        self._read_solution(self._pointer, self._values_at, None, None, self._duals_at)
        return self._values[:n_cols], self._duals[:n_rows]

    def basis(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Column and row statuses (``HighsBasisStatus`` values), or None without a valid basis. Through the C API
        they are views of buffers that the call after next overwrites."""
        if self.highs.getInfoValue("basis_validity")[1] != 1:
            return None
        if self._api is None:
            basis = self.highs.getBasis()
            return (np.array([int(s) for s in basis.col_status], dtype=np.int32),
                    np.array([int(s) for s in basis.row_status], dtype=np.int32))
        # HiGHS writes as many statuses as its model has columns and rows: the buffers are sized by its own counts
        n_cols, n_rows = self.highs.getNumCol(), self.highs.getNumRow()
        self._turn ^= 1
        cols, rows, cols_at, rows_at = self._bases[self._turn]
        if n_cols > cols.size or n_rows > rows.size:
            cols = np.empty(max(2 * n_cols, cols.size), dtype=np.int32)
            rows = np.empty(max(2 * n_rows, rows.size), dtype=np.int32)
            cols_at, rows_at = cols.ctypes.data, rows.ctypes.data
            self._bases[self._turn] = (cols, rows, cols_at, rows_at)
        self._read_basis(self._pointer, cols_at, rows_at)
        return cols[:n_cols], rows[:n_rows]

    def set_basis(self, cols: np.ndarray, rows: np.ndarray) -> None:
        """Start the next run from these statuses (HiGHS refuses an inconsistent basis: a cold start, no error)."""
        if self._api is None:
            import highspy

            basis = highspy.HighsBasis()
            basis.col_status = [highspy.HighsBasisStatus(int(s)) for s in cols]
            basis.row_status = [highspy.HighsBasisStatus(int(s)) for s in rows]
            basis.valid = True
            self.highs.setBasis(basis)
            return
        self._api.set_basis(np.ascontiguousarray(cols, dtype=np.int32), np.ascontiguousarray(rows, dtype=np.int32))


class CompiledColumnGeneration(CompiledProgram):
    """An optimistic program as a column-generation master on one HiGHS object (module doc): the column loop,
    the pool, the blocks and the warm start. A subclass names its :class:`Master` (``MASTER``) and brings
    :meth:`_read_data`, :meth:`_new_vertices` and :meth:`_program_solution`.

    HiGHS's columns: the fixed ones, then vertex columns (the *pool*) and blocks' columns in the order they were
    added; its rows: the global rows, then the blocks' own rows. Pool column i is pair ``_pool_pair[i]`` with
    vertex ``_pool_vertex[i]`` (over slots), remembered as ``_pool_ranking[i]`` (the subclass's ranking, or
    :data:`CENTRE`), last basic in solve ``_pool_seen[i]``, HiGHS's column ``_pool_index[i]``; block b is pair
    ``_block_pair[b]``, its ρ HiGHS's column ``_block_index[b]``, its first own row ``_block_row[b]``.

    Attributes
    ----------
    last_rounds : int
        Master solves (pricing rounds) of the last attempt.
    last_columns, last_blocks : int
        Vertex columns and pair blocks in the master after the last attempt.
    last_phase1 : bool
        Whether the last attempt needed phase 1.
    last_gap : float
        The largest reduced cost (>= 0) at the end of the last attempt's last phase. After phase 2 the whole
        program's optimum is at most the master's value plus this (total mass 1): it bounds how far below the
        optimum the result can be.
    last_solver_time : float
        HiGHS's own run time over the last attempt's master solves.
    """

    #: the master's structure and the program's ``Q`` (a subclass of :class:`Master`)
    MASTER: ClassVar[type[Master]]
    #: HiGHS's ``simplex_strategy`` for the master unless the options set one: 4, the primal simplex. New columns
    #: leave the basis primal feasible, and the master is very degenerate (most pairs carry no mass); HiGHS's dual
    #: simplex stalled on it for 900,000 iterations (160 s) at (100,10) where the primal one took 0.6 s (measured
    #: on the same master).
    SIMPLEX_STRATEGY = 4
    #: rounds (within one attempt) in which a pair that carries mass priced positive before it gets a pair block
    BLOCK_AFTER = 2
    #: the same for a pair that carries none (its vertex columns entered the basis at 0: degenerate pivots)
    BLOCK_AFTER_IDLE = 4
    #: at most this many blocks are added in one round (the others' pairs get vertex columns that round)
    BLOCKS_PER_ROUND = 4
    #: a block stays while its pair carried mass in one of this many last solves (blocks are few and were
    #: needed once: the same pair tends to stall the master again)
    BLOCK_KEEP_SOLVES = 25
    #: no pair (pricing's answer when no column prices positive; never written to)
    _NO_PAIRS = np.zeros(0, dtype=np.int64)

    backend: ColumnsBackend
    master: Master
    highs: highspy.Highs | None
    _access: MasterAccess
    _pool_ranking: np.ndarray

    def __init__(self, backend: ColumnsBackend, program: JointProgram) -> None:
        super().__init__(backend, program)
        import highspy

        self._highspy = highspy
        self._inf = highspy.kHighsInf
        self._basic = int(highspy.HighsBasisStatus.kBasic)
        self._at_lower = int(highspy.HighsBasisStatus.kLower)
        self.form = form = LPForm(program)
        check_representable(form)
        self.master = master = self.MASTER(program, form)
        # the basis of no block, by part (read only: the basis kept by part is never written in place)
        self._no_block_basis = (np.zeros((0, master.block_cols), dtype=np.int32),
                                np.zeros((0, master.block_rows), dtype=np.int32))
        self._reset()

    def _reset(self) -> None:
        """An empty pool and no block, basis or solve yet (a subclass sets ``_pool_ranking``'s empty shape)."""
        W = self.master.W
        self._pool_pair = np.zeros(0, dtype=np.int64)
        self._pool_vertex = np.zeros((0, W))
        self._pool_seen = np.zeros(0, dtype=np.int64)
        self._pool_index = np.zeros(0, dtype=np.int64)
        self._block_pair = np.zeros(0, dtype=np.int64)
        self._block_seen = np.zeros(0, dtype=np.int64)
        self._block_index = np.zeros(0, dtype=np.int64)
        self._block_row = np.zeros(0, dtype=np.int64)
        self._memory: dict[str, np.ndarray] | None = None       # the last basis, by part
        self._solves, self._data_version = 0, -1
        self.highs = None                                       # the highspy.Highs, made at the first build
        self._synced = False                                    # whether HiGHS holds the current pool and blocks
        self._n_cols = self._n_rows = 0
        self._phase2_cost = np.zeros(0)
        self._g_pushed: np.ndarray | None = None                # the g rows' upper bounds in HiGHS
        self._g_key: tuple[float, bool] | None = None           # and the (ε, with constraints) they were pushed for
        self.last_rounds = self.last_columns = self.last_blocks = 0
        self.last_phase1, self.last_gap, self.last_solver_time = False, math.nan, 0.0

    # -- what a backend brings --------------------------------------------------------------------------------------

    @abstractmethod
    def _read_data(self) -> None:
        """The epoch's data (the master's ``read``), the pool and blocks kept on it (:meth:`_keep`), and whether
        HiGHS still holds them (``_synced``; else the next attempt rebuilds the master)."""

    @abstractmethod
    def _new_vertices(self, pairs: np.ndarray, pricing: Any) -> tuple[np.ndarray, np.ndarray]:
        """The rankings and vertices of new pool columns for ``pairs``, from what the master's ``price`` returned."""

    @abstractmethod
    def _program_solution(self) -> np.ndarray:
        """The master's solution (``self._solution``) in the program's variable layout."""

    # -- the pool -----------------------------------------------------------------------------------------------------

    def _keep(self, keep: np.ndarray, keep_block: np.ndarray, seed: np.ndarray, seed_vertices: np.ndarray) -> None:
        """Keep the pool columns ``keep`` and the blocks ``keep_block`` (in the basis kept by part too), and add the
        pairs ``seed`` with their ``P^`` columns ``seed_vertices`` (nonbasic). The HiGHS model is the caller's."""
        memory = self._memory
        if memory is not None:
            self._memory = {**memory, "pool": np.concatenate([memory["pool"][keep],
                                                              np.full(seed.size, self._at_lower, dtype=np.int32)]),
                            "block_cols": memory["block_cols"][keep_block], "block_rows": memory["block_rows"][keep_block]}
        ranking = self._pool_ranking
        self._pool_pair = np.concatenate([self._pool_pair[keep], seed])
        self._pool_ranking = np.concatenate([ranking[keep], np.full((seed.size,) + ranking.shape[1:], CENTRE,
                                                                    dtype=ranking.dtype)])
        self._pool_seen = np.concatenate([self._pool_seen[keep], np.full(seed.size, self._solves)])
        self._pool_vertex = np.concatenate([self._pool_vertex[keep], seed_vertices])
        self._pool_index = self._pool_index[keep]
        self._block_pair, self._block_seen = self._block_pair[keep_block], self._block_seen[keep_block]
        self._block_index, self._block_row = self._block_index[keep_block], self._block_row[keep_block]

    # -- HiGHS's model ----------------------------------------------------------------------------------------------

    @property
    def _master(self) -> highspy.Highs:
        """The master's HiGHS object; every step but the first build runs on a built master."""
        if self.highs is None:
            raise BackendError(f"the {self.backend.name} master was used before it was built (a bug in curlopt).")
        return self.highs

    def _new_master(self) -> highspy.Highs:
        highs = self.highs = new_highs()
        for key, value in self.backend.options.items():
            highs.setOptionValue(key, value)
        # A small master re-solved from a basis many times: presolve would only get in the way.
        highs.setOptionValue("presolve", "off")
        if "simplex_strategy" not in self.backend.options:
            highs.setOptionValue("simplex_strategy", self.SIMPLEX_STRATEGY)
        self._access = MasterAccess(highs)
        return highs

    def _build(self, with_constraints: bool) -> None:
        """Pass the master (fixed columns, pool, blocks; its g rows for this attempt) to HiGHS, with the last basis
        where it still fits."""
        highspy, master = self._highspy, self.master
        highs = self.highs if self.highs is not None else self._new_master()
        lp = master.master_program(self._pool_pair, self._pool_vertex, self._block_pair,
                                   *master.global_row_bounds(with_constraints))
        k, n_blocks = self._pool_pair.size, self._block_pair.size
        n_rows, n_cols = lp.matrix.shape
        self._pool_index = master.n_fixed + np.arange(k)
        self._block_index = master.n_fixed + k + master.block_cols * np.arange(n_blocks)
        self._block_row = master.n_global + master.block_rows * np.arange(n_blocks)
        self._phase2_cost = lp.cost
        matrix = lp.matrix
        # The array form of passModel: a HighsLp's attributes would copy each array element by element.
        highs.passModel(
            n_cols, n_rows, matrix.nnz, int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMaximize),
            self.form.offset, lp.cost, self._finite(lp.col_lower), self._finite(lp.col_upper),
            self._finite(lp.row_lower), self._finite(lp.row_upper), matrix.indptr[:-1], matrix.indices, matrix.data,
            np.zeros(n_cols, dtype=np.int32))
        self._n_cols, self._n_rows = n_cols, n_rows
        self._g_pushed = self._finite(lp.row_upper[master.g_rows])
        self._g_key = (self.program.epsilon, with_constraints)
        self._synced = True
        self._restore_basis()

    def _finite(self, values: np.ndarray) -> np.ndarray:
        """``values`` with numpy's infinities as HiGHS's."""
        return np.clip(values, -self._inf, self._inf)

    def _restore_basis(self) -> None:
        """Give HiGHS the last basis on the rebuilt master, its count of basic variables made right.

        Dropped columns were nonbasic, but a dropped block or new data can leave one basic variable too many or too
        few: extra basic pool columns become nonbasic, missing ones are made up by basic row slacks. HiGHS repairs a
        singular basis itself; a basis it refuses only means a cold start (slower, not wrong).
        """
        memory = self._memory
        if memory is None:
            return
        cols = np.concatenate([memory["fixed"], memory["pool"], memory["block_cols"].ravel()]).astype(np.int32)
        rows = np.concatenate([memory["global_rows"], memory["block_rows"].ravel()]).astype(np.int32)
        if cols.size != self._n_cols or rows.size != self._n_rows:
            return
        excess = int(np.count_nonzero(cols == self._basic) + np.count_nonzero(rows == self._basic)) - self._n_rows
        if excess > 0:
            demote = (self.master.n_fixed + np.flatnonzero(memory["pool"] == self._basic))[:excess]
            if demote.size < excess:
                return
            cols[demote] = self._at_lower
        elif excess < 0:
            rows[np.flatnonzero(rows != self._basic)[:-excess]] = self._basic
        self._access.set_basis(cols, rows)

    def _remember(self) -> None:
        """Keep the basis by part (for a rebuild), and when each column was last basic and each block carried mass."""
        found = self._access.basis()
        if found is None:
            self._memory = None
            return
        cols, rows = found
        master = self.master
        pool = cols[self._pool_index]
        if self._block_pair.size:
            block_cols = cols[self._block_index[:, None] + np.arange(master.block_cols)[None, :]]
            block_rows = rows[self._block_row[:, None] + np.arange(master.block_rows)[None, :]]
        else:                                                   # the usual case: no block, nothing to gather
            block_cols, block_rows = self._no_block_basis
        self._memory = {"fixed": cols[: master.n_fixed], "pool": pool, "block_cols": block_cols,
                        "global_rows": rows[: master.n_global], "block_rows": block_rows}
        self._pool_seen[pool == self._basic] = self._solves
        if self._block_pair.size:
            self._block_seen[self._solution[0][self._block_index] > 0] = self._solves

    def _push_g_bounds(self, with_constraints: bool) -> None:
        """The g rows' upper bounds for this attempt (ε-tight or none), pushed when they changed."""
        g_rows, key = self.master.g_rows, (self.program.epsilon, with_constraints)
        if key == self._g_key or not g_rows.size:     # the bounds depend on nothing else: not even computed
            return
        self._g_key = key
        upper = self._finite(self.form.constraint_upper(*key))
        if self._g_pushed is not None and np.array_equal(upper, self._g_pushed):
            return
        # highspy's stubs omit changeRowsBounds, which its extension defines
        self._master.changeRowsBounds(  # type: ignore[attr-defined]
            upper.size, g_rows.astype(np.int32), np.full(upper.size, -self._inf), upper)
        self._g_pushed = upper

    def _run(self) -> tuple[str, int, float]:
        """One master solve; ``self._solution`` holds its column values and row duals afterwards."""
        highs, access = self._master, self._access
        run_time = run_highs(highs, self.time_left())
        self._solution = access.solution()
        iterations = highs.getInfoValue("simplex_iteration_count")[1]
        return access.status_name(), max(0, int(iterations)), run_time  # -1: HiGHS has no count

    def _set_phase(self, phase: int) -> None:
        """Phase 1: maximise minus the artificials' sum, every other cost 0; phase 2: the program's objective,
        the artificials held at 0."""
        highs, n_art = self._master, self.master.n_art
        if phase == 1:
            cost = np.zeros(self._n_cols)
            cost[:n_art] = -1.0
        else:
            cost = self._phase2_cost
        highs.changeColsCost(self._n_cols, np.arange(self._n_cols, dtype=np.int32), cost)
        highs.changeColsBounds(n_art, np.arange(n_art, dtype=np.int32), np.zeros(n_art),
                               np.full(n_art, self._inf if phase == 1 else 0.0))

    # -- column generation ------------------------------------------------------------------------------------------

    def _price(self, phase: int) -> tuple[np.ndarray, Any, float]:
        """The pairs with a column of reduced cost above ``pricing_tolerance`` under the current duals, what the
        master's pricing returned for them, and the largest reduced cost (>= 0). Pairs with a block are left out
        (their reduced costs are <= 0)."""
        reduced, pricing = self.master.price(self._solution[1][: self.master.n_global], phase)
        if self._block_pair.size:
            reduced[self._block_pair] = -np.inf            # a block holds its pair's whole Q
        if not reduced.size:
            return reduced.nonzero()[0], pricing, 0.0
        top, tolerance = float(np.maximum.reduce(reduced)), self.backend.pricing_tolerance
        if top <= tolerance:   # the usual end of a round: no column to add (a NaN maximum goes on to the comparison)
            return self._NO_PAIRS, pricing, max(0.0, top)
        return (reduced > tolerance).nonzero()[0], pricing, max(0.0, top)

    def _generate(self, phase: int, rounds: int, priced: np.ndarray) -> tuple[str, int, int, float]:
        """Column generation in one phase: (HiGHS status name, "round limit" or "time limit"; rounds used,
        iterations, HiGHS time). ``priced`` counts, per pair, the rounds of this attempt in which it priced positive."""
        iterations, solver_time = 0, 0.0
        while True:
            left = self.time_left()  # a wall clock across the rounds; each master run also gets what is left
            if left is not None and left <= 0:
                return "time limit", rounds, iterations, solver_time
            name, its, run_time = self._run()
            rounds, iterations, solver_time = rounds + 1, iterations + its, solver_time + run_time
            if name != "kOptimal":
                return name, rounds, iterations, solver_time
            pairs, pricing, self.last_gap = self._price(phase)
            if pairs.size == 0:
                return name, rounds, iterations, solver_time
            if rounds >= self.backend.max_rounds:
                return "round limit", rounds, iterations, solver_time
            priced[pairs] += 1
            stalled = self._stalled(pairs, priced)
            self._add_vertices(pairs[~stalled], pricing, phase)
            self._add_blocks(pairs[stalled], phase)

    def _stalled(self, pairs: np.ndarray, priced: np.ndarray) -> np.ndarray:
        """Which of the positively priced ``pairs`` get a block this round (at most BLOCKS_PER_ROUND, those that
        carry the most mass first: a block costs rows). Only a pair that carries mass can stall the master (its mass
        spreads over tied states); the others price positive again simply because the duals are still moving."""
        carried = np.bincount(self._pool_pair, weights=self._solution[0][self._pool_index], minlength=self.master.n_pairs)
        stalled = (priced[pairs] >= self.BLOCK_AFTER) & ((carried[pairs] > 0) | (priced[pairs] >= self.BLOCK_AFTER_IDLE))
        if np.count_nonzero(stalled) > self.BLOCKS_PER_ROUND:
            ranked = np.flatnonzero(stalled)[np.argsort(-carried[pairs[stalled]], kind="stable")]
            stalled[ranked[self.BLOCKS_PER_ROUND:]] = False
        return stalled

    def _add_vertices(self, pairs: np.ndarray, pricing: Any, phase: int) -> None:
        """Append vertex columns to the pool and to HiGHS (they enter nonbasic at 0: the basis stays)."""
        if pairs.size == 0:
            return
        rankings, vertices = self._new_vertices(pairs, pricing)
        self._pool_pair = np.concatenate([self._pool_pair, pairs])
        self._pool_ranking = np.concatenate([self._pool_ranking, rankings])
        self._pool_vertex = np.concatenate([self._pool_vertex, vertices])
        self._pool_seen = np.concatenate([self._pool_seen, np.full(pairs.size, self._solves)])
        self._pool_index = np.concatenate([self._pool_index, self._n_cols + np.arange(pairs.size)])
        self._append_columns(self.master.columns(pairs, vertices), self.master.cost[pairs], phase)

    def _add_blocks(self, pairs: np.ndarray, phase: int) -> None:
        """Append a block (its own rows, then its columns) for each of ``pairs``."""
        if pairs.size == 0:
            return
        master = self.master
        lower, upper = master.block_row_bounds(pairs.size)
        self._master.addRows(lower.size, self._finite(lower), upper, 0, np.zeros(0, dtype=np.int32),
                             np.zeros(0, dtype=np.int32), np.zeros(0))
        rows, cols, values = master.block_entries(pairs)
        rows = np.where(rows >= master.n_global, rows + (self._n_rows - master.n_global), rows)  # where HiGHS put them
        self._block_pair = np.concatenate([self._block_pair, pairs])
        self._block_seen = np.concatenate([self._block_seen, np.full(pairs.size, self._solves)])
        self._block_index = np.concatenate([self._block_index, self._n_cols + master.block_cols * np.arange(pairs.size)])
        self._block_row = np.concatenate([self._block_row, self._n_rows + master.block_rows * np.arange(pairs.size)])
        self._n_rows += lower.size
        self._append_columns(ColumnMatrix.from_triplets(rows, cols, values, (self._n_rows, pairs.size * master.block_cols)),
                             master.block_cost(pairs), phase)

    def _append_columns(self, columns: ColumnMatrix, phase2_cost: np.ndarray, phase: int) -> None:
        count = columns.shape[1]
        self._master.addCols(count, phase2_cost if phase == 2 else np.zeros(count), np.zeros(count),
                             np.full(count, self._inf), columns.nnz, columns.indptr[:-1], columns.indices, columns.data)
        self._phase2_cost = np.concatenate([self._phase2_cost, phase2_cost])
        self._n_cols += count

    # -- one attempt ----------------------------------------------------------------------------------------------

    def _solve(self, with_constraints: bool) -> RawSolution:
        if self.program.version != self._data_version:
            self._read_data()
            self._data_version = self.program.version
        self._solves += 1
        self.last_phase1, self.last_gap = False, math.nan
        if not self._synced:
            self._build(with_constraints)
        else:
            self._push_g_bounds(with_constraints)
        priced = np.zeros(self.master.n_pairs, dtype=np.int64)
        name, rounds, iterations, solver_time = self._generate(2, 0, priced)
        if name == "kInfeasible":
            # The pool cannot satisfy the rows: phase 1 finds columns that do, or shows that none exist.
            self.last_phase1 = True
            self._set_phase(1)
            name, rounds, more, more_time = self._generate(1, rounds, priced)
            iterations, solver_time = iterations + more, solver_time + more_time
            self._set_phase(2)
            if name == "kOptimal":
                shortfall = float(self._solution[0][: self.master.n_art].sum())  # the objective would add f's offset
                if shortfall > self.backend.feasibility_tolerance:
                    return self._finish(RawSolution(
                        Status.INFEASIBLE, None, iterations, SOLVER, f"phase 1 of column generation: the rows cannot"
                        f" hold (sum of violations {shortfall:.3g}, no improving column left)", solver_time), rounds)
                name, rounds, more, more_time = self._generate(2, rounds, priced)
                iterations, solver_time = iterations + more, solver_time + more_time
        return self._finish(self._outcome(name, rounds, iterations, solver_time), rounds)

    def _finish(self, raw: RawSolution, rounds: int) -> RawSolution:
        self._remember()
        self.last_rounds = rounds
        self.last_columns, self.last_blocks = int(self._pool_pair.size), int(self._block_pair.size)
        self.last_solver_time = float(raw.solver_time or 0.0)
        return raw

    def _outcome(self, name: str, rounds: int, iterations: int, solver_time: float) -> RawSolution:
        if name == "time limit":
            return self.time_limit_reached(f"after {rounds} pricing round(s) of column generation", SOLVER,
                                           iterations, solver_time)
        if name == "round limit":
            return RawSolution(
                Status.ITERATION_LIMIT, None, iterations, SOLVER,
                f"column generation stopped at its limit of {self.backend.max_rounds} pricing rounds with a column of"
                f" reduced cost {self.last_gap:.3g} > {self.backend.pricing_tolerance:g} left: the master's value is"
                " only a lower bound on the optimum (raise max_rounds)", solver_time)
        status = STATUS_MAP.get(name, Status.UNKNOWN)
        if status is not Status.OPTIMAL:
            return RawSolution(status, None, iterations, SOLVER,
                               f"HiGHS model status {name} on the column-generation master", solver_time)
        return RawSolution(status, self._program_solution(), iterations, SOLVER, "", solver_time)

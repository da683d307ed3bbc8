"""The ``highs-box-columns`` backend: UCRL-CMDP's box program by column generation on HiGHS.

UCRL-CMDP's optimistic program (docs/math.md §9) has ``S·A + S²·A`` variables and ``2·S²·A`` box rows, but for
a pair its rows say only that ``p(s,a,·) = ρ(s,a)·q`` for a ``q`` in the pair's box ``Q(s,a)`` (the rows are
homogeneous in ρ), and a linear function is maximised over a box in closed form (:mod:`.box_vertices`). So the
program is solved as a Dantzig–Wolfe master over vertex columns (:mod:`.box_master`, which states its rows), as
the ``highs-columns`` backend solves UC-CURL's L1 program:

* *pricing*: the master's flow duals rank the successors; every pair's best vertex comes from that ranking in
  closed form, and a column enters while its reduced cost exceeds ``pricing_tolerance``. Pricing is exact, so
  when it stops the master's optimum is the whole program's: **the same optimal value as the ``highs``
  backend** (to the solvers' tolerances), not necessarily the same optimal vertex where the optimum has ties;
* *pair blocks* against degenerate rounds: a pair that keeps pricing positive gets its whole ``ρ·Q(s,a)`` as
  ``W + 1`` columns and rows (``p = ρ l + d``), after which it needs no pricing;
* *phase 1* when the kept columns cannot satisfy the rows: artificial columns, their sum minimised, until the
  rows hold or no improving column is left, which proves the program infeasible (then
  :meth:`~curlopt.backends.base.CompiledProgram.solve` falls back as for every backend, docs/math.md §4);
* *warm start*: a vertex column is remembered as its pair's ranking of successors and recomputed on each
  epoch's boxes (so it stays feasible). The HiGHS model persists across epochs: only the coefficients of the
  columns whose pair's box moved are rewritten (an epoch of UCRL-CMDP moves the boxes of the pairs it visited),
  so HiGHS re-solves from the last optimal basis. When that basis is still optimal for the new data — HiGHS checks
  its primal and dual feasibility first — the re-solve takes no simplex iteration and one pricing round.

Results are full :class:`~curlopt.backends.results.SolveResult` objects in the program's own layout (ρ, then p
on the support), so ``program.residuals(x)`` and the agents work unchanged. A run that reaches ``max_rounds``
pricing rounds ends with status ``iteration_limit`` and says so (no solution is returned).

UC-CURL's optimistic program is handed to the ``highs-columns`` machinery
(:class:`~curlopt.backends.highs.columns.CompiledColumns`) and every other program to the plain ``highs`` path,
with this backend's options; the results name this backend.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from ...programs.blocks import Program
from ...programs.lp import LPForm
from ...programs.optimistic import BoxOptimisticProgram
from ..base import CompiledProgram, RawSolution
from ..form_table import affine_pieces_table
from ..results import Status
from .backend import check_representable, highs_options, new_highs
from .box_master import BoxMaster, ColumnMatrix, MasterProgram
from .columns import STATUS_MAP, ColumnsBackend
from .solution import SolutionReader

__all__ = ["BoxColumnsBackend", "CompiledBoxColumns"]

#: the solver named in results
SOLVER = "HiGHS (column generation)"
#: a vertex column not basic in this many consecutive solves leaves the pool (the ``keep_solves`` option)
DEFAULT_KEEP_SOLVES = 100


class BoxColumnsBackend(ColumnsBackend):
    """HiGHS with column generation for UCRL-CMDP's box program (module doc) and UC-CURL's optimistic program
    (as ``highs-columns``); plain HiGHS for the others.

    It matches the box LP's optimal **value** (to the solver's tolerances and ``pricing_tolerance``), not
    necessarily its optimal vertex. ``auto`` never chooses it.

    Parameters
    ----------
    options, max_rounds, pricing_tolerance, feasibility_tolerance, time_limit, verbose
        As for ``highs-columns`` (:class:`~curlopt.backends.highs.columns.ColumnsBackend`).
    keep_solves : int, default 100
        A column not basic in this many consecutive solves leaves the pool (``highs-columns``: 3).
    """

    name: ClassVar[str] = "highs-box-columns"
    FORMS = affine_pieces_table("highs-box-columns")
    #: ``highs-columns``'s options, with a pool kept longer: on the epoch data of a 100,000-step UCRL-CMDP run on the
    #: queue, dropping columns after 3 nonbasic solves took 1.44 pricing rounds per epoch (the dropped columns priced
    #: back in), after 100 solves 1.05
    OPTIONS = tuple(replace(option, default=DEFAULT_KEEP_SOLVES) if option.name == "keep_solves" else option
                    for option in ColumnsBackend.OPTIONS)

    def _configure(self) -> None:
        self.options = highs_options(self, "the highs-box-columns backend")

    def _compile(self, program: Program) -> CompiledProgram:
        # Exactly the box program: a subclass may add rows the master would not know of.
        if type(program) is BoxOptimisticProgram:
            return CompiledBoxColumns(self, program)
        return super()._compile(program)


class _MasterAccess:
    """The master's solution, duals and basis as numpy arrays through HiGHS's C API
    (:class:`~curlopt.backends.highs.solution.SolutionReader`), or through highspy's lists where the C API cannot
    be reached (the same values, slower). The caller passes the model's size, which it keeps itself."""

    def __init__(self, highs: Any) -> None:
        self.highs = highs
        reader = SolutionReader.create(highs)
        self._api = reader if reader is not None and reader.has_int32_basis() else None

    def solution(self, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Column values and row duals of the current solution."""
        if self._api is None:
            solution = self.highs.getSolution()
            return np.asarray(solution.col_value, dtype=float), np.asarray(solution.row_dual, dtype=float)
        return self._api.col_values_and_row_duals(n_rows)

    def basis(self, n_cols: int, n_rows: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Column and row statuses (``HighsBasisStatus`` values), or None without a valid basis."""
        if self.highs.getInfoValue("basis_validity")[1] != 1:
            return None
        if self._api is None:
            basis = self.highs.getBasis()
            return (np.array([int(s) for s in basis.col_status], dtype=np.int32),
                    np.array([int(s) for s in basis.row_status], dtype=np.int32))
        cols, rows = np.empty(n_cols, dtype=np.int32), np.empty(n_rows, dtype=np.int32)
        self._api.get_basis(cols, rows)
        return cols, rows

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


class CompiledBoxColumns(CompiledProgram):
    """The box program as a column-generation master on one HiGHS object (module doc; rows in
    :class:`~.box_master.BoxMaster`).

    HiGHS's columns: the fixed ones, then vertex columns (the *pool*) and blocks' columns in the order they were
    added; its rows: the global rows, then the blocks' own rows. A new epoch rewrites the coefficients of the
    columns whose pair's box moved (``changeCoeff``: HiGHS keeps its basis) and deletes the pool columns that
    were not basic in the last ``keep_solves`` solves; seeding the pool or dropping a block rebuilds the model
    (``passModel``, with the last basis).

    Attributes
    ----------
    last_rounds : int
        Master solves (pricing rounds) of the last attempt.
    last_columns, last_blocks : int
        Vertex columns and pair blocks in the master after the last attempt.
    last_phase1 : bool
        Whether the last attempt needed phase 1.
    last_gap : float
        The largest reduced cost (>= 0) at the end of the last attempt's last phase: after phase 2 the program's
        optimum is at most the master's value plus this (total mass 1).
    last_solver_time : float
        HiGHS's own run time over the last attempt's master solves.
    """

    backend: BoxColumnsBackend

    #: HiGHS's ``simplex_strategy`` for the master unless the options set one: 4, the primal simplex (new columns
    #: keep the basis primal feasible; the ``highs-columns`` master showed a dual-simplex stall)
    SIMPLEX_STRATEGY = 4
    #: pricing rounds (in one attempt) after which a pair that carries mass, or one that carries none, gets a block
    BLOCK_AFTER = 2
    BLOCK_AFTER_IDLE = 4
    #: at most this many blocks are added in one round
    BLOCKS_PER_ROUND = 4
    #: a block stays while its pair carried mass in one of this many last solves
    BLOCK_KEEP_SOLVES = 25

    def __init__(self, backend: BoxColumnsBackend, program: BoxOptimisticProgram):
        super().__init__(backend, program)
        import highspy

        self._highspy = highspy
        self._inf = highspy.kHighsInf
        self._basic = int(highspy.HighsBasisStatus.kBasic)
        self._at_lower = int(highspy.HighsBasisStatus.kLower)
        self.form = form = LPForm(program)
        check_representable(form)
        self.master = BoxMaster(program, form)
        self._extra_lower = form.row_lower[program.linear.n_rows:]
        self._extra_upper = form.row_upper[program.linear.n_rows:]
        self._reset()

    def _reset(self) -> None:
        """An empty pool and no block, basis or solve yet."""
        W = self.master.W
        self._pool_pair = np.zeros(0, dtype=np.int64)
        self._pool_order = np.zeros((0, W), dtype=np.int32)     # a row of -1: the pair's P^
        self._pool_vertex = np.zeros((0, W))
        self._pool_seen = np.zeros(0, dtype=np.int64)
        self._block_pair = np.zeros(0, dtype=np.int64)
        self._block_seen = np.zeros(0, dtype=np.int64)
        # HiGHS's column of each pool column and of each block's ρ, and the row of each block's balance row
        self._pool_index = np.zeros(0, dtype=np.int64)
        self._block_index = np.zeros(0, dtype=np.int64)
        self._block_row = np.zeros(0, dtype=np.int64)
        self._memory: dict[str, np.ndarray] | None = None       # the last basis, by part
        self._solves, self._data_version = 0, -1
        self.highs: Any = None                                 # the highspy.Highs, made at the first build
        self._synced = False                                    # whether HiGHS holds the current pool and blocks
        self._n_cols = self._n_rows = 0
        self._phase2_cost = np.zeros(0)
        self._g_pushed: tuple[float, bool] | None = None       # (ε, with constraints) of the g bounds in HiGHS
        self.last_rounds = self.last_columns = self.last_blocks = 0
        self.last_phase1, self.last_gap, self.last_solver_time = False, math.nan, 0.0

    # -- the epoch's data -----------------------------------------------------------------------------------------

    def _read_data(self) -> None:
        """The boxes of the current counts; the pool and blocks to keep, recomputed where their pair's box moved
        (and rewritten in HiGHS); before the first basis, the empirical kernel ``P^`` of each visited pair as a
        seed column.

        A column or block is dropped once its pair's box is empty, and a ``P^`` column once its pair has no
        counts (new counts need not extend the old ones): neither is a point of the box any more."""
        master = self.master
        moved = master.read()
        usable = master.usable
        keep = usable[self._pool_pair] & ((self._solves - self._pool_seen) <= self.backend.keep_solves)
        centre = self._pool_order[:, 0] < 0
        if centre.any():
            keep &= ~centre | master.visited()[self._pool_pair]
        keep_block = usable[self._block_pair] & ((self._solves - self._block_seen) <= self.BLOCK_KEEP_SOLVES)
        if self._block_pair.size:                               # a block holds every point of its pair's box
            keep &= ~np.isin(self._pool_pair, self._block_pair[keep_block])
        seed = np.zeros(0, dtype=np.int64)
        if self._memory is None:
            covered = np.zeros(master.n_pairs, dtype=bool)
            covered[self._block_pair[keep_block]] = True
            covered[self._pool_pair[keep]] = True
            seed = np.flatnonzero(master.visited() & ~covered)
        if seed.size or not (keep.all() and keep_block.all()):
            self._rearrange(keep, keep_block, seed)
        again = np.flatnonzero(moved[self._pool_pair])
        before = self._pool_vertex[again]
        if again.size:
            self._pool_vertex[again] = master.vertices(self._pool_pair[again], self._pool_order[again])
        if self._synced:
            self._push_moved(again, before, np.flatnonzero(moved[self._block_pair]))

    def _rearrange(self, keep: np.ndarray, keep_block: np.ndarray, seed: np.ndarray) -> None:
        """Keep the pool columns ``keep`` and the blocks ``keep_block``, and add the seeds (P^ columns of ``seed``):
        in HiGHS too when only nonbasic pool columns go, else by a rebuild at the next master solve."""
        memory, master = self._memory, self.master
        if memory is not None:
            # a basic column is dropped only with a rebuild, which repairs the basis
            self._synced &= bool(keep_block.all()) and not np.any(memory["pool"][~keep] == self._basic)
            self._memory = {**memory, "pool": memory["pool"][keep], "block_cols": memory["block_cols"][keep_block],
                            "block_rows": memory["block_rows"][keep_block]}
        self._synced &= seed.size == 0
        if self._synced and not keep.all():
            self._delete_columns(self._pool_index[~keep])
        self._pool_pair = np.concatenate([self._pool_pair[keep], seed])
        self._pool_order = np.concatenate([self._pool_order[keep], np.full((seed.size, master.W), -1, np.int32)])
        self._pool_seen = np.concatenate([self._pool_seen[keep], np.full(seed.size, self._solves)])
        self._pool_vertex = np.concatenate([self._pool_vertex[keep], master.centre(seed)])
        self._pool_index = self._pool_index[keep]
        self._block_pair, self._block_seen = self._block_pair[keep_block], self._block_seen[keep_block]
        self._block_index, self._block_row = self._block_index[keep_block], self._block_row[keep_block]

    def _global_row_bounds(self, with_constraints: bool) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of the global rows (numpy infinities), the g rows at ``-c - ε`` or ``+inf`` for the fallback."""
        S = self.master.S
        lower = np.concatenate([[1.0], np.zeros(S - 1), self._extra_lower])
        upper = np.concatenate([[1.0], np.zeros(S - 1), self._extra_upper])
        upper[self.master.g_rows] = self.form.constraint_upper(self.program.epsilon, with_constraints)
        return lower, upper

    # -- one attempt ----------------------------------------------------------------------------------------------

    def _solve(self, with_constraints: bool) -> RawSolution:
        if self.program.version != self._data_version:
            self._read_data()
            self._data_version = self.program.version
        self._solves += 1
        self.last_phase1, self.last_gap = False, math.nan
        if not self._synced:
            lower, upper = self._global_row_bounds(with_constraints)
            self._build(self.master.master_program(self._pool_pair, self._pool_vertex, self._block_pair, lower, upper),
                        (self.program.epsilon, with_constraints))
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
                shortfall = float(self._solution[0][: self.master.n_art].sum())
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
        values = self._solution[0]
        blocks = values[self._block_index[:, None] + np.arange(self.master.W + 1)[None, :]]
        return RawSolution(status, self._program_solution(values[self._pool_index], blocks), iterations, SOLVER, "",
                           solver_time)

    def _program_solution(self, pool_values: np.ndarray, block_values: np.ndarray) -> np.ndarray:
        """ρ and p (on the support) from the weights of the vertex columns and the blocks' ``ρ, d``."""
        master = self.master
        used = np.flatnonzero(pool_values > 0.0)                 # the basic columns, at most one per row
        pairs, weights = self._pool_pair[used], pool_values[used]
        rho = np.bincount(pairs, weights=weights, minlength=master.n_pairs).astype(float, copy=False)
        slots = (pairs[:, None] * master.W + np.arange(master.W)).ravel()
        p = np.bincount(slots, weights=(weights[:, None] * self._pool_vertex[used]).ravel(),
                        minlength=master.n_pairs * master.W).astype(float, copy=False).reshape(master.n_pairs, master.W)
        if self._block_pair.size:
            block_values = np.maximum(block_values, 0.0)
            rho[self._block_pair] += block_values[:, 0]
            p[self._block_pair] += block_values[:, :1] * master.lower[self._block_pair] + block_values[:, 1:]
        return np.concatenate([rho, master.to_entries(np.maximum(p, 0.0))])

    # -- HiGHS's model ----------------------------------------------------------------------------------------------

    def _build(self, lp: MasterProgram, g_key: tuple[float, bool]) -> None:
        """Pass the master ``lp`` (fixed columns, pool, blocks; its g rows for ``g_key`` = (ε, with constraints)) to
        HiGHS, with the last basis where it still fits."""
        highspy, master = self._highspy, self.master
        if self.highs is None:
            self.highs = new_highs()
            for key, value in self.backend.options.items():
                self.highs.setOptionValue(key, value)
            # A small master re-solved from a basis many times: presolve would only get in the way.
            self.highs.setOptionValue("presolve", "off")
            if "simplex_strategy" not in self.backend.options:
                self.highs.setOptionValue("simplex_strategy", self.SIMPLEX_STRATEGY)
            self._access = _MasterAccess(self.highs)
        k, width = self._pool_pair.size, master.W + 1
        n_rows, n_cols = lp.matrix.shape
        self._pool_index = master.n_fixed + np.arange(k)
        self._block_index = master.n_fixed + k + width * np.arange(self._block_pair.size)
        self._block_row = master.n_global + width * np.arange(self._block_pair.size)
        self._phase2_cost = lp.cost
        matrix = lp.matrix
        self.highs.passModel(
            n_cols, n_rows, matrix.nnz, int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMaximize),
            self.form.offset, lp.cost, self._finite(lp.col_lower), self._finite(lp.col_upper),
            self._finite(lp.row_lower), self._finite(lp.row_upper), matrix.indptr[:-1], matrix.indices, matrix.data,
            np.zeros(n_cols, dtype=np.int32))
        self._n_cols, self._n_rows = n_cols, n_rows
        self._g_pushed = g_key
        self._synced = True
        self._restore_basis()

    def _finite(self, values: np.ndarray) -> np.ndarray:
        """``values`` with numpy's infinities as HiGHS's."""
        return np.clip(values, -self._inf, self._inf)

    def _delete_columns(self, columns: np.ndarray) -> None:
        """Delete nonbasic HiGHS columns (HiGHS keeps the basis of the others) and renumber ours."""
        columns = np.sort(columns)
        self.highs.deleteCols(columns.size, columns.astype(np.int32))
        kept = np.ones(self._n_cols, dtype=bool)
        kept[columns] = False
        self._phase2_cost = self._phase2_cost[kept]
        self._n_cols -= columns.size
        self._pool_index = self._pool_index - np.searchsorted(columns, self._pool_index)
        self._block_index = self._block_index - np.searchsorted(columns, self._block_index)

    def _push_moved(self, pool: np.ndarray, before: np.ndarray, blocks: np.ndarray) -> None:
        """Rewrite in HiGHS the flow coefficients of the pool columns ``pool`` (positions in the pool) that differ
        from their vertices ``before``, and the ρ columns of the blocks ``blocks`` (positions among the blocks) on
        their new boxes."""
        master = self.master
        pairs, after = self._pool_pair[pool], self._pool_vertex[pool]
        flow_rows = master.flow_row[pairs]
        column, slot = np.nonzero((after != before) & (flow_rows >= 0))     # an unchanged coefficient stays
        rows = flow_rows[column, slot]
        values = (rows == master.own_row[pairs[column]]) - after[column, slot]
        self._change(rows, self._pool_index[pool[column]], values)
        if blocks.size:
            pairs, index = self._block_pair[blocks], self._block_index[blocks][:, None]
            rows, values = master.flow_coefficients(pairs, master.lower[pairs])
            own = master.block_rho_coefficients(pairs)
            own_rows = self._block_row[blocks][:, None] + np.arange(own.shape[1])
            rows, values = np.concatenate([rows.ravel(), own_rows.ravel()]), np.concatenate([values.ravel(), own.ravel()])
            cols = np.concatenate([np.broadcast_to(index, pairs.shape + (master.W,)).ravel(),
                                   np.broadcast_to(index, own.shape).ravel()])
            used = rows >= 0
            self._change(rows[used], cols[used], values[used])

    def _change(self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> None:
        """HiGHS's ``changeCoeff`` for each entry (Python lists: a loop over numpy scalars costs more)."""
        change = self.highs.changeCoeff
        for row, col, value in zip(rows.tolist(), cols.tolist(), values.tolist(), strict=True):
            change(row, col, value)

    def _restore_basis(self) -> None:
        """Give HiGHS the last basis on the rebuilt master, its count of basic variables made right.

        Dropped columns were nonbasic, but a dropped block can leave one basic variable too many or too few:
        extra basic pool columns become nonbasic, missing ones are made up by basic row slacks. HiGHS repairs a
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
        """Keep the basis by part (for a rebuild), and when each column or block was last basic or carried mass."""
        found = self._access.basis(self._n_cols, self._n_rows)
        if found is None:
            self._memory = None
            return
        cols, rows = found
        width = self.master.W + 1
        self._memory = {
            "fixed": cols[: self.master.n_fixed],
            "pool": cols[self._pool_index],
            "block_cols": cols[self._block_index[:, None] + np.arange(width)[None, :]],
            "global_rows": rows[: self.master.n_global],
            "block_rows": rows[self._block_row[:, None] + np.arange(width)[None, :]],
        }
        self._pool_seen[self._memory["pool"] == self._basic] = self._solves
        if self._block_pair.size:
            self._block_seen[self._solution[0][self._block_index] > 0] = self._solves

    def _push_g_bounds(self, with_constraints: bool) -> None:
        """The g rows' upper bounds for this attempt (ε-tight or none), pushed when they changed."""
        key = (self.program.epsilon, with_constraints)
        if key == self._g_pushed or not self.master.g_rows.size:
            return
        upper = self._finite(self.form.constraint_upper(self.program.epsilon, with_constraints))
        self.highs.changeRowsBounds(upper.size, self.master.g_rows.astype(np.int32), np.full(upper.size, -self._inf),
                                    upper)
        self._g_pushed = key

    def _run(self) -> tuple[str, int, float]:
        """One master solve; ``self._solution`` holds its column values and row duals afterwards."""
        highs = self.highs
        before = highs.getRunTime()
        left = self.time_left()
        if left is not None:  # HiGHS's time_limit is on its run clock, which runs on over every solve
            highs.setOptionValue("time_limit", before + max(left, 0.0))
        highs.run()
        self._solution = self._access.solution(self._n_rows)
        iterations = highs.getInfoValue("simplex_iteration_count")[1]
        return highs.getModelStatus().name, int(iterations), highs.getRunTime() - before

    def _set_phase(self, phase: int) -> None:
        """Phase 1: maximise minus the artificials' sum, every other cost 0; phase 2: the program's objective,
        the artificials held at 0."""
        n_art = self.master.n_art
        if phase == 1:
            cost = np.zeros(self._n_cols)
            cost[:n_art] = -1.0
        else:
            cost = self._phase2_cost
        self.highs.changeColsCost(self._n_cols, np.arange(self._n_cols, dtype=np.int32), cost)
        self.highs.changeColsBounds(n_art, np.arange(n_art, dtype=np.int32), np.zeros(n_art),
                                    np.full(n_art, self._inf if phase == 1 else 0.0))

    # -- column generation ------------------------------------------------------------------------------------------

    def _generate(self, phase: int, rounds: int, priced: np.ndarray) -> tuple[str, int, int, float]:
        """Column generation in one phase: (HiGHS status name, "round limit" or "time limit"; rounds used,
        iterations, HiGHS time). ``priced`` counts, per pair, the rounds of this attempt in which it priced positive."""
        iterations, solver_time = 0, 0.0
        while True:
            left = self.time_left()
            if left is not None and left <= 0:
                return "time limit", rounds, iterations, solver_time
            name, its, run_time = self._run()
            rounds, iterations, solver_time = rounds + 1, iterations + its, solver_time + run_time
            if name != "kOptimal":
                return name, rounds, iterations, solver_time
            reduced, order = self.master.price(self._solution[1][: self.master.n_global], phase)
            if self._block_pair.size:
                reduced[self._block_pair] = -np.inf            # a block holds its pair's whole box
            pairs = np.flatnonzero(reduced > self.backend.pricing_tolerance)
            self.last_gap = max(0.0, float(reduced.max())) if reduced.size else 0.0
            if pairs.size == 0:
                return name, rounds, iterations, solver_time
            if rounds >= self.backend.max_rounds:
                return "round limit", rounds, iterations, solver_time
            priced[pairs] += 1
            stalled = self._stalled(pairs, priced)
            self._add_vertices(pairs[~stalled], *self.master.best_vertices(pairs[~stalled], order), phase)
            self._add_blocks(pairs[stalled], phase)

    def _stalled(self, pairs: np.ndarray, priced: np.ndarray) -> np.ndarray:
        """Which of the positively priced ``pairs`` get a block this round (at most BLOCKS_PER_ROUND, those that
        carry the most mass first): a pair that carries mass and keeps pricing positive spreads it over successors
        whose duals tie, and its new vertices enter the basis at 0, one degenerate pivot per round."""
        carried = np.bincount(self._pool_pair, weights=self._solution[0][self._pool_index], minlength=self.master.n_pairs)
        stalled = (priced[pairs] >= self.BLOCK_AFTER) & ((carried[pairs] > 0) | (priced[pairs] >= self.BLOCK_AFTER_IDLE))
        if np.count_nonzero(stalled) > self.BLOCKS_PER_ROUND:
            ranked = np.flatnonzero(stalled)[np.argsort(-carried[pairs[stalled]], kind="stable")]
            stalled[ranked[self.BLOCKS_PER_ROUND:]] = False
        return stalled

    def _add_vertices(self, pairs: np.ndarray, orders: np.ndarray, vertices: np.ndarray, phase: int) -> None:
        """Append vertex columns to the pool and to HiGHS (they enter nonbasic at 0: the basis stays)."""
        if pairs.size == 0:
            return
        self._pool_pair = np.concatenate([self._pool_pair, pairs])
        self._pool_order = np.concatenate([self._pool_order, orders])
        self._pool_vertex = np.concatenate([self._pool_vertex, vertices])
        self._pool_seen = np.concatenate([self._pool_seen, np.full(pairs.size, self._solves)])
        self._pool_index = np.concatenate([self._pool_index, self._n_cols + np.arange(pairs.size)])
        self._append_columns(self.master.columns(pairs, vertices), self.master.cost[pairs], phase)

    def _add_blocks(self, pairs: np.ndarray, phase: int) -> None:
        """Append a block (its own rows, then its columns) for each of ``pairs``."""
        if pairs.size == 0:
            return
        master, width = self.master, self.master.W + 1
        lower, upper = master.block_row_bounds(pairs.size)
        self.highs.addRows(lower.size, self._finite(lower), upper, 0, np.zeros(0, dtype=np.int32),
                           np.zeros(0, dtype=np.int32), np.zeros(0))
        rows, cols, values = master.block_entries(pairs)
        rows = np.where(rows >= master.n_global, rows + (self._n_rows - master.n_global), rows)  # where HiGHS put them
        self._block_pair = np.concatenate([self._block_pair, pairs])
        self._block_seen = np.concatenate([self._block_seen, np.full(pairs.size, self._solves)])
        self._block_index = np.concatenate([self._block_index, self._n_cols + width * np.arange(pairs.size)])
        self._block_row = np.concatenate([self._block_row, self._n_rows + width * np.arange(pairs.size)])
        self._n_rows += lower.size
        self._append_columns(ColumnMatrix(rows, cols, values, (self._n_rows, pairs.size * width)),
                             master.block_cost(pairs), phase)

    def _append_columns(self, columns: ColumnMatrix, phase2_cost: np.ndarray, phase: int) -> None:
        count = columns.shape[1]
        self.highs.addCols(count, phase2_cost if phase == 2 else np.zeros(count), np.zeros(count),
                           np.full(count, self._inf), columns.nnz, columns.indptr[:-1], columns.indices, columns.data)
        self._phase2_cost = np.concatenate([self._phase2_cost, phase2_cost])
        self._n_cols += count

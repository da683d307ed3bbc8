"""The ``highs-box-columns`` backend: UCRL-CMDP's box program by column generation on HiGHS.

UCRL-CMDP's optimistic program (docs/math.md §9) has ``S·A + S²·A`` variables and ``2·S²·A`` box rows, but for
a pair its rows say only that ``p(s,a,·) = ρ(s,a)·q`` for a ``q`` in the pair's box ``Q(s,a)`` (the rows are
homogeneous in ρ), and a linear function is maximised over a box in closed form (:mod:`.box_vertices`). So the
program is solved as a Dantzig–Wolfe master over vertex columns, by the column generation the ``highs-columns``
backend uses for UC-CURL's L1 program (:mod:`.column_generation`: the column loop, phase 1, pair blocks, the pool
and its basis), with the box program's own pricing, blocks and data (:mod:`.box_master`):

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

UC-CURL's optimistic program is compiled as ``highs-columns`` compiles it
(:class:`~curlopt.backends.highs.columns.CompiledColumns`) and every other program is handed to the ``highs``
backend with this backend's HiGHS options (``COMPILES`` and ``DELEGATES``); the results name this backend.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import ClassVar

import numpy as np

from ...programs.optimistic import BoxOptimisticProgram
from ..base import exactly
from ..form_table import affine_pieces_table
from .box_master import BoxMaster
from .column_generation import CompiledColumnGeneration
from .columns import ColumnsBackend

__all__ = ["BoxColumnsBackend", "CompiledBoxColumns"]

#: a vertex column not basic in this many consecutive solves leaves the pool (the ``keep_solves`` option)
DEFAULT_KEEP_SOLVES = 100


class BoxColumnsBackend(ColumnsBackend):
    """HiGHS with column generation for UCRL-CMDP's box program (module doc) and UC-CURL's optimistic program
    (as ``highs-columns``); plain HiGHS for the others.

    It matches the box LP's optimal **value** (to the solver's tolerances and ``pricing_tolerance``), not
    necessarily its optimal vertex. ``auto`` chooses it for the box program on kernels of 1,000 entries or more
    (:func:`curlopt.backends.registry.choose_backend`).

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

    #: UC-CURL's optimistic program as ``highs-columns`` compiles it, and UCRL-CMDP's box program itself (each
    #: exactly: a subclass may add rows the master would not know of; the class is defined below); every other
    #: program goes to the highs backend, as for ``highs-columns``
    COMPILES = {**ColumnsBackend.COMPILES,
                BoxOptimisticProgram: exactly(lambda backend, program: CompiledBoxColumns(backend, program))}


class CompiledBoxColumns(CompiledColumnGeneration):
    """The box program as a column-generation master on one HiGHS object (:mod:`.column_generation`, with the
    boxes of :class:`~.box_master.BoxMaster`).

    A pool column is remembered by its pair and its slot order (a row of -1: the pair's P^). The HiGHS model
    persists across epochs: a new epoch rewrites the coefficients of the columns whose pair's box moved
    (``changeCoeff``: HiGHS keeps its basis) and deletes the pool columns that were not basic in the last
    ``keep_solves`` solves; seeding the pool or dropping a block rebuilds the model (``passModel``, with the last
    basis). Its ``last_rounds``, ``last_columns``, ``last_blocks``, ``last_phase1``, ``last_gap`` and
    ``last_solver_time`` say what the last attempt took.
    """

    MASTER = BoxMaster
    master: BoxMaster
    #: the keep mask of the blocks when there is none (never written to)
    _NO_BLOCKS = np.zeros(0, dtype=bool)

    def _reset(self) -> None:
        super()._reset()
        self._pool_ranking = np.zeros((0, self.master.W), dtype=np.int32)    # slot orders; a row of -1: P^
        self._has_centre = False                                # whether a pool column is a P^ column

    def _keep(self, keep: np.ndarray, keep_block: np.ndarray, seed: np.ndarray, seed_vertices: np.ndarray) -> None:
        super()._keep(keep, keep_block, seed, seed_vertices)
        # P^ columns enter the pool only here (pricing's columns are slot orders) and leave only here: whether one is
        # left is found when the pool is rearranged, not at every solve
        self._has_centre = bool(np.logical_or.reduce(self._pool_ranking[:, 0] < 0))

    # -- the epoch's data -----------------------------------------------------------------------------------------

    def _read_data(self) -> None:
        """The boxes of the current counts; the pool and blocks to keep, recomputed where their pair's box moved
        (and rewritten in HiGHS); before the first basis, the empirical kernel ``P^`` of each visited pair as a
        seed column.

        A column or block is dropped once its pair's box is empty, and a ``P^`` column once its pair has no
        counts (new counts need not extend the old ones): neither is a point of the box any more."""
        master = self.master
        moved = master.read()
        usable, pool_pair = master.usable, self._pool_pair
        keep = usable[pool_pair]
        keep &= self._pool_seen >= self._solves - self.backend.keep_solves     # basic in the last keep_solves
        has_centre = self._has_centre
        if has_centre:
            keep &= (self._pool_ranking[:, 0] >= 0) | master.visited()[pool_pair]
        if self._block_pair.size:                               # a block holds every point of its pair's box
            keep_block = usable[self._block_pair]
            keep_block &= self._block_seen >= self._solves - self.BLOCK_KEEP_SOLVES
            keep &= ~np.isin(pool_pair, self._block_pair[keep_block])
            rearrange = not np.logical_and.reduce(keep_block)
        else:
            keep_block, rearrange = self._NO_BLOCKS, False
        seed = self._NO_PAIRS
        if self._memory is None:
            covered = np.zeros(master.n_pairs, dtype=bool)
            covered[self._block_pair[keep_block]] = True
            covered[pool_pair[keep]] = True
            seed = np.flatnonzero(master.visited() & ~covered)
        if seed.size or rearrange or not np.logical_and.reduce(keep):
            self._rearrange(keep, keep_block, seed)
            has_centre = True                                   # seeds are P^ columns: let vertices() look
        again = moved[self._pool_pair].nonzero()[0]
        if again.size:
            # rows gathered by take: a third of the cost of fancy indexing on these small arrays (measured)
            pairs, before = self._pool_pair[again], self._pool_vertex.take(again, axis=0)
            rankings = self._pool_ranking.take(again, axis=0)
            after = master.vertices(pairs, rankings) if has_centre else master.ranked_vertices(pairs, rankings)
            self._pool_vertex[again] = after
            if self._synced:
                self._push_moved(again, pairs, before, after)
        if self._synced and self._block_pair.size:
            self._push_blocks(moved[self._block_pair].nonzero()[0])

    def _rearrange(self, keep: np.ndarray, keep_block: np.ndarray, seed: np.ndarray) -> None:
        """Keep the pool columns ``keep`` and the blocks ``keep_block``, and add the seeds (P^ columns of ``seed``):
        in HiGHS too when only nonbasic pool columns go, else by a rebuild at the next master solve."""
        memory = self._memory
        if memory is not None:
            # a basic column is dropped only with a rebuild, which repairs the basis
            self._synced &= bool(keep_block.all()) and not np.any(memory["pool"][~keep] == self._basic)
        self._synced &= seed.size == 0
        if self._synced and not keep.all():
            self._delete_columns(self._pool_index[~keep])
        self._keep(keep, keep_block, seed, self.master.centre(seed))

    # -- HiGHS's model ----------------------------------------------------------------------------------------------

    def _delete_columns(self, columns: np.ndarray) -> None:
        """Delete nonbasic HiGHS columns (HiGHS keeps the basis of the others) and renumber ours."""
        columns = np.sort(columns)
        self._master.deleteCols(columns.size, columns.astype(np.int32))
        kept = np.ones(self._n_cols, dtype=bool)
        kept[columns] = False
        self._phase2_cost = self._phase2_cost[kept]
        self._n_cols -= columns.size
        self._pool_index = self._pool_index - np.searchsorted(columns, self._pool_index)
        self._block_index = self._block_index - np.searchsorted(columns, self._block_index)

    def _push_moved(self, pool: np.ndarray, pairs: np.ndarray, before: np.ndarray, after: np.ndarray) -> None:
        """Rewrite in HiGHS the flow coefficients of the pool columns ``pool`` (positions in the pool; ``pairs``
        their pairs) whose vertices moved from ``before`` to ``after`` (an unchanged coefficient stays)."""
        master = self.master
        changed = after != before
        changed &= master.on_flow.take(pairs, axis=0)
        # by flat index (1-D takes cost less than 2-D fancy indexing here): entry column·W + slot of the moved
        # columns, pair·W + slot of the structure's (pairs, W) arrays; in order, column by column, slot by slot
        moved = changed.ravel().nonzero()[0]
        column, slot = np.divmod(moved, master.W)
        entry = pairs.take(column) * master.W + slot
        values = master.own_slot.ravel().take(entry) - after.ravel().take(moved)   # 1 - v(s) in the own state's row
        self._change(master.flow_row.ravel().take(entry), self._pool_index.take(pool.take(column)), values)

    def _push_blocks(self, blocks: np.ndarray) -> None:
        """Rewrite in HiGHS the ρ columns of the blocks ``blocks`` (positions among the blocks) on their new boxes."""
        if not blocks.size:
            return
        master = self.master
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
        """HiGHS's ``changeCoeff`` for each entry, in order (Python lists: a loop over numpy scalars costs more; map
        calls it without a Python loop body)."""
        deque(map(self._master.changeCoeff, rows.tolist(), cols.tolist(), values.tolist()), maxlen=0)

    # -- the program's solution ---------------------------------------------------------------------------------------

    def _new_vertices(self, pairs: np.ndarray, pricing: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The slot orders and vertices of ``pairs`` for the order the master's pricing returned."""
        return self.master.best_vertices(pairs, pricing)

    def _program_solution(self) -> np.ndarray:
        """ρ and p (on the support) from the weights of the vertex columns and the blocks' ``ρ, d``."""
        master = self.master
        n_pairs = master.n_pairs
        pool_values = self._solution[0][self._pool_index]
        used = (pool_values > 0.0).nonzero()[0]                 # the basic columns, at most one per row
        weights = pool_values[used]
        weighted = self._pool_vertex.take(used, axis=0)
        weighted *= weights[:, None]
        # ρ and p in one bincount (disjoint bins, each summed in the order of the columns)
        pairs = self._pool_pair[used]
        x = np.bincount(np.concatenate([pairs, master.solution_slot.take(pairs, axis=0).ravel()]),
                        weights=np.concatenate([weights, weighted.ravel()]),
                        minlength=n_pairs * (master.W + 1)).astype(float, copy=False)  # no column: ints
        rho, p = x[:n_pairs], x[n_pairs:].reshape(n_pairs, master.W)
        if self._block_pair.size:
            values = self._solution[0]
            block_values = np.maximum(values[self._block_index[:, None] + np.arange(master.block_cols)[None, :]], 0.0)
            rho[self._block_pair] += block_values[:, 0]
            p[self._block_pair] += block_values[:, :1] * master.lower[self._block_pair] + block_values[:, 1:]
        np.maximum(p, master.zeros, out=p)
        return x if master.all_valid else np.concatenate([rho, master.to_entries(p)])

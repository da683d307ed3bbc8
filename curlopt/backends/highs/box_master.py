"""The column-generation master of UCRL-CMDP's box program, as arrays (no solver here).

The box program (docs/math.md §9) states ``p(s,a,·) = ρ(s,a)·q`` with ``q`` in the pair's box
``Q(s,a)`` (:mod:`.box_vertices`). Over points ``v`` of the boxes it is the LP, in weights ``x(s,a,v) >= 0``
with ``ρ(s,a) = Σ_v x(s,a,v)``, whose rows are the *global* rows:

* row 0, the total mass ``Σ x = 1``;
* rows ``1 .. S-1``, the flow of states ``0 .. S-2``: ``Σ_a ρ(s',a) - Σ_{s,a,v} x(s,a,v) v(s') = 0`` (the last
  state's row is implied by the others and the mass, and left out as in the program);
* then the rows :class:`~curlopt.programs.lp.LPForm` adds on ρ: the objective's epigraph rows and the g rows.

Its columns: the *fixed* ones (artificials for phase 1: ``+1`` and ``-1`` on the mass and flow rows, ``-1`` on
each g row; then the epigraph variable ``t`` when the objective has several pieces), the *vertex columns*
``(pair, v)``, and *pair blocks*: a block states a pair's whole ``ρ·Q(s,a)`` as ``p = ρ l + d`` with
``0 <= d <= ρ (u - l)`` (one *cap* row per slot) and ``Σ d = ρ (1 - Σ l)`` (the *balance* row), in ``W + 1``
columns and rows.

A column's reduced cost under row duals ``y`` is ``c(s,a) - y·a``; over the vertices of a pair it is a
constant plus ``h·v``, with ``h(s') = y(1 + s')`` for ``s' < S - 1`` and ``h(S-1) = 0``, so pricing is the closed
form of :mod:`.box_vertices` for every pair at once.

Columns are built as ``(row, column, value)`` triplets and assembled by :class:`ColumnMatrix` (numpy only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...programs.lp import LPForm
from ...programs.optimistic import BoxOptimisticProgram
from .box_vertices import box_usable, box_vertices

__all__ = ["BoxMaster", "ColumnMatrix", "MasterProgram"]


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


class BoxMaster:
    """The master's structure (fixed for a compiled program) and the current epoch's boxes.

    Per-pair arrays hold ``W`` *slots* (:mod:`.box_vertices`): on the dense support ``W = S`` and slot j is
    state j; on a sparse support ``W`` is the most successors a pair has, and a pair's slots past its own count
    are invalid (``l = u = 0``).

    Attributes
    ----------
    n_global : int
        Global rows: ``S`` (mass and flow) plus LPForm's epigraph and g rows.
    n_art, n_fixed : int
        Artificial columns, and fixed columns (the artificials, then ``t`` if the objective has an epigraph).
    lower, upper : ndarray, shape (S·A, W)
        ``l = max(0, P^ - b)`` and ``u = P^ + b``, read from the program by :meth:`read`.
    usable : ndarray of bool, shape (S·A,)
        Pairs whose box is not empty (the others can carry no mass).
    """

    def __init__(self, program: BoxOptimisticProgram, form: LPForm):
        self.program, self.form = program, form
        model = program.model
        S, A = model.n_states, model.n_actions
        self.S, self.n_pairs = S, S * A
        self._slots(program)
        lin = program.linear
        rho = program.blocks["occupancy"].indices().ravel()
        extra = form.fixed[lin.n_rows:]
        self.n_extra = extra.shape[0]
        self.n_global = S + self.n_extra
        self.epigraph = form.n_cols > program.n_vars
        self.extra_of_pair = np.asarray(extra[:, rho].toarray().T)         # (pairs, extra rows)
        self.cost = np.asarray(form.cost[rho], dtype=float)
        self.own_row = np.where(self.own_state < S - 1, 1 + self.own_state, -1)
        self.g_rows = S + np.arange(form.constraint_rows.start, form.constraint_rows.stop) - lin.n_rows
        self._fixed_columns(extra[:, program.n_vars].tocoo() if self.epigraph else None)
        groups = lin.param_groups
        self._upper_group, self._lower_group = groups["box_upper"], groups["box_lower"]
        self.lower = self.upper = np.zeros((self.n_pairs, self.W))
        self.free = np.ones((self.n_pairs, 1))
        self.usable = np.zeros(self.n_pairs, dtype=bool)
        self.unusable = np.arange(self.n_pairs)

    def _slots(self, program: BoxOptimisticProgram) -> None:
        """Slots of each pair: their successors (-1 where invalid) and flow rows (-1 for the last state)."""
        support = program.support
        S = self.S
        self.own_state = np.repeat(np.arange(S), program.model.n_actions)
        if support.is_dense:
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
        self.shared_ranking = support.is_dense                           # every pair's slots are the same states

    def _fixed_columns(self, t_column) -> None:
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

    # -- the epoch's data -----------------------------------------------------------------------------------------

    def read(self) -> np.ndarray:
        """The boxes of the program's current parameter values (exactly the coefficients of its box rows);
        returns which pairs' boxes moved since the last read."""
        values = self.program.linear.param_values
        upper = self._to_slots(-values[self._upper_group])                       # box_upper holds -(P^ + b)
        lower = self._to_slots(np.maximum(values[self._lower_group], 0.0))      # box_lower: P^ - b; p >= 0 anyway
        moved = ((upper != self.upper) | (lower != self.lower)).any(axis=1)
        self.lower, self.upper = lower, upper
        self.free = 1.0 - lower.sum(axis=1, keepdims=True)       # the mass left after the lower ends
        self.usable = box_usable(lower, upper)
        self.unusable = np.flatnonzero(~self.usable)
        return moved

    def centre(self, pairs: np.ndarray) -> np.ndarray:
        """The empirical kernels ``P^`` of ``pairs`` over their slots (a visited pair's ``P^`` lies in its box)."""
        counts = self._to_slots(self.program.entry_counts)[pairs] if not self.all_valid \
            else self.program.entry_counts.reshape(self.n_pairs, self.W)[pairs]
        return counts / np.maximum(1.0, counts.sum(axis=1))[:, None]

    def visited(self) -> np.ndarray:
        """Pairs with at least one observed transition."""
        return self.program.visits.ravel() > 0

    def _to_slots(self, entries: np.ndarray) -> np.ndarray:
        if self.all_valid:
            return entries.reshape(self.n_pairs, self.W).copy()
        out = np.zeros((self.n_pairs, self.W))
        out[self.valid] = entries
        return out

    def to_entries(self, slots: np.ndarray) -> np.ndarray:
        """Per-slot values (pairs, W) as the program's per-entry layout (the support's entries in order)."""
        return slots.ravel() if self.all_valid else slots[self.valid]

    def vertices(self, pairs: np.ndarray, orders: np.ndarray) -> np.ndarray:
        """The box vertex of each pair for its slot order (a row of -1: the pair's P^)."""
        ranked = orders[:, 0] >= 0
        if ranked.all():
            return box_vertices(orders, self.lower[pairs], self.upper[pairs])
        out = self.centre(pairs)
        if np.any(ranked):
            out[ranked] = box_vertices(orders[ranked], self.lower[pairs[ranked]], self.upper[pairs[ranked]])
        return out

    # -- columns --------------------------------------------------------------------------------------------------

    def column_entries(self, pairs: np.ndarray, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Triplets of the vertex columns ``(pair, v)`` over the global rows, columns numbered 0 .. k-1 (a
        vertex's own state appears twice, +1 and -v(s): :class:`ColumnMatrix` sums them)."""
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
        return ColumnMatrix(*self.column_entries(pairs, vertices), (self.n_global, pairs.size))

    def flow_coefficients(self, pairs: np.ndarray, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The flow rows of vertex columns ``(pair, v)`` and their coefficients, shape (k, W) each: ``-v(s')``, plus
        1 in the row of the pair's own state; row -1 where a slot has no flow row (an invalid slot, the last state).
        These are the only coefficients of a vertex column that depend on the data."""
        rows = self.flow_row[pairs]
        return rows, (rows == self.own_row[pairs][:, None]) - vertices

    def block_rho_coefficients(self, pairs: np.ndarray) -> np.ndarray:
        """The coefficients of each block's ρ in its own rows, shape (n, W + 1): ``-(1 - Σ l)`` (balance), then
        ``-(u - l)`` (caps)."""
        return np.hstack([-(1.0 - self.lower[pairs].sum(axis=1, keepdims=True)), self.lower[pairs] - self.upper[pairs]])

    def block_entries(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Triplets of each pair's block, ``n (W + 1)`` columns over the global rows and the blocks' own rows.

        Block b has the columns ``ρ, d_1 .. d_W`` (from column ``b (W + 1)``) and, below the global rows, its
        own rows ``balance, cap_1 .. cap_W`` (from row ``n_global + b (W + 1)``):
        ``Σ d - (1 - Σ l) ρ = 0`` and ``d_j - (u_j - l_j) ρ <= 0``; globally ρ is the vertex column of ``l`` and
        ``d_j`` adds ``-1`` to the flow row of slot j's successor.
        """
        n, W, width = pairs.size, self.W, self.W + 1
        first = width * np.arange(n)                            # each block's ρ column; its balance row below
        own = self.n_global + first
        rho_rows, rho_cols, rho_values = self.column_entries(pairs, self.lower[pairs])
        block, slot = np.divmod(np.arange(n * W), W)
        d = first[block] + 1 + slot
        flow = self.flow_row[pairs][block, slot]
        on_flow = flow >= 0
        cap = own[block] + 1 + slot
        parts = [
            (rho_rows, first[rho_cols], rho_values),                              # ρ: global rows
            (own, first, -(1.0 - self.lower[pairs].sum(axis=1))),                 # ρ: balance
            (cap, first[block], -(self.upper[pairs] - self.lower[pairs]).ravel()),  # ρ: caps
            (flow[on_flow], d[on_flow], -np.ones(int(on_flow.sum()))),           # d: flow rows
            (own[block], d, np.ones(d.size)),                                     # d: balance
            (cap, d, np.ones(d.size)),                                            # d: its cap
        ]
        return tuple(np.concatenate([part[i] for part in parts]) for i in range(3))  # type: ignore[return-value]

    def block_cost(self, pairs: np.ndarray) -> np.ndarray:
        cost = np.zeros((pairs.size, self.W + 1))
        cost[:, 0] = self.cost[pairs]
        return cost.ravel()

    # -- pricing --------------------------------------------------------------------------------------------------

    def price(self, duals: np.ndarray, phase: int) -> tuple[np.ndarray, np.ndarray]:
        """Every pair's best reduced cost ``c - y·a`` over its box under the global rows' duals ``y`` (``-inf`` for an
        unusable pair; phase 1 prices with cost 0), and the slot order that gives it: shape (W,), the same for
        every pair, on the dense support, else (pairs, W). :meth:`best_vertices` turns it into vertices."""
        S = self.S
        h = np.append(duals[1: S], 0.0)                      # the flow duals; the last state's row is left out
        # c - y·a = c - y(mass) - h(own state) - y(extra rows)·(its coefficients) + h·v
        constant = (self.cost if phase == 2 else 0.0) - duals[0] - h[self.own_state]
        if self.n_extra:
            constant -= self.extra_of_pair @ duals[S:]
        if self.shared_ranking:     # one order of the states for every pair
            order = np.argsort(-h, kind="stable").astype(np.int32)
            low, room, ranked_h = self.lower[:, order], self.upper[:, order], h[order]
        else:
            slot_h = np.where(self.valid, h[np.maximum(self.successor, 0)], 0.0)
            order = np.argsort(np.where(self.valid, -slot_h, np.inf), axis=1, kind="stable").astype(np.int32)
            rows = np.arange(self.n_pairs)[:, None]
            low, room, ranked_h = self.lower[rows, order], self.upper[rows, order], slot_h[rows, order]
        room -= low
        # the mass left after the lower ends, poured by decreasing h (as box_vertices does)
        poured = np.minimum(np.maximum(self.free - (np.cumsum(room, axis=1) - room), 0.0), room)
        poured += low
        reduced = constant + (poured @ ranked_h if self.shared_ranking else (poured * ranked_h).sum(axis=1))
        if self.unusable.size:
            reduced[self.unusable] = -np.inf
        return reduced, order

    def best_vertices(self, pairs: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The orders (k, W) and vertices of ``pairs`` for the ``order`` :meth:`price` returned."""
        orders = np.broadcast_to(order, (pairs.size, self.W)) if order.ndim == 1 else order[pairs]
        return orders, box_vertices(orders, self.lower[pairs], self.upper[pairs])

    # -- the whole master -----------------------------------------------------------------------------------------

    def master_program(self, pool_pairs: np.ndarray, pool_vertices: np.ndarray, block_pairs: np.ndarray,
                       row_lower: np.ndarray, row_upper: np.ndarray) -> MasterProgram:
        """The master with the fixed columns, the vertex columns ``(pool_pairs, pool_vertices)`` and a block for
        each of ``block_pairs``, in phase 2 (artificials held at 0); ``row_lower, row_upper``: the global rows'."""
        k, n_blocks, width = pool_pairs.size, block_pairs.size, self.W + 1
        pool = self.column_entries(pool_pairs, pool_vertices)
        blocks = self.block_entries(block_pairs)
        offsets = (0, self.n_fixed, self.n_fixed + k)
        parts = (self._fixed, pool, blocks)
        rows = np.concatenate([part[0] for part in parts])
        cols = np.concatenate([part[1] + offset for part, offset in zip(parts, offsets, strict=True)])
        values = np.concatenate([part[2] for part in parts])
        n_rows, n_cols = self.n_global + n_blocks * width, self.n_fixed + k + n_blocks * width
        col_lower, col_upper = np.zeros(n_cols), np.full(n_cols, np.inf)
        col_upper[: self.n_art] = 0.0
        if self.epigraph:
            col_lower[self.n_art] = -np.inf
        block_lower, block_upper = self.block_row_bounds(n_blocks)
        return MasterProgram(ColumnMatrix(rows, cols, values, (n_rows, n_cols)),
                             np.concatenate([self.fixed_cost, self.cost[pool_pairs], self.block_cost(block_pairs)]),
                             col_lower, col_upper, np.concatenate([row_lower, block_lower]),
                             np.concatenate([row_upper, block_upper]))

    def block_row_bounds(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of ``count`` blocks' own rows: balance ``= 0``, caps ``<= 0``."""
        lower = np.concatenate([[0.0], np.full(self.W, -np.inf)])
        return np.tile(lower, count), np.zeros(count * (self.W + 1))

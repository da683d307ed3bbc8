"""The column-generation master of UCRL-CMDP's box program, as arrays (no solver here).

The box program (docs/math.md §9) states ``p(s,a,·) = ρ(s,a)·q`` with ``q`` in the pair's box
``Q(s,a)`` (:mod:`.box_vertices`). Over points ``v`` of the boxes it is the Dantzig–Wolfe master of
:mod:`.column_generation` (its global rows, fixed and vertex columns: :class:`~.column_generation.Master`); what is
the box program's own is here:

* the boxes of the epoch's counts, read from the program's box rows (:meth:`BoxMaster.read`);
* pricing: a column's reduced cost under row duals ``y`` is ``c(s,a) - y·a``; over the vertices of a pair it is a
  constant plus ``h·v``, with ``h(s') = y(1 + s')`` for ``s' < S - 1`` and ``h(S-1) = 0``, so pricing is the
  closed form of :mod:`.box_vertices` for every pair at once;
* *pair blocks*: a block states a pair's whole ``ρ·Q(s,a)`` as ``p = ρ l + d`` with ``0 <= d <= ρ (u - l)`` (one
  *cap* row per slot) and ``Σ d = ρ (1 - Σ l)`` (the *balance* row), in ``W + 1`` columns and rows.

Columns are built as ``(row, column, value)`` triplets and assembled by
:class:`~.column_generation.ColumnMatrix` (numpy only).
"""

from __future__ import annotations

import numpy as np

from ...programs.lp import LPForm
from ...programs.optimistic import BoxOptimisticProgram
from .box_vertices import box_vertices, usable_from_sums
from .column_generation import Master

__all__ = ["BoxMaster", "SLOT_MAJOR_SUMS_BELOW"]

#: below this many slots a pair's sums over its slots are taken down the slot-major arrays (:meth:`BoxMaster.read`):
#: numpy's pairwise summation, which orders the additions differently, starts at 8 terms
SLOT_MAJOR_SUMS_BELOW = 8


class BoxMaster(Master):
    """The master of UCRL-CMDP's box program: the global rows and vertex columns of
    :class:`~.column_generation.Master`, and the current epoch's boxes (:meth:`read`), their pricing
    (:meth:`price`) and their pair blocks (:meth:`block_entries`).

    Per-pair arrays hold ``W`` slots (:mod:`.box_vertices`); a pair's slots past its own count are invalid
    (``l = u = 0``).

    Attributes
    ----------
    lower, upper : ndarray, shape (S·A, W)
        ``l = max(0, P^ - b)`` and ``u = P^ + b``, read from the program by :meth:`read`.
    room, free : ndarray, shape (S·A, W) and (S·A, 1)
        ``u - l``, and the mass ``1 - Σ l`` left after the lower ends: what pricing and the vertices pour.
    usable : ndarray of bool, shape (S·A,)
        Pairs whose box is not empty (the others can carry no mass).
    zeros : ndarray, shape (S·A, W)
        Zeros (read only), for clipping at 0 without a scalar's conversion and broadcast at each call.
    """

    program: BoxOptimisticProgram

    def __init__(self, program: BoxOptimisticProgram, form: LPForm):
        super().__init__(program, form)
        self.block_rows = self.block_cols = self.W + 1             # balance and W caps; ρ and W d's
        self.shared_ranking = program.support.is_dense                   # every pair's slots are the same states
        groups = program.linear.param_groups
        self._upper_group, self._lower_group = groups["box_upper"], groups["box_lower"]
        # box_upper's entries then box_lower's, one after the other, on every slot (the dense support): both read
        # through one (2, pairs, W) view
        upper_group, lower_group = self._upper_group, self._lower_group
        self._both_groups = (slice(upper_group.start, lower_group.stop)
                             if self.all_valid and upper_group.stop == lower_group.start else None)
        # lower, upper and room stored by slot, (3, W, pairs), and read as (pairs, W) views: pricing ranks the slots
        # by gathering rows and pours down the W rows in one vectorised pass each (the pour's (pairs, W) arrays have
        # always had this memory layout, so the products that end pricing are the same BLAS calls)
        self._box_t = np.zeros((3, self.W, self.n_pairs))
        self.lower, self.upper, self.room = (part.T for part in self._box_t)
        self._free = np.ones(self.n_pairs)
        self.free = self._free[:, None]
        # zeros of the two box shapes, read only: np.maximum against an array of the same shape skips the scalar's
        # conversion and broadcast (the same values)
        self.zeros = np.zeros((self.n_pairs, self.W))
        self._zeros_t = np.zeros((self.W, self.n_pairs))
        self.usable = np.zeros(self.n_pairs, dtype=bool)
        self.unusable = np.arange(self.n_pairs)
        # Fixed by the structure, kept rather than recomputed at every solve: the flow coefficients' rows
        # (flow_row >= 0) and where a pair's own state is among them (a vertex column's coefficient there is
        # 1 - v(s), elsewhere -v(s')).
        self.on_flow = self.flow_row >= 0
        self.own_slot = (self.flow_row == self.own_row[:, None]).astype(float)
        #: each pair's slots in the program's solution vector (ρ, then p over slots): ``n_pairs + s·W + j``
        self.solution_slot = self.n_pairs + np.arange(self.n_pairs * self.W).reshape(self.n_pairs, self.W)
        self._h = np.zeros(self.S)               # pricing's flow duals, written in place

    # -- the epoch's data -----------------------------------------------------------------------------------------

    def read(self) -> np.ndarray:
        """The boxes of the program's current parameter values (exactly the coefficients of its box rows);
        returns which pairs' boxes moved since the last read."""
        values = self.program.linear.param_values
        if self._both_groups is not None:
            raw = values[self._both_groups].reshape(2, self.n_pairs, self.W)
            upper = np.negative(raw[0])                                   # box_upper holds -(P^ + b)
            lower = np.maximum(raw[1], self.zeros)                       # box_lower: P^ - b; p >= 0 anyway
        else:
            upper = self._to_slots(-values[self._upper_group])
            lower = self._to_slots(np.maximum(values[self._lower_group], 0.0))
        box = np.empty((3, self.W, self.n_pairs))
        box[0], box[1] = lower.T, upper.T
        np.subtract(box[1], box[0], out=box[2])
        # moved: a pair any of whose 2·W ends changed (an OR down the rows of the slot-major arrays)
        moved = np.logical_or.reduce((box[:2] != self._box_t[:2]).reshape(2 * self.W, self.n_pairs), axis=0)
        lower_sum, upper_sum = self._row_sums(box[0], lower), self._row_sums(box[1], upper)
        self._box_t = box
        self.lower, self.upper, self.room = lower, upper, box[2].T
        self._free = np.subtract(1.0, lower_sum)                          # the mass left after the lower ends
        self.free = self._free[:, None]
        self.usable = usable_from_sums(lower_sum, upper_sum)
        self.unusable = (~self.usable).nonzero()[0]
        return moved

    def _row_sums(self, slot_major: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Each pair's sum over its slots, bit for bit ``np.add.reduce(rows, axis=1)``; ``slot_major`` is ``rows.T``
        stored C-ordered.

        Below :data:`SLOT_MAJOR_SUMS_BELOW` slots numpy sums a row left to right (its pairwise summation starts at 8
        terms), and so does a sum down the slot-major rows (one vectorised pass per slot, about half the cost of
        96 short row sums): the same additions in the same order. From there on, each row's own sum. (ufuncs' own
        reduce, what ndarray.sum calls, spares the Python wrapper's cost, most of the cost on arrays this small.)
        """
        if self.W < SLOT_MAJOR_SUMS_BELOW:
            return np.add.reduce(slot_major, axis=0)
        return np.add.reduce(rows, axis=1)

    def centre(self, pairs: np.ndarray) -> np.ndarray:
        """The empirical kernels ``P^`` of ``pairs`` over their slots (a visited pair's ``P^`` lies in its box)."""
        counts = self._to_slots(self.program.entry_counts)[pairs] if not self.all_valid \
            else self.program.entry_counts.reshape(self.n_pairs, self.W)[pairs]
        return counts / np.maximum(1.0, counts.sum(axis=1))[:, None]

    def visited(self) -> np.ndarray:
        """Pairs with at least one observed transition (the program's own mask: do not write to it)."""
        return self.program.visited_pairs()

    def _to_slots(self, entries: np.ndarray) -> np.ndarray:
        """Per-entry values as (pairs, W) slots; ``entries`` is a new array, which may be returned reshaped."""
        if self.all_valid:
            return entries.reshape(self.n_pairs, self.W)
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
            return self.ranked_vertices(pairs, orders)
        out = self.centre(pairs)
        if np.any(ranked):
            out[ranked] = self.ranked_vertices(pairs[ranked], orders[ranked])
        return out

    def ranked_vertices(self, pairs: np.ndarray, orders: np.ndarray) -> np.ndarray:
        """:meth:`vertices` where every order is a ranking (none is -1): :func:`~.box_vertices.box_vertices` of the
        boxes of ``pairs`` for the slot orders ``orders`` (k, W), by the same arithmetic, read from the current boxes
        by flat index (``u - l`` from ``room``, ``1 - Σ l`` from ``free``: the same sums). The warm start recomputes
        the vertices of the pool columns whose box moved at every solve."""
        at = orders * self.n_pairs + pairs[:, None]            # slot j of pair p in the slot-major arrays: j·pairs + p
        low, room = self._box_t[0].ravel()[at], self._box_t[2].ravel()[at]   # u - l, as box_vertices takes it
        before = np.add.accumulate(room, axis=1)
        before -= room                                       # the room of the slots ranked above
        poured = self._free[pairs][:, None] - before         # free's (pairs, 1) values, gathered 1-D
        np.maximum(poured, 0.0, out=poured)
        np.minimum(poured, room, out=poured)
        poured += low
        vertices = np.empty_like(poured)
        # each row's values at its slots, by flat index: row i's slot j is i·W + j
        vertices.reshape(-1)[orders + np.arange(0, pairs.size * self.W, self.W)[:, None]] = poured
        return vertices

    # -- columns --------------------------------------------------------------------------------------------------

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

    # -- pricing --------------------------------------------------------------------------------------------------

    def price(self, duals: np.ndarray, phase: int) -> tuple[np.ndarray, np.ndarray]:
        """Every pair's best reduced cost ``c - y·a`` over its box under the global rows' duals ``y`` (``-inf`` for an
        unusable pair; phase 1 prices with cost 0), and the slot order that gives it: shape (W,), the same for
        every pair, on the dense support, else (pairs, W). :meth:`best_vertices` turns it into vertices."""
        S, h = self.S, self._h
        h[: S - 1] = duals[1: S]                             # the flow duals; the last state's row is left out (0)
        # c - y·a = c - y(mass) - h(own state) - y(extra rows)·(its coefficients) + h·v
        constant = (self.cost if phase == 2 else 0.0) - duals[0]
        constant -= h[self.own_state]
        if self.n_extra:
            constant -= self.extra_of_pair @ duals[S:]
        if self.shared_ranking:     # one order of the states for every pair
            order = (-h).argsort(kind="stable")
            constant += self._pour_shared(order) @ h[order]
            order = order.astype(np.int32)
        else:
            slot_h = np.where(self.valid, h[np.maximum(self.successor, 0)], 0.0)
            order = np.argsort(np.where(self.valid, -slot_h, np.inf), axis=1, kind="stable").astype(np.int32)
            rows = np.arange(self.n_pairs)[:, None]
            low, room, ranked_h = self.lower[rows, order], self.room[rows, order], slot_h[rows, order]
            # the mass left after the lower ends, poured by decreasing h (as box_vertices does)
            poured = np.add.accumulate(room, axis=1)
            poured -= room
            np.subtract(self.free, poured, out=poured)
            np.maximum(poured, 0.0, out=poured)
            np.minimum(poured, room, out=poured)
            poured += low
            poured *= ranked_h
            constant += np.add.reduce(poured, axis=1)
        if self.unusable.size:
            constant[self.unusable] = -np.inf
        return constant, order

    def _pour_shared(self, order: np.ndarray) -> np.ndarray:
        """Every pair's best vertex for one slot order (as box_vertices pours it), in its order, shape (pairs, W).

        Poured slot-major: the rows of lower and room gathered by rank, the mass left after the lower ends
        poured down them in one vectorised pass each. The result is the transpose of a C-ordered (W, pairs)
        array: the memory layout the (pairs, W) pour has always had (a gather along the slots returns it), so the
        product that ends pricing is the same BLAS call on the same numbers."""
        box = self._box_t
        low, room = box[0].take(order, axis=0), box[2].take(order, axis=0)   # rows by rank (take: cheaper)
        poured = np.add.accumulate(room, axis=0)
        poured -= room                                       # the room of the slots ranked above
        np.subtract(self._free, poured, out=poured)
        np.maximum(poured, self._zeros_t, out=poured)
        np.minimum(poured, room, out=poured)
        poured += low
        return poured.T

    def best_vertices(self, pairs: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The orders (k, W) and vertices of ``pairs`` for the ``order`` :meth:`price` returned."""
        orders = np.broadcast_to(order, (pairs.size, self.W)) if order.ndim == 1 else order[pairs]
        return orders, box_vertices(orders, self.lower[pairs], self.upper[pairs])

    def block_row_bounds(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of ``count`` blocks' own rows: balance ``= 0``, caps ``<= 0``."""
        lower = np.concatenate([[0.0], np.full(self.W, -np.inf)])
        return np.tile(lower, count), np.zeros(count * (self.W + 1))

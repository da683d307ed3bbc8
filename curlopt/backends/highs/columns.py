"""The ``highs-columns`` backend: UC-CURL's optimistic program by column generation on HiGHS.

The optimistic program of docs/math.md §3 states the optimistic kernel through ``2·S²·A`` variables
(``p(s,a,s')`` and the deviations ``α``). For a pair (s,a) its rows say exactly that
``p(s,a,·) = ρ(s,a)·q`` for some ``q`` in

    ``Q(s,a) = {q in the simplex : ||q - P^(·|s,a)||_1 <= β(s,a)}``

(the rows are homogeneous in ρ; for an unvisited pair ``P^ = 0``, so ``Q`` is the whole simplex when
``β >= 1`` and empty otherwise). Writing ``p(s,a,·) = Σ_v x(s,a,v)·v`` over points ``v`` of ``Q(s,a)``
(Dantzig–Wolfe) gives an equivalent LP over the weights ``x >= 0``, solved by column generation as
:mod:`.column_generation` describes (the master's rows, phase 1, pair blocks, the warm start, which this backend
shares with ``highs-box-columns``). What is this backend's own (:class:`L1Master`):

* *pricing*: with the master's row duals, a column ``(s,a,v)`` has reduced cost ``k(s,a) + h·v``, where
  ``h(s')`` is the dual of flow row s' (0 for the dropped row) and ``k(s,a)`` does not depend on ``v``.
  Maximising ``h·v`` over ``Q(s,a)`` is UCRL2's inner step, in closed form (:func:`optimistic_kernels`):
  add ``β/2`` of mass to the state with the largest ``h`` and remove as much from the states with the
  smallest ``h``. One sort of ``h`` prices every pair at once;
* *pair blocks*: a pair's whole ``ρ(s,a)·Q(s,a)`` in ``2 W + 1`` columns and ``W + 2`` rows (typically 2–10
  blocks at (S, A) = (100, 10));
* *the warm start*: a generated column is remembered as ``(pair, ranking of the states)``: the vertex is the
  closed-form maximiser for that ranking, which is a valid point of ``Q(s,a)`` for *any* ``P^`` and β. When the
  counts or the time change, every kept column is recomputed from its ranking on the new data (so it stays
  feasible), blocks get the new ``P^`` and β, and the master is rebuilt with the previous basis (HiGHS repairs it
  if the new coefficients make it singular).

Pricing is exact, so when it stops the master's optimum is the optimum of the whole optimistic LP (up to the
solver's tolerances and ``pricing_tolerance``): **the same optimal value as the ``highs`` backend, not
necessarily the same optimal vertex** where the optimum has ties, so an agent run with this backend can
play other (equally optimistic) policies than one run with ``highs``, and its traces differ. An infeasible
program is reported ``infeasible`` by phase 1, and :meth:`CompiledProgram.solve` falls back as for every backend
(docs/math.md §4).

Sparse supports. A program built on a sparse support (:mod:`curlopt.programs.support`) has ``Q(s,a)`` on the
pair's allowed successors only. Every per-pair array then holds ``W`` *slots* (the most successors a pair has)
instead of S states: the empirical kernels, the vertices and the blocks' u and w. Pricing ranks the states by ``h``
once, as before, and orders each pair's successors by that ranking, so the closed-form step runs over the support
only; vertex columns are built from their nonzeros. On the dense support a slot is a state and nothing changes.

Results are full :class:`~curlopt.backends.results.SolveResult` objects in the program's own variable layout: ρ,
``p(s,a,s') = Σ_v x(s,a,v) v(s')`` and ``α = |p - P^ ρ|``, so that ``program.residuals(x)`` and the agents
work unchanged. A column-generation run that reaches ``max_rounds`` pricing rounds ends with status
``iteration_limit`` and a message saying so (no solution is returned).

Every other program (the occupancy program, UCRL-CMDP's box program, safe mode's programs, and any subclass
of the optimistic program) is handed to the ``highs`` backend, built with this backend's HiGHS options
(``DELEGATES``, :meth:`~curlopt.backends.base.Backend.delegate`); the results name this backend, and their
``solver`` says the program was delegated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ...errors import BackendError
from ...programs.blocks import Program
from ...programs.lp import LPForm
from ...programs.optimistic import OptimisticProgram
from ...utilities.library import Utility
from ..base import Backend, CompiledForm, Exactly, exactly
from ..form_table import affine_pieces_table
from ..options import INTEGER, NUMBER, Option, positive_integer, small_tolerance
from ..results import Status
from .backend import HIGHS_OPTIONS, HighsBackend, highs_options
from .column_generation import CENTRE, STATUS_MAP, CompiledColumnGeneration, Master

__all__ = ["ColumnsBackend", "CompiledColumns", "L1Master", "optimistic_kernels", "STATUS_MAP"]

#: the most pricing rounds (master solves) in one solve attempt, both phases together
DEFAULT_MAX_ROUNDS = 500
#: a column enters when its reduced cost exceeds this; the master's value is then within this (times the
#: total mass, 1) of the whole program's optimum
DEFAULT_PRICING_TOLERANCE = 1e-9
#: phase 1 calls the program infeasible when the artificial columns cannot be brought below this in sum
DEFAULT_FEASIBILITY_TOLERANCE = 1e-9
#: a column not basic in this many consecutive solves is dropped from the pool
DEFAULT_KEEP_SOLVES = 3


def optimistic_kernels(h: np.ndarray | None, p_hat: np.ndarray, beta: np.ndarray,
                       order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``argmax h·q`` over ``Q = {q in the simplex : ||q - P^||_1 <= β}``, for many rows at once (UCRL2's step).

    Parameters
    ----------
    h : ndarray, shape (S,), or None
        The linear function maximised (one for every row); ignored (and may be None) when ``order`` is given.
    p_hat : ndarray, shape (n, S)
        Each row a distribution (a visited pair's empirical kernel) or all zeros (an unvisited pair).
    beta : ndarray, shape (n,)
        The L1 radii, >= 0.
    order : ndarray of int, shape (S,) or (n, S), optional
        The states by decreasing ``h`` (default: a stable sort of ``-h``); each row's maximiser depends
        on ``h`` only through this ranking. On a sparse support the columns are a pair's slots (module doc):
        ``order`` (n, W) ranks each row's slots, its invalid slots (zero in ``p_hat``) last.

    Returns
    -------
    q : ndarray, shape (n, S)
        The maximisers (rows where ``Q`` is empty hold zeros).
    valid : ndarray of bool, shape (n,)
        False where ``Q`` is empty: a zero row with ``β < 1``.

    Notes
    -----
    For a distribution ``P^``: ``q = P^`` plus ``min(β/2, 1 - P^(b))`` at the best state b, that mass then
    removed from the other states in increasing order of ``h`` (each down to 0). An exchange argument shows it
    is optimal: moving mass from a state of lower ``h`` to one of higher ``h`` never lowers ``h·q``, and the
    L1 ball allows moving at most β/2. For a zero row, ``Q`` is the simplex if ``β >= 1`` (every q has
    ``||q||_1 = 1``), whose maximiser is the unit vector at b.
    """
    p_hat = np.asarray(p_hat, dtype=float)
    n, S = p_hat.shape
    beta = np.broadcast_to(np.asarray(beta, dtype=float), (n,))
    if order is None:
        if h is None:
            raise BackendError("optimistic_kernels needs h or order (the states by decreasing h); both are None.")
        order = np.argsort(-np.asarray(h, dtype=float), kind="stable")
    order = np.broadcast_to(np.asarray(order), (n, S))
    rows = np.arange(n)
    best = order[:, 0]
    visited = p_hat.sum(axis=1) > 0
    q = p_hat.copy()
    gain = np.clip(np.minimum(0.5 * beta, 1.0 - p_hat[rows, best]), 0.0, None)
    q[rows, best] += gain
    rest = order[:, :0:-1]                              # the other states, increasing h
    at = rows[:, None]
    mass = p_hat[at, rest]
    before = np.cumsum(mass, axis=1) - mass             # mass of the states below, taken first
    taken = np.clip(gain[:, None] - before, 0.0, mass)
    q[at, rest] = mass - taken
    unvisited = ~visited
    valid = visited | (beta >= 1.0)
    if np.any(unvisited):
        q[unvisited] = 0.0
        fill = unvisited & valid
        q[np.flatnonzero(fill), best[fill]] = 1.0
    return q, valid


class ColumnsBackend(Backend):
    """HiGHS with column generation for the optimistic program (module doc); plain HiGHS for the others.

    It matches the optimistic LP's optimal **value** (to the solver's tolerances and ``pricing_tolerance``),
    not necessarily its optimal vertex: where the optimum has ties it may return another optimal solution
    than the ``highs`` backend. ``auto`` chooses it for the optimistic program on kernels of 1,000 entries or more
    (:func:`curlopt.backends.registry.choose_backend`).

    Parameters
    ----------
    options : dict, optional
        HiGHS options, merged over the ``highs`` backend's defaults (quiet, feasibility tolerances 1e-9);
        used by the master LP and by the programs handed to the plain ``highs`` path.
    max_rounds : int, default 500
        The most master solves (pricing rounds) per solve attempt; reaching it gives status
        ``iteration_limit``.
    pricing_tolerance : float, default 1e-9
        A column enters the master when its reduced cost exceeds this.
    feasibility_tolerance : float, default 1e-9
        Phase 1 calls the program infeasible when the sum of the artificial columns stays above this.
    keep_solves : int, default 3
        A column not basic in this many consecutive solves leaves the pool.
    time_limit, verbose
        As for every backend (:class:`~curlopt.backends.base.Backend`): each master solve gets what is left of
        the limit (HiGHS's ``time_limit``), and the rounds stop once it is used up; ``output_flag``.
    """

    name: ClassVar[str] = "highs-columns"
    requires: ClassVar[tuple[str, ...]] = ("highspy",)
    extra: ClassVar[str] = ""  # highspy is a core dependency
    takes: ClassVar[str] = "linear and LP-representable utilities (max-min, max of linear, 1- and inf-norms)"
    #: not among ``auto``'s general candidates (its optimal vertex may differ from highs's): the registry's rule names
    #: it for the optimistic programs where it is measured faster (:func:`~curlopt.backends.registry.choose_backend`)
    auto_choice: ClassVar[bool] = False
    STATUS_MAP: ClassVar[dict[str, Status]] = STATUS_MAP
    #: forms become affine pieces (LPForm's rows); smooth nonlinear forms are refused
    FORMS = affine_pieces_table("highs-columns")
    OPTIONS: ClassVar[tuple[Option, ...]] = (
        HIGHS_OPTIONS,
        Option("max_rounds", INTEGER, DEFAULT_MAX_ROUNDS,
               "The most master solves (pricing rounds) per solve attempt; reaching it gives status iteration_limit.",
               "an integer >= 1", positive_integer, int),
        Option("pricing_tolerance", NUMBER, DEFAULT_PRICING_TOLERANCE,
               "A column enters the master when its reduced cost exceeds this.",
               "a number in (0, 1e-3]", small_tolerance, float),
        Option("feasibility_tolerance", NUMBER, DEFAULT_FEASIBILITY_TOLERANCE,
               "Phase 1 calls the program infeasible when the sum of the artificial columns stays above this.",
               "a number in (0, 1e-3]", small_tolerance, float),
        Option("keep_solves", INTEGER, DEFAULT_KEEP_SOLVES,
               "A column not basic in this many consecutive solves leaves the pool.",
               "an integer >= 1", positive_integer, int),
    )

    #: UC-CURL's optimistic program itself (a subclass may add rows the master would not know of; the class is
    #: defined below); every other program goes to the highs backend, with this backend's HiGHS options
    COMPILES: ClassVar[Mapping[type[Program], CompiledForm | Exactly]] = {
        OptimisticProgram: exactly(lambda backend, program: CompiledColumns(backend, program))}
    DELEGATES: ClassVar[tuple[type[Backend], ...]] = (HighsBackend,)

    options: dict[str, Any]
    given_highs_options: dict[str, Any]
    max_rounds: int
    pricing_tolerance: float
    feasibility_tolerance: float
    keep_solves: int

    def _configure(self) -> None:
        self.given_highs_options = dict(self.options or {})  # as given: handed to the highs backend it delegates to
        self.options = highs_options(self, f"the {self.name} backend")

    @classmethod
    def accepts(cls, utility: Utility) -> bool:
        return utility.is_lp_representable

    def delegate_options(self, delegate: type[Backend]) -> dict[str, Any]:
        """HiGHS's options as they were given (the highs backend merges and checks them again)."""
        return {"options": self.given_highs_options}


class L1Master(Master):
    """The master of UC-CURL's optimistic program: the global rows and vertex columns of
    :class:`~.column_generation.Master`, and the L1 balls ``Q(s,a)`` of the program's current counts and time
    (:meth:`read`), their pricing (:meth:`price`) and their pair blocks (:meth:`block_entries`).

    A *pair block* states ``ρ(s,a)·Q(s,a)`` whole, as the program does but more compactly:
    ``p = ρ P^ + u - w`` with ``u, w >= 0``, ``Σ u - Σ w = ρ (1 - Σ P^)`` (balance), ``Σ u <= r ρ``
    (radius: ``r = β/2``, or 1 for an unvisited pair, whose ``Q`` is then the simplex) and ``w <= ρ P^``
    (caps): the columns ``ρ, u (W), w (W)`` and the rows ``balance, radius, caps (W)``.

    Attributes
    ----------
    p_hat : ndarray, shape (n_pairs, W)
        The empirical kernels over slots (zeros for an unvisited pair).
    beta : ndarray, shape (n_pairs,)
        The L1 radii β.
    visited, usable : ndarray of bool, shape (n_pairs,)
        Pairs with counts, and pairs whose ``Q`` is not empty.
    """

    program: OptimisticProgram

    def __init__(self, program: OptimisticProgram, form: LPForm):
        super().__init__(program, form)
        S, n = self.S, self.n_pairs
        self.block_rows = self.W + 2                          # balance, radius, W caps
        self.block_cols = 2 * self.W + 1                      # ρ, u (W), w (W)
        # The part of a pair's column that does not depend on its kernel: mass 1, +1 in the flow row of its
        # own state (Σ_a ρ(s,a)), and ρ(s,a)'s coefficients in the extra rows; as (pairs, global rows).
        base_flow = sp.csr_matrix((np.ones(n), (self.own_state, np.arange(n))), shape=(S, n))
        base = sp.vstack([sp.csr_matrix(np.ones((1, n))), base_flow[: S - 1], self.extra_rows[:, self.rho_columns]])
        self._base_t = sp.csr_matrix(base.tocsr().T)
        self.p_hat, self.beta = np.zeros((n, self.W)), np.zeros(n)
        self.visited = self.usable = np.zeros(n, dtype=bool)

    def read(self) -> None:
        """P^ and β of the program's current counts and time."""
        program = self.program
        if self.sparse:
            counts = np.zeros((self.n_pairs, self.W))
            counts[self.valid] = program.entry_counts
        else:
            counts = program.counts.reshape(self.n_pairs, self.S)
        visits = counts.sum(axis=1)
        self.p_hat = counts / np.maximum(1.0, visits)[:, None]
        self.beta = program.radius.ravel()
        self.visited = visits > 0
        self.usable = self.visited | (self.beta >= 1.0)

    def vertices(self, pairs: np.ndarray, ranks: np.ndarray, rankings: list[np.ndarray]) -> np.ndarray:
        """The vertex of each ``(pair, ranking id)`` on the current data: the maximiser for ``rankings[id]``, or
        P^ itself for :data:`~.column_generation.CENTRE`."""
        out = self.p_hat[pairs].copy()
        ranked = ranks != CENTRE
        if np.any(ranked):
            if self.sparse:
                orders = self.slot_order(pairs[ranked], np.stack(rankings), ranks[ranked])
            else:
                orders = np.stack(rankings)[ranks[ranked]]
            q, _ = optimistic_kernels(None, self.p_hat[pairs[ranked]], self.beta[pairs[ranked]], order=orders)
            out[ranked] = q
        return out

    def slot_order(self, pairs: np.ndarray, rankings: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Each pair's slots from the highest to the lowest ``h`` (its invalid slots last), on a sparse support.

        ``rankings`` (m, S) are states by decreasing ``h`` (stable sorts, so ties go to the lower state) and
        ``ids`` (k,) picks one for each pair: a pair's slots follow its successors' places in that ranking,
        which breaks ties as the ranking does.
        """
        S = self.S
        place = np.empty_like(rankings)
        np.put_along_axis(place, rankings, np.broadcast_to(np.arange(S), rankings.shape), axis=1)
        succ = self.successor[pairs]
        keys = np.where(self.valid[pairs], place[ids[:, None], np.maximum(succ, 0)], S)
        return np.argsort(keys, axis=1, kind="stable")

    def price(self, duals: np.ndarray, phase: int) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Every pair's best reduced cost over its ``Q`` (``-inf`` where ``Q`` is empty), and (every pair's best
        vertex, the states by decreasing ``h``)."""
        S = self.S
        h = np.zeros(S)
        # the flow row of s' holds -v(s'); its dual enters the reduced cost c - y·a with a plus sign
        h[: S - 1] = duals[1:S]
        order = np.argsort(-h, kind="stable")
        constant = -(self._base_t @ duals)
        if phase == 2:
            constant = constant + self.cost
        if self.sparse:  # each pair ranks its own successors (slots) by the same ranking of the states
            slot_order = self.slot_order(np.arange(self.n_pairs), order[None, :], np.zeros(self.n_pairs, np.int64))
            vertices, _ = optimistic_kernels(None, self.p_hat, self.beta, order=slot_order)
            reduced = constant + (vertices * h[np.maximum(self.successor, 0)]).sum(axis=1)  # invalid slots hold 0
        else:
            vertices, _ = optimistic_kernels(h, self.p_hat, self.beta, order=order)
            reduced = constant + vertices @ h
        reduced[~self.usable] = -np.inf
        return reduced, (vertices, order)

    def block_entries(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Triplets of each pair's block (class doc): block b has the columns ``ρ, u_1 .. u_W, w_1 .. w_W`` (from
        column ``b (2W + 1)``) and the rows ``balance, radius, cap_1 .. cap_W`` (from row ``n_global + b (W + 2)``).
        Globally ρ is the vertex column of ``P^``, and ``u_j``, ``w_j`` add ``-1``, ``+1`` to the flow row of slot j's
        successor; an invalid slot's u and w have no entry at all (they carry nothing)."""
        n, W = pairs.size, self.W
        first = self.block_cols * np.arange(n)                 # each block's ρ column
        own = self.n_global + self.block_rows * np.arange(n)   # each block's balance row; its radius row below
        p_hat, visited = self.p_hat[pairs], self.visited[pairs]
        rho_rows, rho_cols, rho_values = self.column_entries(pairs, p_hat)
        block, slot = np.divmod(np.arange(n * W), W)
        valid = self.valid[pairs][block, slot]
        u = first[block] + 1 + slot
        w = u + W
        flow = self.flow_row[pairs][block, slot]
        on_flow = flow >= 0
        cap = own[block] + 2 + slot
        ones = np.ones(int(valid.sum()))
        flow_ones = np.ones(int(on_flow.sum()))
        parts = [
            (rho_rows, first[rho_cols], rho_values),                                  # ρ: global rows
            (own, first, np.where(visited, 0.0, -1.0)),                               # ρ: balance, -(1 - ΣP^)
            (own + 1, first, -np.where(visited, 0.5 * self.beta[pairs], 1.0)),        # ρ: radius, -r
            (cap, first[block], -p_hat.ravel()),                                      # ρ: caps, -P^
            (flow[on_flow], u[on_flow], -flow_ones),                                  # u: flow rows
            (flow[on_flow], w[on_flow], flow_ones),                                   # w: flow rows
            (own[block][valid], u[valid], ones),                                      # u: balance
            (own[block][valid], w[valid], -ones),                                     # w: balance
            (own[block][valid] + 1, u[valid], ones),                                  # u: radius
            (cap[valid], w[valid], ones),                                             # w: its cap
        ]
        return tuple(np.concatenate([part[i] for part in parts]) for i in range(3))  # type: ignore[return-value]

    def block_row_bounds(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of ``count`` blocks' rows: balance ``= 0``, radius and caps ``<= 0``."""
        lower = np.concatenate([[0.0], np.full(self.W + 1, -np.inf)])
        return np.tile(lower, count), np.zeros(count * self.block_rows)


class CompiledColumns(CompiledColumnGeneration):
    """UC-CURL's optimistic program as a column-generation master on one HiGHS object (:mod:`.column_generation`,
    with the L1 balls of :class:`L1Master`).

    A pool column is remembered by its pair and the ranking of the states it was priced with (an id in
    ``_rankings``, or :data:`~.column_generation.CENTRE` for P^). Each epoch's data (new counts or time) rebuild
    the master: the kept columns recomputed from their rankings, the blocks on the new P^ and β, the last basis.
    What the last attempt took (``last_rounds``, ``last_gap``, ...) is read as for every column-generation master.
    """

    MASTER = L1Master
    master: L1Master

    def _reset(self) -> None:
        super()._reset()
        self._pool_ranking = np.zeros(0, dtype=np.int64)    # an id in _rankings, or CENTRE
        self._rankings: list[np.ndarray] = []               # states by decreasing h, of the rounds that added columns

    def _read_data(self) -> None:
        """P^ and β of the program's current counts and time; the pool and blocks to keep, on the new data (the
        master is rebuilt at the next attempt)."""
        master = self.master
        master.read()
        # Blocks: kept while their pair carried mass in one of the last BLOCK_KEEP_SOLVES solves.
        keep_block = master.usable[self._block_pair] & ((self._solves - self._block_seen) <= self.BLOCK_KEEP_SOLVES)
        has_block = np.zeros(master.n_pairs, dtype=bool)
        has_block[self._block_pair[keep_block]] = True
        # Vertex columns: kept while basic in one of the last keep_solves solves, if their pair has no block
        # (a block holds every point of Q) and they still make sense on the new data.
        pairs = self._pool_pair
        keep = master.usable[pairs] & ~has_block[pairs] & ((self._pool_ranking != CENTRE) | master.visited[pairs])
        keep &= (self._solves - self._pool_seen) <= self.backend.keep_solves
        # Seed: the empirical kernel of every visited pair with neither a column nor a block.
        covered = has_block.copy()
        covered[pairs[keep]] = True
        seed = np.flatnonzero(master.visited & ~covered)
        self._keep(keep, keep_block, seed, master.p_hat[seed])
        self._pool_vertex = master.vertices(self._pool_pair, self._pool_ranking, self._rankings)
        self._drop_unused_rankings()
        self._synced = False

    def _drop_unused_rankings(self) -> None:
        if not self._rankings:
            return
        used = np.unique(self._pool_ranking[self._pool_ranking != CENTRE])
        if used.size == len(self._rankings):
            return
        renumber = np.full(len(self._rankings), -2, dtype=np.int64)
        renumber[used] = np.arange(used.size)
        self._rankings = [self._rankings[i] for i in used]
        ranked = self._pool_ranking != CENTRE
        self._pool_ranking[ranked] = renumber[self._pool_ranking[ranked]]

    def _new_vertices(self, pairs: np.ndarray, pricing: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The vertices the last pricing found for ``pairs``, remembered by that pricing's ranking."""
        vertices, order = pricing
        self._rankings.append(order.astype(np.int32))
        return np.full(pairs.size, len(self._rankings) - 1), vertices[pairs]

    def _program_solution(self) -> np.ndarray:
        """The master's solution in the program's layout: ρ, ``p = Σ_v x v`` (plus ``ρ P^ + u - w`` for the
        blocks) and ``α = |p - P^ ρ|`` (on a sparse support, p and α at the support's entries)."""
        master = self.master
        W = master.W
        values = np.clip(self._solution[0], 0.0, None)
        weights = values[self._pool_index]
        rho = np.bincount(self._pool_pair, weights=weights, minlength=master.n_pairs).astype(float)  # int if empty
        mix = sp.csr_matrix((weights, (self._pool_pair, np.arange(weights.size))), shape=(master.n_pairs, weights.size))
        p = np.asarray(mix @ self._pool_vertex)
        if self._block_pair.size:
            block = values[self._block_index[:, None] + np.arange(master.block_cols)[None, :]]
            rho_b, u, w = block[:, 0], block[:, 1: W + 1], block[:, W + 1:]
            rho[self._block_pair] += rho_b
            p[self._block_pair] += rho_b[:, None] * master.p_hat[self._block_pair] + u - w
        p = np.clip(p, 0.0, None)
        alpha = np.abs(p - master.p_hat * rho[:, None])
        if master.sparse:  # slots to entries: the valid slots, row by row, are the support's entries in order
            return np.concatenate([rho, p[master.valid], alpha[master.valid]])
        return np.concatenate([rho, p.ravel(), alpha.ravel()])

"""The ``highs-columns`` backend: UC-CURL's optimistic program by column generation on HiGHS.

The optimistic program of docs/math.md §3 states the optimistic kernel through ``2·S²·A`` variables
(``p(s,a,s')`` and the deviations ``α``). For a pair (s,a) its rows say exactly that
``p(s,a,·) = ρ(s,a)·q`` for some ``q`` in

    ``Q(s,a) = {q in the simplex : ||q - P^(·|s,a)||_1 <= β(s,a)}``

(the rows are homogeneous in ρ; for an unvisited pair ``P^ = 0``, so ``Q`` is the whole simplex when
``β >= 1`` and empty otherwise). Writing ``p(s,a,·) = Σ_v x(s,a,v)·v`` over points ``v`` of ``Q(s,a)``
(Dantzig–Wolfe) gives an equivalent LP over the weights ``x >= 0``, with ``ρ(s,a) = Σ_v x(s,a,v)``:

* the *master*: the total-mass row, the flow rows ``Σ_a ρ(s',a) = Σ_{s,a,v} x(s,a,v) v(s')`` (the last
  one dropped, as in the program), and the rows of the objective's epigraph and of the g constraints exactly
  as :class:`~curlopt.programs.lp.LPForm` states them on ρ, over the columns generated so far;
* *pricing*: with the master's row duals, a column ``(s,a,v)`` has reduced cost ``k(s,a) + h·v``, where
  ``h(s') `` is the dual of flow row s' (0 for the dropped row) and ``k(s,a)`` does not depend on ``v``.
  Maximising ``h·v`` over ``Q(s,a)`` is UCRL2's inner step, in closed form (:func:`optimistic_kernels`):
  add ``β/2`` of mass to the state with the largest ``h`` and remove as much from the states with the
  smallest ``h``. One sort of ``h`` prices every pair at once.

Columns are added while some pair has a column of reduced cost above ``pricing_tolerance``. Pricing is
exact, so when it stops the master's optimum is the optimum of the whole optimistic LP (up to the
solver's tolerances and ``pricing_tolerance``): **the same optimal value as the ``highs`` backend, not
necessarily the same optimal vertex** where the optimum has ties, so an agent run with this backend can
play other (equally optimistic) policies than one run with ``highs``, and its traces differ. (With total mass
1, the largest reduced cost also bounds the gap: the optimum is at most the master's value plus it; see
:attr:`CompiledColumns.last_gap`.)

Degenerate masters. Where the optimum spreads a pair's mass over several next states, their duals tie and
each new vertex enters the basis at 0: the duals move by one degenerate pivot per round (hundreds of rounds
at (100,10), measured). Such a pair gets a *pair block* instead (:class:`CompiledColumns`): its whole
``ρ(s,a)·Q(s,a)`` in ``2 S + 1`` columns and ``S + 2`` rows, after which it needs no pricing. The few blocks
(typically 2–10 at (100,10)) keep the master exact and small.

Feasibility. The master starts from the columns it kept (below); when they cannot satisfy its rows, a
phase 1 (artificial columns on the mass, flow and g rows, their sum minimised) generates columns until the
rows hold, or proves that no point of the whole program does (sum of artificials above
``feasibility_tolerance`` with no improving column left): the program is then reported ``infeasible``, and
:meth:`CompiledProgram.solve` falls back as for every backend (docs/math.md §4).

Warm start across epochs. A generated column is remembered as ``(pair, ranking of the states)``: the
vertex is the closed-form maximiser for that ranking, which is a valid point of ``Q(s,a)`` for *any*
``P^`` and β. When the counts or the time change, every kept column is recomputed from its ranking on the
new data (so it stays feasible), blocks get the new ``P^`` and β, and the master is rebuilt with the
previous basis (HiGHS repairs it if the new coefficients make it singular). A column is dropped once it has
not been basic for ``keep_solves`` solves, a block once its pair has carried no mass for
:attr:`CompiledColumns.BLOCK_KEEP_SOLVES` solves; the empirical kernel ``P^(·|s,a)`` itself (a point of
``Q`` for a visited pair) seeds the pool. Bases and solutions are read and written through HiGHS's C API
(as the ``highs`` backend reads solutions), which only saves time.

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
of the optimistic program) is handed to the plain ``highs`` path unchanged (:class:`CompiledHighs`, with
this backend's options); the results name this backend.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ...errors import BackendError
from ...programs.blocks import Program
from ...programs.lp import LPForm
from ...programs.optimistic import OptimisticProgram
from ...programs.support import Support
from ...utilities.library import Utility
from ..base import Backend, CompiledProgram, RawSolution
from ..form_table import affine_pieces_table
from ..options import INTEGER, NUMBER, Option, positive_integer
from ..results import Status
from .backend import HIGHS_OPTIONS, CompiledHighs, check_representable, highs_options, new_highs
from .backend import STATUS_MAP as HIGHS_STATUS_MAP
from .solution import SolutionReader

if TYPE_CHECKING:  # imported where a solver is made, so that importing the backend stays cheap
    import highspy

__all__ = ["ColumnsBackend", "CompiledColumns", "optimistic_kernels", "STATUS_MAP"]

#: HiGHS's model status names -> ours (those of the ``highs`` backend); pricing adds ``iteration_limit``
STATUS_MAP: dict[str, Status] = dict(HIGHS_STATUS_MAP)

#: the most pricing rounds (master solves) in one solve attempt, both phases together
DEFAULT_MAX_ROUNDS = 500
#: a column enters when its reduced cost exceeds this; the master's value is then within this (times the
#: total mass, 1) of the whole program's optimum
DEFAULT_PRICING_TOLERANCE = 1e-9
#: phase 1 calls the program infeasible when the artificial columns cannot be brought below this in sum
DEFAULT_FEASIBILITY_TOLERANCE = 1e-9
#: a column not basic in this many consecutive solves is dropped from the pool
DEFAULT_KEEP_SOLVES = 3
#: the ranking id of the empirical-kernel column
CENTRE = -1


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


def _small_tolerance(value: Any) -> str | None:
    return None if math.isfinite(float(value)) and 0 < float(value) <= 1e-3 else "it is outside (0, 1e-3]"


class ColumnsBackend(Backend):
    """HiGHS with column generation for the optimistic program (module doc); plain HiGHS for the others.

    It matches the optimistic LP's optimal **value** (to the solver's tolerances and ``pricing_tolerance``),
    not necessarily its optimal vertex: where the optimum has ties it may return another optimal solution
    than the ``highs`` backend. ``auto`` never chooses it.

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
    #: ``auto`` never chooses this backend (its optimal vertex may differ from highs's)
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
               "a number in (0, 1e-3]", _small_tolerance, float),
        Option("feasibility_tolerance", NUMBER, DEFAULT_FEASIBILITY_TOLERANCE,
               "Phase 1 calls the program infeasible when the sum of the artificial columns stays above this.",
               "a number in (0, 1e-3]", _small_tolerance, float),
        Option("keep_solves", INTEGER, DEFAULT_KEEP_SOLVES,
               "A column not basic in this many consecutive solves leaves the pool.",
               "an integer >= 1", positive_integer, int),
    )

    options: dict[str, Any]
    max_rounds: int
    pricing_tolerance: float
    feasibility_tolerance: float
    keep_solves: int

    def _configure(self) -> None:
        self.options = highs_options(self, "the highs-columns backend")

    @classmethod
    def accepts(cls, utility: Utility) -> bool:
        return utility.is_lp_representable

    def _compile(self, program: Program) -> CompiledProgram:
        # Exactly the optimistic program: a subclass may add rows the master would not know of.
        if type(program) is OptimisticProgram:
            return CompiledColumns(self, program)
        return CompiledHighs(self, program)


class _Columns:
    """Columns in compressed form: each column's number of entries, then all row indices and values in order."""

    def __init__(self, counts: np.ndarray, indices: np.ndarray, data: np.ndarray):
        self.counts, self.indices, self.data = np.asarray(counts, dtype=np.int64), indices, data

    @classmethod
    def from_dense(cls, dense: np.ndarray) -> _Columns:
        """One column per row of ``dense`` (its nonzeros, by increasing row index)."""
        mask = dense != 0.0
        _, rows = np.nonzero(mask)
        return cls(mask.sum(axis=1), rows.astype(np.int32), dense[mask])

    @property
    def size(self) -> int:
        return int(self.counts.size)

    @staticmethod
    def join(parts: list[_Columns]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """HiGHS's column-wise arrays (start, index, value) of ``parts`` one after the other."""
        counts = np.concatenate([part.counts for part in parts])
        start = np.zeros(counts.size, dtype=np.int32)
        np.cumsum(counts[:-1], out=start[1:])
        return (start, np.concatenate([part.indices for part in parts]).astype(np.int32),
                np.concatenate([part.data for part in parts]))


class _SolverAccess:
    """A master's solution and basis as numpy arrays, through :class:`~curlopt.backends.highs.solution.SolutionReader`
    (HiGHS's C API on the same solver object).

    highspy returns them as Python lists of floats and of enum members; at (S, A) = (100, 10) converting the
    basis both ways cost more than HiGHS's own re-solve (measured). Where the C API cannot be reached, or HiGHS
    uses 64-bit integers, the lists are used: the same values, only slower.
    """

    def __init__(self, highs: highspy.Highs) -> None:
        self.highs = highs
        reader = SolutionReader.create(highs)
        self._api = reader if reader is not None and reader.has_int32_basis() else None

    def solution(self) -> tuple[np.ndarray, np.ndarray]:
        """Column values and row duals of the current solution."""
        if self._api is None:
            solution = self.highs.getSolution()
            return np.asarray(solution.col_value, dtype=float), np.asarray(solution.row_dual, dtype=float)
        return self._api.col_values_and_row_duals(self.highs.getNumRow())

    def basis(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Column and row statuses (``HighsBasisStatus`` values), or None without a valid basis."""
        if self.highs.getInfo().basis_validity != 1:
            return None
        if self._api is None:
            basis = self.highs.getBasis()
            return (np.array([int(s) for s in basis.col_status], dtype=np.int32),
                    np.array([int(s) for s in basis.row_status], dtype=np.int32))
        cols = np.empty(self.highs.getNumCol(), dtype=np.int32)
        rows = np.empty(self.highs.getNumRow(), dtype=np.int32)
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


class CompiledColumns(CompiledProgram):
    """The optimistic program as a column-generation master on one HiGHS object (see the module doc).

    Master rows: 0 the total mass, 1..S-1 the flow rows of states 0..S-2, the epigraph and g rows of
    :class:`~curlopt.programs.lp.LPForm` (together the *global* rows), then ``S + 2`` rows per pair block. Master
    columns: the artificial columns (phase 1) and the epigraph column t when the objective has several pieces
    (the *fixed* columns), then, in the order they were added, vertex columns (the *pool*) and ``2 S + 1``
    columns per pair block.

    A *pair block* states ``ρ(s,a)·Q(s,a)`` whole, as the program does but more compactly:
    ``p = ρ P^ + u - w`` with ``u, w >= 0``, ``Σ u - Σ w = ρ (1 - Σ P^)`` (balance), ``Σ u <= r ρ``
    (radius: ``r = β/2``, or 1 for an unvisited pair, whose ``Q`` is then the simplex) and ``w <= ρ P^``
    (caps). A pair gets one when it has priced positive in :attr:`BLOCK_AFTER` rounds of one attempt while it
    carries mass in the master (:attr:`BLOCK_AFTER_IDLE` rounds if it carries none), at most
    :attr:`BLOCKS_PER_ROUND` per round: where the optimum spreads a pair's mass over states whose duals tie,
    vertex columns alone make the master take one degenerate pivot per round, while the block holds every
    point of ``Q(s,a)`` at once. A block's reduced costs are then nonpositive by the master's own optimality,
    so a pair with a block is not priced.

    Attributes
    ----------
    last_rounds : int
        Master solves (pricing rounds) of the last attempt.
    last_columns : int
        Vertex columns in the pool after the last attempt.
    last_blocks : int
        Pair blocks in the master after the last attempt.
    last_phase1 : bool
        Whether the last attempt needed phase 1.
    last_gap : float
        The largest reduced cost (>= 0) at the end of the last attempt's last phase. After phase 2 the whole
        program's optimum is at most the master's value plus this (total mass 1): it bounds how far below
        the optimum the result can be.
    last_solver_time : float
        HiGHS's own run time over the last attempt's master solves.
    """

    #: HiGHS's ``simplex_strategy`` for the master unless the options set one: 4, the primal simplex
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

    backend: ColumnsBackend
    program: OptimisticProgram

    def __init__(self, backend: ColumnsBackend, program: OptimisticProgram) -> None:
        super().__init__(backend, program)
        import highspy

        self._highspy = highspy
        self._basic = int(highspy.HighsBasisStatus.kBasic)
        self._lower = int(highspy.HighsBasisStatus.kLower)
        self.form = form = LPForm(program)
        check_representable(form)
        model = program.model
        S, A = model.n_states, model.n_actions
        self.S, self.n_pairs = S, S * A
        self._slots(program.support)
        lin = program.linear
        rho = program.blocks["occupancy"].indices().ravel()
        n = program.n_vars
        extra = slice(lin.n_rows, form.n_rows)               # epigraph rows, then g rows (LPForm's order)
        self._n_extra = form.n_rows - lin.n_rows
        self._epigraph = form.n_cols > n
        self.n_global = S + self._n_extra                     # mass, S - 1 flow rows, extra rows
        self.block_rows = self.W + 2                          # balance, radius, W caps
        self.block_cols = 2 * self.W + 1                      # ρ, u (W), w (W)
        # The part of a pair's column that does not depend on its kernel: mass 1, +1 in the flow row of its
        # own state (Σ_a ρ(s,a)), and ρ(s,a)'s coefficients in the extra rows.
        own_state = np.repeat(np.arange(S), A)
        base_flow = sp.csr_matrix((np.ones(self.n_pairs), (own_state, np.arange(self.n_pairs))),
                                  shape=(S, self.n_pairs))
        extra_block = form.fixed[extra][:, rho]
        self._base = sp.vstack([sp.csr_matrix(np.ones((1, self.n_pairs))), base_flow[: S - 1], extra_block]).tocsr()
        self._base_t = sp.csr_matrix(self._base.T)            # (pairs, global rows)
        self._extra_dense = np.asarray(extra_block.T.toarray())  # (pairs, extra rows)
        self._own_state = own_state
        self._cost = np.asarray(form.cost[rho], dtype=float)
        self._extra_lower = form.row_lower[extra]
        self._extra_upper = form.row_upper[extra]
        self._g_rows = (S + np.arange(form.constraint_rows.start, form.constraint_rows.stop) - lin.n_rows).astype(np.int32)
        self._build_fixed_columns(form, n, extra)
        self._build_block_template()
        self._reset_pool()

    def _slots(self, support: Support) -> None:
        """Each pair's successors as ``W`` slots: slot j of a pair is its j-th allowed successor.

        On the dense support ``W = S`` and slot j is state j (every array keeps the layout it had: a pair's
        kernel as a row of S values); on a sparse one ``W`` is the most successors a pair has, and the slots
        past a pair's own count are *invalid* (successor -1, never carrying mass). Kernels, vertices and
        blocks are stated over slots, so a pair costs W values, not S.
        """
        self._sparse = not support.is_dense
        sizes = support.row_counts
        self.W = int(sizes.max()) if self._sparse else self.S
        slot = np.arange(self.W)
        self._valid = slot[None, :] < sizes[:, None]                       # (pairs, W)
        self._succ = np.full((self.n_pairs, self.W), -1, dtype=np.int64)
        self._succ[self._valid] = support.successors                        # CSR order: row by row
        self._support = support

    def _build_fixed_columns(self, form: LPForm, n: int, extra: slice) -> None:
        """The columns that do not change: artificials (phase 1), then the epigraph variable t when f has pieces."""
        S = self.S
        # Fixed columns: artificials +1 and -1 on every equality row (mass, flow), -1 on every g row; then t.
        eq = np.arange(S)
        art_rows = np.concatenate([eq, eq, self._g_rows])
        art_vals = np.concatenate([np.ones(S), -np.ones(S), -np.ones(self._g_rows.size)])
        self._n_art = art_rows.size
        rows, cols, vals = [art_rows], [np.arange(self._n_art)], [art_vals]
        self._fixed_cost = np.zeros(self._n_art)
        self._fixed_lower = np.zeros(self._n_art)
        self._fixed_upper = np.zeros(self._n_art)             # phase 2: artificials held at 0
        if self._epigraph:
            t_column = form.fixed[extra][:, n].tocoo()
            rows.append(S + t_column.row)
            cols.append(np.full(t_column.nnz, self._n_art))
            vals.append(t_column.data)
            self._fixed_cost = np.append(self._fixed_cost, 1.0)
            self._fixed_lower = np.append(self._fixed_lower, -np.inf)
            self._fixed_upper = np.append(self._fixed_upper, np.inf)
        self._n_fixed = self._n_art + (1 if self._epigraph else 0)
        fixed = sp.csr_matrix((np.concatenate(vals), (np.concatenate(cols), np.concatenate(rows))),
                              shape=(self._n_fixed, self.n_global))
        fixed.sort_indices()
        self._fixed_columns = _Columns(np.diff(fixed.indptr), fixed.indices.astype(np.int32), fixed.data)

    def _build_block_template(self) -> None:
        """A pair block's u and w columns, which do not depend on the data (on a sparse support, their flow rows
        depend on the pair: :meth:`_blocks` adds them)."""
        S, W = self.S, self.W
        # over (global rows, balance, radius, caps)
        template = np.zeros((self.block_cols, self.n_global + self.block_rows))
        slots = np.arange(W)
        if not self._sparse:
            flow = slots[slots < S - 1]
            template[1 + flow, 1 + flow] = -1.0               # flow rows: p = ρP^ + u - w enters with -1
            template[1 + W + flow, 1 + flow] = 1.0
        template[1 + slots, self.n_global] = 1.0              # balance: Σu - Σw
        template[1 + W + slots, self.n_global] = -1.0
        template[1 + slots, self.n_global + 1] = 1.0          # radius: Σu
        template[1 + W + slots, self.n_global + 2 + slots] = 1.0  # caps: w(s')
        self._block_template = template

    def _reset_pool(self) -> None:
        """An empty pool of vertex columns and pair blocks, and no solve yet."""
        # the pool of vertex columns: pair, ranking id (CENTRE for P^), vertex, last solve it was basic in
        self._pool_pair = np.zeros(0, dtype=np.int64)
        self._pool_rank = np.zeros(0, dtype=np.int64)
        self._pool_vertex = np.zeros((0, self.W))
        self._pool_seen = np.zeros(0, dtype=np.int64)
        self._pool_index = np.zeros(0, dtype=np.int64)        # HiGHS column of each pool column
        self._rankings: list[np.ndarray] = []
        # pair blocks: pair, last solve its ρ was positive in, HiGHS column of its ρ
        self._block_pair = np.zeros(0, dtype=np.int64)
        self._block_seen = np.zeros(0, dtype=np.int64)
        self._block_index = np.zeros(0, dtype=np.int64)
        # the basis at the end of the last attempt, by part (None before the first)
        self._memory: dict[str, np.ndarray] | None = None
        self._solves = 0
        self._data_version = -1
        #: the master's HiGHS object, made by the first build
        self.highs: highspy.Highs | None = None
        self._n_cols = 0
        self._phase2_cost = np.zeros(0)
        self._g_upper_pushed: np.ndarray | None = None
        self.last_rounds = 0
        self.last_columns = 0
        self.last_blocks = 0
        self.last_phase1 = False
        self.last_gap = math.nan
        self.last_solver_time = 0.0

    # -- the data of the current epoch ----------------------------------------------------------------------------

    def _read_data(self) -> None:
        """P^ and β of the program's current counts and time; the pool and blocks to keep, on the new data."""
        program = self.program
        if self._sparse:
            counts = np.zeros((self.n_pairs, self.W))
            counts[self._valid] = program.entry_counts
        else:
            counts = program.counts.reshape(self.n_pairs, self.S)
        visits = counts.sum(axis=1)
        self._p_hat = counts / np.maximum(1.0, visits)[:, None]
        self._beta = program.radius.ravel()
        self._visited = visits > 0
        self._usable = self._visited | (self._beta >= 1.0)   # pairs whose Q(s,a) is not empty
        memory = self._memory
        keep_solves = self.backend.keep_solves

        # Blocks: kept while their pair carried mass in one of the last BLOCK_KEEP_SOLVES solves.
        keep_block = self._usable[self._block_pair] & ((self._solves - self._block_seen) <= self.BLOCK_KEEP_SOLVES)
        has_block = np.zeros(self.n_pairs, dtype=bool)
        has_block[self._block_pair[keep_block]] = True
        # Vertex columns: kept while basic in one of the last keep_solves solves, if their pair has no block
        # (a block holds every point of Q) and they still make sense on the new data.
        pairs = self._pool_pair
        keep = self._usable[pairs] & ~has_block[pairs] & ((self._pool_rank != CENTRE) | self._visited[pairs])
        keep &= (self._solves - self._pool_seen) <= keep_solves
        # Seed: the empirical kernel of every visited pair with neither a column nor a block.
        covered = has_block.copy()
        covered[pairs[keep]] = True
        seed = np.flatnonzero(self._visited & ~covered)
        if memory is not None:
            memory = {
                "fixed": memory["fixed"],
                "pool": np.concatenate([memory["pool"][keep], np.full(seed.size, self._lower)]),
                "block_cols": memory["block_cols"][keep_block],
                "global_rows": memory["global_rows"],
                "block_rows": memory["block_rows"][keep_block],
            }
        self._memory = memory
        self._pool_pair = np.concatenate([pairs[keep], seed])
        self._pool_rank = np.concatenate([self._pool_rank[keep], np.full(seed.size, CENTRE)])
        self._pool_seen = np.concatenate([self._pool_seen[keep], np.full(seed.size, self._solves)])
        self._block_pair = self._block_pair[keep_block]
        self._block_seen = self._block_seen[keep_block]
        self._pool_vertex = self._vertices(self._pool_pair, self._pool_rank)
        self._drop_unused_rankings()

    def _vertices(self, pairs: np.ndarray, ranks: np.ndarray) -> np.ndarray:
        """The vertex of each ``(pair, ranking id)`` on the current data (P^ itself for :data:`CENTRE`)."""
        out = self._p_hat[pairs].copy()
        ranked = ranks != CENTRE
        if np.any(ranked):
            if self._sparse:
                orders = self._slot_order(pairs[ranked], np.stack(self._rankings), ranks[ranked])
            else:
                orders = np.stack(self._rankings)[ranks[ranked]]
            q, _ = optimistic_kernels(None, self._p_hat[pairs[ranked]], self._beta[pairs[ranked]], order=orders)
            out[ranked] = q
        return out

    def _slot_order(self, pairs: np.ndarray, rankings: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Each pair's slots from the highest to the lowest ``h`` (its invalid slots last), on a sparse support.

        ``rankings`` (m, S) are states by decreasing ``h`` (stable sorts, so ties go to the lower state) and
        ``ids`` (k,) picks one for each pair: a pair's slots follow its successors' places in that ranking,
        which breaks ties as the ranking does.
        """
        S = self.S
        place = np.empty_like(rankings)
        np.put_along_axis(place, rankings, np.broadcast_to(np.arange(S), rankings.shape), axis=1)
        succ = self._succ[pairs]
        keys = np.where(self._valid[pairs], place[ids[:, None], np.maximum(succ, 0)], S)
        return np.argsort(keys, axis=1, kind="stable")

    def _drop_unused_rankings(self) -> None:
        if not self._rankings:
            return
        used = np.unique(self._pool_rank[self._pool_rank != CENTRE])
        if used.size == len(self._rankings):
            return
        renumber = np.full(len(self._rankings), -2, dtype=np.int64)
        renumber[used] = np.arange(used.size)
        self._rankings = [self._rankings[i] for i in used]
        ranked = self._pool_rank != CENTRE
        self._pool_rank[ranked] = renumber[self._pool_rank[ranked]]

    # -- columns --------------------------------------------------------------------------------------------------

    def _global_part(self, pairs: np.ndarray, vertices: np.ndarray) -> np.ndarray:
        """The global rows of vertex columns ``(pair, vertex)`` (vertices over slots), dense, one row per column."""
        S = self.S
        if self._sparse:
            dense = np.zeros((pairs.size, self.n_global))
            succ = self._succ[pairs]
            row, slot = np.nonzero(self._valid[pairs] & (succ < S - 1))
            dense[row, 1 + succ[row, slot]] = -vertices[row, slot]
        else:
            dense = np.empty((pairs.size, self.n_global))
            dense[:, 1:S] = -vertices[:, : S - 1]
        dense[:, 0] = 1.0
        own = self._own_state[pairs]
        inside = np.flatnonzero(own < S - 1)
        dense[inside, 1 + own[inside]] += 1.0
        dense[:, S:] = self._extra_dense[pairs]
        return dense

    def _vertex_columns(self, pairs: np.ndarray, vertices: np.ndarray) -> _Columns:
        if self._sparse:
            return self._sparse_vertex_columns(pairs, vertices)
        return _Columns.from_dense(self._global_part(pairs, vertices))

    def _sparse_vertex_columns(self, pairs: np.ndarray, vertices: np.ndarray) -> _Columns:
        """:meth:`_global_part`'s columns built from their nonzeros (a dense row per column would cost S each)."""
        S, n = self.S, pairs.size
        succ = self._succ[pairs]
        column, slot = np.nonzero(self._valid[pairs] & (succ < S - 1))
        own = self._own_state[pairs]
        inside = np.flatnonzero(own < S - 1)
        extra_column, extra_row = np.nonzero(self._extra_dense[pairs])
        rows = np.concatenate([np.zeros(n, dtype=np.int64), 1 + succ[column, slot], 1 + own[inside], S + extra_row])
        columns = np.concatenate([np.arange(n), column, inside, extra_column])
        values = np.concatenate([np.ones(n), -vertices[column, slot], np.ones(inside.size),
                                 self._extra_dense[pairs][extra_column, extra_row]])
        matrix = sp.csr_matrix((values, (columns, rows)), shape=(n, self.n_global))
        matrix.sum_duplicates()   # a vertex's own state: 1 - v, as in the dense part
        matrix.eliminate_zeros()
        return _Columns(np.diff(matrix.indptr), matrix.indices.astype(np.int32), matrix.data)

    def _blocks(self, pairs: np.ndarray, first_rows: np.ndarray) -> tuple[_Columns, np.ndarray]:
        """The columns ρ, u (S), w (S) of each pair's block, and their phase-2 costs.

        Block b's own rows start at ``first_rows[b]``: balance, radius, then one cap per state.
        """
        n = pairs.size
        p_hat = self._p_hat[pairs]
        visited = self._visited[pairs]
        dense = np.broadcast_to(self._block_template, (n,) + self._block_template.shape).copy()
        if self._sparse:
            self._block_flow_rows(dense, pairs)
        # ρ: globally a vertex column with q = P^; in its own rows -(1 - ΣP^) balance, -r radius, -P^ caps
        dense[:, 0, : self.n_global] = self._global_part(pairs, p_hat)
        dense[:, 0, self.n_global] = np.where(visited, 0.0, -1.0)
        dense[:, 0, self.n_global + 1] = -np.where(visited, 0.5 * self._beta[pairs], 1.0)
        dense[:, 0, self.n_global + 2:] = -p_hat
        columns = _Columns.from_dense(dense.reshape(n * self.block_cols, self._block_template.shape[1]))
        # extended row index -> master row: global rows stay, own rows move to the block's place
        local = columns.indices >= self.n_global
        owner = np.repeat(np.arange(n), self.block_cols)
        owner = np.repeat(owner, columns.counts)
        columns.indices[local] += (first_rows[owner[local]] - self.n_global)
        cost = np.zeros((n, self.block_cols))
        cost[:, 0] = self._cost[pairs]
        return columns, cost.ravel()

    def _block_flow_rows(self, dense: np.ndarray, pairs: np.ndarray) -> None:
        """On a sparse support: each block's u and w columns in the flow rows of their pair's successors, and
        no entry at all for the invalid slots (their columns stay empty, so they carry nothing)."""
        S, W = self.S, self.W
        succ, valid = self._succ[pairs], self._valid[pairs]
        block, slot = np.nonzero(valid & (succ < S - 1))
        dense[block, 1 + slot, 1 + succ[block, slot]] = -1.0
        dense[block, 1 + W + slot, 1 + succ[block, slot]] = 1.0
        block, slot = np.nonzero(~valid)
        dense[block, 1 + slot, :] = 0.0
        dense[block, 1 + W + slot, :] = 0.0

    def _block_row_bounds(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of ``count`` blocks' rows: balance ``= 0``, radius and caps ``<= 0``."""
        lower = np.concatenate([[0.0], np.full(self.W + 1, -self._highspy.kHighsInf)])
        return np.tile(lower, count), np.zeros(count * self.block_rows)

    # -- the master -----------------------------------------------------------------------------------------------

    def _g_upper(self, with_constraints: bool) -> np.ndarray:
        g = self.form.constraint_upper(self.program.epsilon, with_constraints)
        return np.where(np.isfinite(g), g, self._highspy.kHighsInf)

    def _global_row_bounds(self, with_constraints: bool) -> tuple[np.ndarray, np.ndarray]:
        inf = self._highspy.kHighsInf
        lower = np.concatenate([[1.0], np.zeros(self.S - 1), np.where(np.isfinite(self._extra_lower), self._extra_lower, -inf)])
        upper = np.concatenate([[1.0], np.zeros(self.S - 1), np.where(np.isfinite(self._extra_upper), self._extra_upper, inf)])
        upper[self._g_rows] = self._g_upper(with_constraints)
        return lower, upper

    @property
    def _master(self) -> highspy.Highs:
        """The master's HiGHS object; every step but the first build runs on a built master."""
        if self.highs is None:
            raise BackendError("the highs-columns master was used before it was built (a bug in curlopt).")
        return self.highs

    def _build(self, with_constraints: bool) -> None:
        """Pass the master (fixed columns, pool, blocks) to HiGHS, with the last basis where it still fits."""
        highspy, inf = self._highspy, self._highspy.kHighsInf
        if self.highs is None:
            self.highs = new_highs()
            for key, value in self.backend.options.items():
                self.highs.setOptionValue(key, value)
            # The master is small and re-solved from a basis many times: presolve would only get in the way.
            self.highs.setOptionValue("presolve", "off")
            # Primal simplex: new columns leave the basis primal feasible, and the master is very degenerate
            # (most pairs carry no mass); HiGHS's dual simplex stalled on it for 900,000 iterations (160 s) at
            # (100,10) where the primal one took 0.6 s (measured on the same master).
            if "simplex_strategy" not in self.backend.options:
                self.highs.setOptionValue("simplex_strategy", self.SIMPLEX_STRATEGY)
            self._access = _SolverAccess(self.highs)
        n_blocks, n_pool = self._block_pair.size, self._pool_pair.size
        n_rows = self.n_global + n_blocks * self.block_rows
        blocks, block_cost = self._blocks(self._block_pair, self.n_global + self.block_rows * np.arange(n_blocks))
        start, index, value = _Columns.join(
            [self._fixed_columns, self._vertex_columns(self._pool_pair, self._pool_vertex), blocks])
        n_cols = start.size
        self._pool_index = np.arange(self._n_fixed, self._n_fixed + n_pool)
        self._block_index = self._n_fixed + n_pool + self.block_cols * np.arange(n_blocks)
        self._phase2_cost = np.concatenate([self._fixed_cost, self._cost[self._pool_pair], block_cost])
        row_lower, row_upper = self._global_row_bounds(with_constraints)
        block_lower, block_upper = self._block_row_bounds(n_blocks)
        # The array form of passModel: a HighsLp's attributes would copy each array element by element.
        self.highs.passModel(
            n_cols, n_rows, index.size, int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMaximize),
            self.form.offset, self._phase2_cost,
            np.concatenate([np.where(np.isfinite(self._fixed_lower), self._fixed_lower, -inf), np.zeros(n_cols - self._n_fixed)]),
            np.concatenate([np.where(np.isfinite(self._fixed_upper), self._fixed_upper, inf), np.full(n_cols - self._n_fixed, inf)]),
            np.concatenate([row_lower, block_lower]), np.concatenate([row_upper, block_upper]),
            start, index, value, np.zeros(n_cols, dtype=np.int32))
        self._n_cols, self._n_rows = n_cols, n_rows
        self._g_upper_pushed = row_upper[self._g_rows].copy()
        if self._memory is not None:
            self._restore_basis(self._memory)

    def _restore_basis(self, memory: dict[str, np.ndarray]) -> None:
        """Give HiGHS the last attempt's basis on the rebuilt master, its count of basic variables made right.

        Dropped columns were nonbasic, but a dropped block or new data can leave one basic variable too many or
        too few: extra basic pool columns become nonbasic, missing ones are made up by basic row slacks. HiGHS
        repairs a singular basis itself; a basis it refuses only means a cold start (slower, not wrong).
        """
        cols = np.concatenate([memory["fixed"], memory["pool"], memory["block_cols"].ravel()])
        rows = np.concatenate([memory["global_rows"], memory["block_rows"].ravel()])
        if cols.size != self._n_cols or rows.size != self._n_rows:
            return
        excess = int(np.count_nonzero(cols == self._basic) + np.count_nonzero(rows == self._basic)) - self._n_rows
        if excess > 0:
            demote = (self._n_fixed + np.flatnonzero(memory["pool"] == self._basic))[:excess]
            if demote.size < excess:
                return
            cols[demote] = self._lower
        elif excess < 0:
            rows[np.flatnonzero(rows != self._basic)[:-excess]] = self._basic
        self._access.set_basis(cols, rows)

    def _remember(self) -> None:
        """Keep the basis by part (to start the next epoch from), and when each column or block was last used."""
        found = self._access.basis()
        if found is None:
            self._memory = None
            return
        cols, rows = found
        block_cols = self._block_index[:, None] + np.arange(self.block_cols)[None, :]
        self._memory = {
            "fixed": cols[: self._n_fixed],
            "pool": cols[self._pool_index],
            "block_cols": cols[block_cols].reshape(-1, self.block_cols),
            "global_rows": rows[: self.n_global],
            "block_rows": rows[self.n_global:].reshape(-1, self.block_rows),
        }
        self._pool_seen[self._memory["pool"] == self._basic] = self._solves
        if self._block_index.size:
            self._block_seen[self._solution[0][self._block_index] > 0] = self._solves

    def _push_g_bounds(self, with_constraints: bool) -> None:
        upper = self._g_upper(with_constraints)
        pushed = self._g_upper_pushed
        if upper.size and (pushed is None or not np.array_equal(upper, pushed)):
            # highspy's stubs omit changeRowsBounds, which its extension defines
            self._master.changeRowsBounds(  # type: ignore[attr-defined]
                upper.size, self._g_rows, np.full(upper.size, -self._highspy.kHighsInf), upper)
            self._g_upper_pushed = upper

    def _run(self) -> tuple[str, int, float]:
        """One master solve; ``self._solution`` holds its column values and row duals afterwards."""
        highs = self._master
        before = highs.getRunTime()
        left = self.time_left()
        if left is not None:  # HiGHS's time_limit is on its run clock, which runs on over every solve
            highs.setOptionValue("time_limit", before + max(left, 0.0))
        highs.run()
        info = highs.getInfo()
        self._solution = self._access.solution()
        return highs.getModelStatus().name, int(info.simplex_iteration_count), highs.getRunTime() - before

    def _set_phase(self, phase: int) -> None:
        """Phase 1: maximise minus the artificials' sum, every other cost 0; phase 2: the program's objective,
        the artificials held at 0."""
        highs, inf = self._master, self._highspy.kHighsInf
        index = np.arange(self._n_cols, dtype=np.int32)
        art = np.arange(self._n_art, dtype=np.int32)
        if phase == 1:
            cost = np.zeros(self._n_cols)
            cost[: self._n_art] = -1.0
            highs.changeColsCost(self._n_cols, index, cost)
            highs.changeColsBounds(self._n_art, art, np.zeros(self._n_art), np.full(self._n_art, inf))
        else:
            highs.changeColsCost(self._n_cols, index, self._phase2_cost)
            highs.changeColsBounds(self._n_art, art, np.zeros(self._n_art), np.zeros(self._n_art))

    # -- pricing --------------------------------------------------------------------------------------------------

    def _price(self, phase: int) -> tuple[np.ndarray, np.ndarray, float]:
        """Every pair's best vertex under the current duals: (pairs with a positive reduced cost, their
        vertices; the largest reduced cost). Pairs with a block are left out (their reduced costs are <= 0)."""
        y = self._solution[1][: self.n_global]
        h = np.zeros(self.S)
        # the flow row of s' holds -v(s'); its dual enters the reduced cost c - y·a with a plus sign
        h[: self.S - 1] = y[1: self.S]
        order = np.argsort(-h, kind="stable")
        constant = -(self._base_t @ y)
        if phase == 2:
            constant = constant + self._cost
        if self._sparse:  # each pair ranks its own successors (slots) by the same ranking of the states
            slot_order = self._slot_order(np.arange(self.n_pairs), order[None, :], np.zeros(self.n_pairs, np.int64))
            vertices, _ = optimistic_kernels(None, self._p_hat, self._beta, order=slot_order)
            reduced = constant + (vertices * h[np.maximum(self._succ, 0)]).sum(axis=1)  # invalid slots hold 0
        else:
            vertices, _ = optimistic_kernels(h, self._p_hat, self._beta, order=order)
            reduced = constant + vertices @ h
        reduced[~self._usable] = -np.inf
        reduced[self._block_pair] = -np.inf
        best = max(0.0, float(reduced.max())) if reduced.size else 0.0
        pairs = np.flatnonzero(reduced > self.backend.pricing_tolerance)
        if pairs.size:
            self._rankings.append(order.astype(np.int32))
        return pairs, vertices[pairs], best

    def _add_vertices(self, pairs: np.ndarray, vertices: np.ndarray, phase: int) -> None:
        """Append vertex columns (of the latest ranking) to the pool and to HiGHS, whose basis stays (they enter
        nonbasic at 0)."""
        if pairs.size == 0:
            return
        self._pool_pair = np.concatenate([self._pool_pair, pairs])
        self._pool_rank = np.concatenate([self._pool_rank, np.full(pairs.size, len(self._rankings) - 1)])
        self._pool_vertex = np.concatenate([self._pool_vertex, vertices])
        self._pool_seen = np.concatenate([self._pool_seen, np.full(pairs.size, self._solves)])
        self._pool_index = np.concatenate([self._pool_index, self._n_cols + np.arange(pairs.size)])
        self._append_columns(self._vertex_columns(pairs, vertices), self._cost[pairs], phase)

    def _add_blocks(self, pairs: np.ndarray, phase: int) -> None:
        """Append a block (its rows, then its columns) for each of ``pairs``."""
        if pairs.size == 0:
            return
        lower, upper = self._block_row_bounds(pairs.size)
        self._master.addRows(pairs.size * self.block_rows, lower, upper, 0, np.zeros(0, dtype=np.int32),
                           np.zeros(0, dtype=np.int32), np.zeros(0))
        columns, cost = self._blocks(pairs, self._n_rows + self.block_rows * np.arange(pairs.size))
        self._n_rows += pairs.size * self.block_rows
        self._block_pair = np.concatenate([self._block_pair, pairs])
        self._block_seen = np.concatenate([self._block_seen, np.full(pairs.size, self._solves)])
        self._block_index = np.concatenate([self._block_index, self._n_cols + self.block_cols * np.arange(pairs.size)])
        self._append_columns(columns, cost, phase)

    def _append_columns(self, columns: _Columns, phase2_cost: np.ndarray, phase: int) -> None:
        start, index, value = _Columns.join([columns])
        count = columns.size
        cost = phase2_cost if phase == 2 else np.zeros(count)
        self._master.addCols(count, cost, np.zeros(count), np.full(count, self._highspy.kHighsInf), index.size,
                           start, index, value)
        self._phase2_cost = np.concatenate([self._phase2_cost, phase2_cost])
        self._n_cols += count

    def _generate(self, phase: int, rounds: int, priced: np.ndarray) -> tuple[str, int, int, float]:
        """Column generation in one phase: (HiGHS status name, "round limit" or "time limit", rounds used,
        iterations, HiGHS time). ``priced`` counts, per pair, the rounds of this attempt in which it priced positive.
        """
        iterations, solver_time = 0, 0.0
        while True:
            left = self.time_left()  # a wall clock across the rounds; each master run also gets what is left
            if left is not None and left <= 0:
                return "time limit", rounds, iterations, solver_time
            name, its, run_time = self._run()
            rounds += 1
            iterations += its
            solver_time += run_time
            if name != "kOptimal":
                return name, rounds, iterations, solver_time
            pairs, vertices, self.last_gap = self._price(phase)
            if pairs.size == 0:
                return name, rounds, iterations, solver_time
            if rounds >= self.backend.max_rounds:
                return "round limit", rounds, iterations, solver_time
            priced[pairs] += 1
            # Only a pair that carries mass can stall the master (its mass spreads over tied states); the others
            # price positive again simply because the duals are still moving.
            carried = np.bincount(self._pool_pair, weights=self._solution[0][self._pool_index], minlength=self.n_pairs)
            stalled = (priced[pairs] >= self.BLOCK_AFTER) & ((carried[pairs] > 0)
                                                             | (priced[pairs] >= self.BLOCK_AFTER_IDLE))
            if np.count_nonzero(stalled) > self.BLOCKS_PER_ROUND:  # the most carried mass first: a block costs rows
                ranked = np.flatnonzero(stalled)[np.argsort(-carried[pairs[stalled]], kind="stable")]
                stalled[ranked[self.BLOCKS_PER_ROUND:]] = False
            self._add_vertices(pairs[~stalled], vertices[~stalled], phase)
            self._add_blocks(pairs[stalled], phase)

    # -- one attempt ----------------------------------------------------------------------------------------------

    def _solve(self, with_constraints: bool) -> RawSolution:
        program = self.program
        if program.version != self._data_version or self.highs is None:
            self._read_data()
            self._build(with_constraints)
            self._data_version = program.version
        else:
            self._push_g_bounds(with_constraints)
        self._solves += 1
        self.last_phase1 = False
        self.last_gap = math.nan
        priced = np.zeros(self.n_pairs, dtype=np.int64)
        solver = "HiGHS (column generation)"
        name, rounds, iterations, solver_time = self._generate(2, 0, priced)
        if name == "kInfeasible":
            # The pool cannot satisfy the rows: phase 1 finds columns that do, or shows that none exist.
            self.last_phase1 = True
            self._set_phase(1)
            name, rounds, more, more_time = self._generate(1, rounds, priced)
            iterations, solver_time = iterations + more, solver_time + more_time
            if name == "kOptimal":
                shortfall = float(self._solution[0][: self._n_art].sum())  # the objective would add f's offset
                self._set_phase(2)
                if shortfall > self.backend.feasibility_tolerance:
                    self._remember()
                    return self._finish(RawSolution(
                        Status.INFEASIBLE, None, iterations, solver,
                        f"phase 1 of column generation: the rows cannot hold (sum of violations {shortfall:.3g},"
                        " no improving column left)", solver_time), rounds)
                name, rounds, more, more_time = self._generate(2, rounds, priced)
                iterations, solver_time = iterations + more, solver_time + more_time
            else:
                self._set_phase(2)
        self._remember()
        if name == "time limit":
            return self._finish(self.time_limit_reached(
                f"after {rounds} pricing round(s) of column generation", solver, iterations, solver_time), rounds)
        if name == "round limit":
            return self._finish(RawSolution(
                Status.ITERATION_LIMIT, None, iterations, solver,
                f"column generation stopped at its limit of {self.backend.max_rounds} pricing rounds with a column"
                f" of reduced cost {self.last_gap:.3g} > {self.backend.pricing_tolerance:g} left: the master's value"
                " is only a lower bound on the optimum (raise max_rounds)", solver_time), rounds)
        status = STATUS_MAP.get(name, Status.UNKNOWN)
        message = "" if status is Status.OPTIMAL else f"HiGHS model status {name} on the column-generation master"
        x = self._program_solution() if status is Status.OPTIMAL else None
        return self._finish(RawSolution(status, x, iterations, solver, message, solver_time), rounds)

    def _finish(self, raw: RawSolution, rounds: int) -> RawSolution:
        self.last_rounds = rounds
        self.last_columns = int(self._pool_pair.size)
        self.last_blocks = int(self._block_pair.size)
        self.last_solver_time = float(raw.solver_time or 0.0)
        return raw

    def _program_solution(self) -> np.ndarray:
        """The master's solution in the program's layout: ρ, ``p = Σ_v x v`` (plus ``ρ P^ + u - w`` for the
        blocks) and ``α = |p - P^ ρ|`` (on a sparse support, p and α at the support's entries)."""
        W = self.W
        values = np.clip(self._solution[0], 0.0, None)
        weights = values[self._pool_index]
        rho = np.bincount(self._pool_pair, weights=weights, minlength=self.n_pairs).astype(float)  # int if empty
        mix = sp.csr_matrix((weights, (self._pool_pair, np.arange(weights.size))), shape=(self.n_pairs, weights.size))
        p = np.asarray(mix @ self._pool_vertex)
        if self._block_pair.size:
            block = values[self._block_index[:, None] + np.arange(self.block_cols)[None, :]]
            rho_b, u, w = block[:, 0], block[:, 1: W + 1], block[:, W + 1:]
            rho[self._block_pair] += rho_b
            p[self._block_pair] += rho_b[:, None] * self._p_hat[self._block_pair] + u - w
        p = np.clip(p, 0.0, None)
        alpha = np.abs(p - self._p_hat * rho[:, None])
        if self._sparse:  # slots to entries: the valid slots, row by row, are the support's entries in order
            return np.concatenate([rho, p[self._valid], alpha[self._valid]])
        return np.concatenate([rho, p.ravel(), alpha.ravel()])

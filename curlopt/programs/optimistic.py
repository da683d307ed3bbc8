"""The optimistic programs over joint probabilities p(s,a,s'): UC-CURL's L1 ball and UCRL-CMDP's box (docs/math.md §3), with their radii."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ProgramError
from ..models.cmdp import CMDP
from .blocks import Program, check_program_size
from .support import Support, check_counts
from .tightness import finite_at_least

__all__ = ['JointProgram', 'OptimisticProgram', 'l1_radius', 'RADII', 'BoxOptimisticProgram', 'box_radius']


#: the L1 confidence radii of the optimistic program, by name
RADII = ("analysis", "experiment")


def check_radius(radius: Any, radius_scale: Any, error: type[Exception] = ProgramError) -> tuple[str, float]:
    """``(radius, radius_scale)`` validated: a name in :data:`RADII` and a finite float >= 0; else ``error``."""
    if not isinstance(radius, str) or radius not in RADII:
        raise error(f"radius must be one of {', '.join(map(repr, RADII))}, got {radius!r}.")
    ok = isinstance(radius_scale, (int, float, np.integer, np.floating)) and not isinstance(radius_scale, bool)
    scale = float(radius_scale) if ok else math.nan
    if not (math.isfinite(scale) and scale >= 0):
        raise error(f"radius_scale must be a finite number >= 0, got {radius_scale!r}.")
    return radius, scale


def l1_radius(visits: np.ndarray, time: float, n_states: int | np.ndarray, n_actions: int,
              kind: str = "analysis") -> np.ndarray:
    """The L1 confidence radius ``β(s,a)`` of the optimistic program at epoch start ``t = time``.

    Parameters
    ----------
    visits : ndarray
        ``N(s,a)``, visits before the epoch.
    time : float
        The epoch start ``t_e >= 1``.
    n_states : int or ndarray
        ``S``; or, on a sparse support, each pair's number of allowed successors (broadcast against ``visits``).
    n_actions : int
        ``A``.
    kind : {"analysis", "experiment"}, default "analysis"
        ``analysis``: ``β = sqrt(14 S ln(2 A t) / max(1, N))``, the radius of the
        paper's regret analysis; ``experiment``: ``β = sqrt(S ln(A t) / max(1, N))``,
        the radius its simulations used (much smaller: on the queue at
        ``t = 5·10^5`` a pair needs 96 visits for ``β < 1`` rather than 1,394).
    """
    return _l1_radius_over(np.maximum(1.0, visits), time, n_states, n_actions, kind)


def _l1_radius_over(divisor: np.ndarray, time: float, n_states: int | np.ndarray, n_actions: int,
                    kind: str) -> np.ndarray:
    """:func:`l1_radius` from ``max(1, N(s,a))`` (``divisor``), which the optimistic program has at hand."""
    if kind == "analysis":
        return np.sqrt(14.0 * n_states * math.log(2.0 * n_actions * time) / divisor)
    if kind == "experiment":
        return np.sqrt(n_states * math.log(n_actions * time) / divisor)
    raise ProgramError(f"radius must be one of {', '.join(map(repr, RADII))}, got {kind!r}.")


class JointProgram(Program):
    """What the optimistic programs share: variables ρ (S, A) and p >= 0 on the support, and the rows
    ``Σ ρ = 1``, ``ρ(s,a) = Σ_{s'} p(s,a,s')`` and flow ``Σ_a ρ(s,a) = Σ_{s'',a} p(s'',a,s)``.

    ρ is kept as its own block (rather than written as ``Σ_{s'} p``) so that each
    confidence row has three entries, not S + 2. Subclasses add their confidence
    rows (:meth:`_add_confidence_rows`) and recompute their parameter values from
    the counts (:meth:`_set_confidence`).

    The support (:mod:`curlopt.programs.support`) decides which ``p(s,a,s')`` exist: on the dense support p
    has shape (S, A, S) as in docs/math.md; on a sparse one p (and each block named in ``entry_blocks``) has
    one variable per support entry, shape (nnz,), in the support's entry order. A successor outside the
    support then has ``p(s,a,s') = 0``: the confidence set (L1 ball or box) is intersected with the
    distributions on the support. That is a **modelling choice of the agent** building the program — it
    asserts that those transitions cannot happen — not a property of the data: counts must be zero outside
    the support (a count there is a ProgramError).
    """

    support: Support

    def __init__(self, model: CMDP, entry_blocks: list[str], counts: Any, time: float, epsilon: float,
                 support: Any = None):
        if not isinstance(model, CMDP):
            raise ProgramError(f"a program needs a curlopt CMDP model, got {type(model).__name__}.")
        S, A = model.n_states, model.n_actions
        self.support = support = Support.of_model(model, support)
        nnz, n_pairs = support.nnz, S * A
        check_program_size(self.kind, model, n_pairs + nnz * (1 + len(entry_blocks)),
                           3 * n_pairs + 2 * nnz + self._confidence_nonzeros(nnz, n_pairs))
        super().__init__(model, [("occupancy", (S, A)), ("joint", support.shape),
                                 *[(name, support.shape) for name in entry_blocks]])
        rho = self.blocks["occupancy"].indices()          # (S, A)
        p = self.blocks["joint"].indices().ravel()        # one per support entry
        entry_pair, successor = support.pairs, support.successors
        lin = self.linear
        lin.add("mass", 1, np.zeros(n_pairs), rho.ravel(), 1.0, 1.0, 1.0)
        # link: ρ(s,a) - Σ_{s'} p(s,a,s') = 0
        pair = np.arange(n_pairs)
        lin.add(
            "link", n_pairs,
            np.concatenate([pair, entry_pair]),
            np.concatenate([rho.ravel(), p]),
            np.concatenate([np.ones(n_pairs), -np.ones(nnz)]),
            0.0, 0.0,
        )
        # flow for s = 0..S-2: Σ_a ρ(s,a) - Σ_{s'',a} p(s'',a,s) = 0
        flow_rows_rho = np.repeat(np.arange(S - 1), A)
        kept = successor < S - 1
        flow_rows_p = successor[kept]
        lin.add(
            "flow", S - 1,
            np.concatenate([flow_rows_rho, flow_rows_p]),
            np.concatenate([rho[: S - 1].ravel(), p[kept]]),
            np.concatenate([np.ones(flow_rows_rho.size), -np.ones(flow_rows_p.size)]),
            0.0, 0.0,
        )
        self._add_confidence_rows(rho, p)
        lin.finish()
        self._counts = np.zeros((S, A, S)) if support.is_dense else np.zeros(nnz)
        self.time = 1.0
        self.update(counts=self.counts if counts is None else counts, time=time, epsilon=epsilon)

    @staticmethod
    def _confidence_nonzeros(nnz: int, n_pairs: int) -> int:
        """The nonzeros (constant and parameter) of the confidence rows, for the size check."""
        raise NotImplementedError

    def _add_confidence_rows(self, rho: np.ndarray, p: np.ndarray) -> None:
        raise NotImplementedError

    def _set_confidence(self) -> None:
        """Recompute the parameter values from ``self._counts`` and ``self.time``."""
        raise NotImplementedError

    @property
    def counts(self) -> Any:
        """``n(s,a,s')``: an (S, A, S) array on the dense support, else a CSR (S·A, S) matrix (zeros dropped)."""
        if self.support.is_dense:
            return self._counts
        matrix = self.support.matrix(self._counts)
        matrix.eliminate_zeros()
        return matrix

    @property
    def entry_counts(self) -> np.ndarray:
        """``n(s,a,s')`` at each support entry, shape (nnz,) (a view on the dense support)."""
        return self._counts.reshape(-1)

    @property
    def visits(self) -> np.ndarray:
        """``N(s,a) = Σ_{s'} n(s,a,s')``, shape (S, A)."""
        if self.support.is_dense:
            return self._counts.sum(axis=2)
        return self.support.row_sums(self._counts).reshape(self.model.n_states, self.model.n_actions)

    @property
    def empirical_kernel(self) -> Any:
        """``P^(s'|s,a) = n(s,a,s') / max(1, N(s,a))`` (zeros for unvisited pairs): an (S, A, S) array on the
        dense support, else a CSR (S·A, S) matrix."""
        if self.support.is_dense:
            return self._counts / np.maximum(1.0, self.visits)[:, :, None]
        matrix = self.support.matrix(self.empirical_entries())
        matrix.eliminate_zeros()
        return matrix

    def empirical_entries(self) -> np.ndarray:
        """``P^`` at each support entry, shape (nnz,) (in the joint block's order)."""
        if self.support.is_dense:
            return self.empirical_kernel.ravel()
        return self._counts / np.maximum(1.0, self.visits.ravel())[self.support.pairs]

    def update(self, counts: Any = None, time: Any = None, epsilon: Any = None) -> None:
        """Set new counts, time and/or tightness; the structure is unchanged.

        ``counts`` is a dense (S, A, S) array or a scipy sparse (S·A, S) matrix, zero outside the support.

        Raises
        ------
        ProgramError
            If counts have the wrong shape, negative/NaN entries or a nonzero outside the support (naming the
            row and successor), or time < 1.
        """
        if counts is not None:
            n = check_counts(self.model, counts)
            if not self.support.is_dense:
                self._counts = self.support.gather(n, "counts")
            elif sp.issparse(n):
                self._counts = n.toarray().reshape(self._counts.shape)
            else:
                self._counts = n.copy()
        if time is not None:
            self.time = finite_at_least(time, "time", 1.0)
        if counts is not None or time is not None:
            self._set_confidence()
        if epsilon is not None:
            self._set_epsilon(epsilon)
        self.version += 1

    def update_unchecked(self, entry_counts: np.ndarray, time: float, epsilon: float) -> None:
        """:meth:`update` with counts, time and tightness the caller built valid, without their checks.

        For an agent's own counts, which are finite and non-negative on the program's support by construction
        (every epoch pushes them; the checks cost more than the write): ``entry_counts`` are ``n(s,a,s')`` at
        each support entry, shape (nnz,), in the program's entry order (:attr:`entry_counts`: the flat
        (S, A, S) order on the dense support, the support's CSR order otherwise), ``time >= 1`` and
        ``0 <= epsilon <=`` the largest tightness. The program keeps a copy, and its data are then those
        :meth:`update` sets from the same counts, bit for bit.
        """
        self._counts = entry_counts.reshape(self._counts.shape).copy()
        self.time = float(time)
        self._set_confidence()
        self._set_epsilon(epsilon)
        self.version += 1


class OptimisticProgram(JointProgram):
    """The optimistic ε-tight program of docs/math.md §3 over joint probabilities ``p(s,a,s')``.

    Variables ρ (S, A), p and α (S, A, S) (one per support entry on a sparse support, see
    :class:`JointProgram`), all >= 0. Rows: those of :class:`JointProgram`;
    ``|p(s,a,s') - P^(s'|s,a) ρ(s,a)| <= α(s,a,s')``; ``Σ_{s'} α(s,a,s') <= β(s,a) ρ(s,a)``; and
    ``g_m(ζ) <= -ε``.

    Parameters
    ----------
    model : CMDP
    counts : array_like (S, A, S) or scipy sparse (S·A, S), optional
        Transition counts ``n(s,a,s')``; default zeros (no data).
    time : float, default 1
        The epoch start ``t_e >= 1`` (enters β).
    epsilon : float, default 0
        Tightness ε >= 0.
    radius : {"analysis", "experiment"}, default "analysis"
        Which L1 radius β (see :func:`l1_radius`): the one of the paper's regret
        analysis, or the smaller one of its simulations.
    radius_scale : float, default 1
        A finite factor >= 0 multiplying β (0 trusts the empirical kernel exactly).
    support : scipy sparse matrix (S·A, S), optional
        The successors p and α exist for (see :class:`JointProgram`: a modelling choice). Default: the
        model's own kernel pattern when the model stores its kernel sparse, else every successor.

    Raises
    ------
    ProgramError
        For an unknown ``radius`` or a ``radius_scale`` that is not a finite number >= 0, invalid counts, or
        a program too large to build.
    """

    kind = "optimistic"
    #: the parameter array and the arrays :meth:`_set_confidence` writes (see :meth:`_confidence_arrays`)
    _confidence_kept: tuple[np.ndarray, tuple[np.ndarray, ...]] | None = None

    def __init__(self, model: CMDP, counts: Any = None, time: float = 1.0, epsilon: float = 0.0,
                 radius: str = "analysis", radius_scale: float = 1.0, support: Any = None):
        # Set before the base class computes the first radius.
        self.radius_kind, self.radius_scale = check_radius(radius, radius_scale)
        super().__init__(model, ["deviation"], counts, time, epsilon, support)

    @staticmethod
    def _confidence_nonzeros(nnz: int, n_pairs: int) -> int:
        return 2 * 3 * nnz + nnz + n_pairs        # two deviation rows per entry (p, α, ρ), the radius rows

    def _add_confidence_rows(self, rho: np.ndarray, p: np.ndarray) -> None:
        alpha = self.blocks["deviation"].indices()
        n_pairs, n_triples = rho.size, p.size
        triple = np.arange(n_triples)
        rho_of_triple = rho.ravel()[self.support.pairs]
        lin = self.linear
        # p - α - P^ ρ <= 0   and   -p - α + P^ ρ <= 0
        for name, sign in (("deviation_upper", 1.0), ("deviation_lower", -1.0)):
            first = lin.add(
                name, n_triples,
                np.concatenate([triple, triple]),
                np.concatenate([p.ravel(), alpha.ravel()]),
                np.concatenate([np.full(n_triples, sign), -np.ones(n_triples)]),
                -np.inf, 0.0,
            )
            lin.add_parameters(name, first, triple, rho_of_triple)
        # Σ_{s'} α(s,a,s') - β(s,a) ρ(s,a) <= 0
        pair = np.arange(n_pairs)
        first = lin.add("radius", n_pairs, self.support.pairs, alpha.ravel(), 1.0, -np.inf, 0.0)
        lin.add_parameters("radius", first, pair, rho.ravel())

    @property
    def radius(self) -> np.ndarray:
        """``β(s,a)`` at the current counts and time (the chosen radius times ``radius_scale``)."""
        return self._radius_over(np.maximum(1.0, self.visits))

    def _radius_over(self, divisor: np.ndarray) -> np.ndarray:
        """:attr:`radius` from ``max(1, N(s,a))`` (S, A) of the current counts."""
        beta = _l1_radius_over(divisor, self.time, self.model.n_states, self.model.n_actions, self.radius_kind)
        return beta if self.radius_scale == 1.0 else self.radius_scale * beta

    def _set_confidence(self) -> None:
        """Write ``-P^``, ``P^`` and ``-β`` into the parameter entries (every epoch: β moves with the time).

        Every epoch runs this, so the visits are summed and clamped (``max(1, N)``) once for both ``P^`` and β, into
        arrays kept by the program, ``P^`` is divided straight into its entries (a view on the parameter values,
        made once) and negated from there into the other deviation rows. Each value is the same elementwise
        operation as in :meth:`empirical_entries` and :attr:`radius`, so the values are bit-identical to theirs.
        """
        visits, divisor, lower, upper, radius = self._confidence_arrays()
        counts = self._counts
        if self.support.is_dense:
            np.add.reduce(counts, axis=2, out=visits)        # :attr:`visits`, into the kept array
            np.maximum(1.0, visits, out=divisor)
            np.divide(counts, divisor[:, :, None], out=lower)
        else:
            np.maximum(1.0, self.visits, out=divisor)
            np.divide(counts, divisor.ravel()[self.support.pairs], out=lower)
        np.negative(lower.reshape(-1), out=upper)
        np.negative(self._radius_over(divisor).ravel(), out=radius)

    def _confidence_arrays(self) -> tuple[np.ndarray, ...]:
        """The visits and ``max(1, N)`` arrays (S, A) and the views of the ``-P^``, ``P^`` and ``-β`` entries
        (the first shaped like the counts), made again only if the parameter array is ever replaced or the views
        are no longer views of it."""
        values = self.linear.writable_values()
        kept = self._confidence_kept
        # the views must still be views of this array (a deep copy of the program copies them apart)
        if kept is not None and kept[0] is values and all(view.base is values for view in kept[1][2:]):
            return kept[1]
        groups = self.linear.param_groups
        shape = (self.model.n_states, self.model.n_actions)
        arrays = (np.empty(shape), np.empty(shape), values[groups["deviation_lower"]].reshape(self._counts.shape),
                  values[groups["deviation_upper"]], values[groups["radius"]])
        self._confidence_kept = (values, arrays)
        return arrays


def box_radius(visits: np.ndarray, horizon: float, n_states: int, n_actions: int) -> np.ndarray:
    """The per-entry radius ``b(s,a) = min(1, sqrt(ln(2 S² A T²) / (2 max(1, N(s,a)))))`` (docs/math.md §9)."""
    return _box_radius_of(np.maximum(1.0, visits), _box_log_term(horizon, n_states, n_actions))


def _box_log_term(horizon: float, n_states: int, n_actions: int) -> float:
    """``ln(2 S² A T²)``, the radius' log term (fixed for a program: kept rather than recomputed per epoch)."""
    return math.log(2.0 * n_states**2 * n_actions * float(horizon) ** 2)


def _box_radius_of(scale: np.ndarray, log_term: float) -> np.ndarray:
    """:func:`box_radius` from ``max(1, N)`` and the log term (the one arithmetic both paths use)."""
    return np.minimum(1.0, np.sqrt(log_term / (2.0 * scale)))


class BoxOptimisticProgram(JointProgram):
    """UCRL-CMDP's optimistic program (docs/math.md §9): per-entry boxes instead of an L1 ball.

    Variables ρ (S, A) and p (S, A, S) (one per support entry on a sparse support, see
    :class:`JointProgram`), both >= 0 (no α). Rows: those of
    :class:`JointProgram`; the box ``|p(s,a,s') - P^(s'|s,a) ρ(s,a)| <= b(s,a) ρ(s,a)``
    as two rows per triple, ``p - (P^ + b) ρ <= 0`` and ``-p + (P^ - b) ρ <= 0``,
    whose ρ coefficients are parameter entries; and ``g_m(ζ) <= -ε``. The implied
    kernel ``P~(s'|s,a) = p(s,a,s') / ρ(s,a)`` is a distribution with
    ``|P~ - P^| <= b`` entrywise. UCRL-CMDP solves it with ε = 0; ε is kept so the
    program has the same interface as the others.

    Parameters
    ----------
    model : CMDP
    horizon : float
        The horizon ``T >= 1``; it enters the radius ``b`` (not the epoch start).
    counts : array_like (S, A, S) or scipy sparse (S·A, S), optional
        Transition counts ``n(s,a,s')``; default zeros (no data).
    time : float, default 1
        The epoch start ``t_e >= 1`` (recorded only: the radius uses ``T``).
    epsilon : float, default 0
        Tightness ε >= 0.
    support : scipy sparse matrix (S·A, S), optional
        The successors p exists for (see :class:`JointProgram`: a modelling choice). Default: the model's own
        kernel pattern when the model stores its kernel sparse, else every successor.
    """

    kind = "box-optimistic"

    def __init__(self, model: CMDP, horizon: float, counts: Any = None, time: float = 1.0, epsilon: float = 0.0,
                 support: Any = None):
        if isinstance(horizon, bool) or not isinstance(horizon, (int, float, np.integer, np.floating)) \
                or not math.isfinite(horizon) or horizon < 1:
            raise ProgramError(f"the horizon T must be a finite number >= 1, got {horizon!r}.")
        self.horizon = float(horizon)
        self._log_term = _box_log_term(self.horizon, model.n_states, model.n_actions)
        super().__init__(model, [], counts, time, epsilon, support)
        # Read once per solve (thousands per run): the blocks' slices, kept rather than rebuilt each time.
        self._views = {name: (block.slice, block.shape) for name, block in self.blocks.items()}

    def occupancy(self, x: np.ndarray) -> np.ndarray:
        """ρ (S, A) from a solution vector."""
        where, shape = self._views["occupancy"]
        return np.asarray(x)[where].reshape(shape)

    def joint(self, x: np.ndarray) -> np.ndarray:
        """p from a solution vector: (S, A, S) on the dense support, else (nnz,) in the support's entry order."""
        where, shape = self._views["joint"]
        return np.asarray(x)[where].reshape(shape)

    @staticmethod
    def _confidence_nonzeros(nnz: int, n_pairs: int) -> int:
        return 2 * 2 * nnz                          # two box rows per entry (p, ρ)

    def _add_confidence_rows(self, rho: np.ndarray, p: np.ndarray) -> None:
        triple = np.arange(p.size)
        rho_of_triple = rho.ravel()[self.support.pairs]
        # box_upper: p - (P^ + b) ρ <= 0;  box_lower: -p + (P^ - b) ρ <= 0
        for name, sign in (("box_upper", 1.0), ("box_lower", -1.0)):
            first = self.linear.add(name, p.size, triple, p.ravel(), sign, -np.inf, 0.0)
            self.linear.add_parameters(name, first, triple, rho_of_triple)

    @property
    def radius(self) -> np.ndarray:
        """``b(s,a)`` at the current counts and the horizon."""
        return box_radius(self.visits, self.horizon, self.model.n_states, self.model.n_actions)

    def kernel_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Entrywise lower and upper bounds ``P^ ∓ b`` of the implied kernel: shape (S, A, S) each on the dense
        support, else (nnz,) at the support's entries (the kernel is 0 off the support)."""
        if self.support.is_dense:
            p_hat, b = self.empirical_kernel, self.radius[:, :, None]
        else:
            p_hat, b = self.empirical_entries(), self.radius.ravel()[self.support.pairs]
        return p_hat - b, p_hat + b

    def _set_confidence(self) -> None:
        """Recompute the box coefficients of the pairs whose counts changed since the last call.

        A pair's coefficients depend only on its own counts and on ``T`` (the epoch start is
        recorded, not used), so an epoch that visited a few pairs rewrites only their entries
        (``2 S`` each on the dense support). Every entry is computed by the same elementwise arithmetic
        as :meth:`kernel_bounds`, so the values are bit-identical to a full recomputation.
        """
        support = self.support
        flat = self._counts.reshape(support.n_pairs, -1) if support.is_dense else self._counts
        previous = getattr(self, "_confidence_counts", None)
        if previous is None:
            pairs = np.arange(support.n_pairs)
            self._visited = np.zeros(support.n_pairs, dtype=bool)
        elif support.is_dense:
            # the changed entries' pairs marked (a row-wise any over S-entry rows costs more, per row, than this)
            changed = np.zeros(support.n_pairs, dtype=bool)
            changed[(flat != previous).ravel().nonzero()[0] // flat.shape[1]] = True
            pairs = changed.nonzero()[0]
        else:
            pairs = np.unique(support.pairs[flat != previous])
        if pairs.size and support.is_dense:
            self._set_box_rows(pairs, flat.take(pairs, axis=0))     # take: cheaper than fancy indexing here
        elif pairs.size:
            self._set_sparse_box_rows(pairs)
        self._confidence_counts = flat.copy()

    def visited_pairs(self) -> np.ndarray:
        """Which pairs (flat ``s·A + a``) have at least one observed transition, shape (S·A,) (kept as the counts
        are set, not recomputed: read by the box column generation at every solve)."""
        return self._visited

    def _box_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The parameter values of the rows ``box_upper`` and ``box_lower`` as writable (S·A, S) views (dense
        support), made again only if the parameter array itself is replaced or the views are no longer views of it
        (a deep copy of the program copies them apart)."""
        values = self.linear.writable_values()
        kept = getattr(self, "_box_row_views", None)
        if kept is None or kept[0] is not values or kept[1].base is not values or kept[2].base is not values:
            upper, lower = self._box_values()
            n_pairs = self.support.n_pairs
            kept = self._box_row_views = (values, upper.reshape(n_pairs, -1), lower.reshape(n_pairs, -1))
        return kept[1], kept[2]

    def _box_values(self) -> tuple[np.ndarray, np.ndarray]:
        """The parameter values of the rows ``box_upper`` and ``box_lower`` (writable views)."""
        groups = self.linear.param_groups
        return self.linear.writable_values()[groups["box_upper"]], self.linear.writable_values()[groups["box_lower"]]

    def _set_box_rows(self, pairs: np.ndarray, counts: np.ndarray) -> None:
        """Write ``-(P^ + b)`` and ``P^ - b`` for the flat pair indices ``pairs`` from their counts (k, S)."""
        visits = np.add.reduce(counts, axis=1)
        scale = np.maximum(1.0, visits)                     # P^'s divisor and the radius' max(1, N): one array
        p_hat = counts / scale[:, None]
        b = _box_radius_of(scale, self._log_term)[:, None]
        upper_rows, lower_rows = self._box_rows()
        upper_rows[pairs] = -(p_hat + b)
        lower_rows[pairs] = p_hat - b
        self._visited[pairs] = visits > 0

    def _set_sparse_box_rows(self, pairs: np.ndarray) -> None:
        """:meth:`_set_box_rows` on a sparse support: the entries of ``pairs`` (sorted flat pair indices)."""
        support = self.support
        sizes = support.row_counts[pairs]
        # the entries of each pair, one after the other: its first entry plus 0, 1, ..., size - 1
        local = np.repeat(np.arange(pairs.size), sizes)
        entries = support.indptr[pairs][local] + (np.arange(local.size) - np.repeat(np.cumsum(sizes) - sizes, sizes))
        counts = self._counts[entries]
        visits = np.add.reduceat(counts, np.cumsum(sizes) - sizes)
        p_hat = counts / np.maximum(1.0, visits)[local]
        b = box_radius(visits, self.horizon, support.n_states, support.n_actions)[local]
        upper_values, lower_values = self._box_values()
        upper_values[entries] = -(p_hat + b)
        lower_values[entries] = p_hat - b
        self._visited[pairs] = (visits > 0) & (sizes > 0)        # reduceat reads on past an empty pair's range

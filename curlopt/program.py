"""The abstract ε-tight programs, as backend-neutral data (docs/math.md §2 and §3).

A program is data, not solver calls. It holds

* one vector of variables ``x``, made of named blocks (``occupancy`` ρ, and for the
  optimistic program ``joint`` p and ``deviation`` α), each with bounds;
* linear rows ``lower <= A x <= upper``. ``A`` is a constant sparse matrix plus
  *parameter entries*: coefficients at fixed (row, column) positions whose values
  change between epochs (the kernel, the empirical kernel, the radius β). The
  two parts never share a position;
* the objective ``f(R x)`` (maximised) and the constraint rows ``g_m(C x) <= -ε``,
  with ``R`` and ``C`` constant sparse maps onto ρ.

Backends compile the structure once and, before each solve, push only the
parameter values and the tightness ε that changed. Nothing here imports a solver.

Both programs drop the last flow-balance row: the flow rows always sum to zero
(given the total-mass and link rows), so one is redundant, and redundant equality
rows hurt interior-point solvers. The solution satisfies the dropped row too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .errors import ModelError, ProgramError
from .model import CMDP, check_distribution

__all__ = [
    "VariableBlock",
    "LinearRows",
    "Program",
    "OccupancyProgram",
    "JointProgram",
    "OptimisticProgram",
    "tightness",
    "EPSILON_MAX",
    "TIGHTNESS_CONSTANT_MAX",
    "l1_radius",
    "RADII",
    "BoxOptimisticProgram",
    "box_radius",
]


#: The largest tightness ε a program takes. Every backend represents it exactly and far inside its solver's
#: finite range (HiGHS reads a bound beyond ±1e20 as infinite; Ipopt's default infinity is 1e19); at 1e9
#: Clarabel alone already called an ε-tight program that cannot hold "infeasible_inaccurate" where it says
#: "infeasible" at 1e6. With costs of order 1, any ε above a few units makes the ε-tight program infeasible.
EPSILON_MAX = 1e6
#: The largest tightness constant K_ε: ``max_{τ >= 1} sqrt(ln τ / τ) = 1/sqrt(e)`` (at τ = e), so
#: ``ε = K_ε sqrt(ln τ / τ) <= K_ε / sqrt(e)``; rounded down so that every ε of the schedule is <= EPSILON_MAX.
TIGHTNESS_CONSTANT_MAX = float(math.floor(EPSILON_MAX * math.sqrt(math.e)))  # 1,648,721


def _number(value: Any) -> float:
    """``float(value)`` for a real number (not a bool or a string), else NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return math.nan
    return float(value)


def _finite_at_least(value: Any, name: str, lower: float) -> float:
    """``float(value)`` when it is a finite number >= ``lower``, else a ProgramError naming ``name``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ProgramError(f"{name} must be a number >= {lower:g}, got {value!r}.") from None
    if not math.isfinite(number) or number < lower:
        raise ProgramError(f"{name} must be a finite number >= {lower:g}, got {value!r}.")
    return number


def tightness(time: float, constant: float = 1.0, horizon_lower_bound: float | None = None) -> float:
    """The tightness schedule ``ε = K_ε sqrt(ln τ / τ)``, ``τ = max(t, T_l)`` (docs/math.md §4).

    Parameters
    ----------
    time : float
        The epoch's start time ``t_e >= 1``.
    constant : float, default 1
        ``0 <= K_ε <= TIGHTNESS_CONSTANT_MAX`` (so that ``ε <= EPSILON_MAX``).
    horizon_lower_bound : float, optional
        A known lower bound ``T_l`` on the horizon.

    Raises
    ------
    ProgramError
        For a time that is not a finite number >= 1, or a constant outside ``[0, TIGHTNESS_CONSTANT_MAX]``.
    """
    if not math.isfinite(_number(time)) or time < 1:
        raise ProgramError(f"time must be a finite number >= 1, got {time!r}.")
    if not math.isfinite(_number(constant)) or constant < 0:
        raise ProgramError(f"the tightness constant must be a finite number >= 0 (K_ε), got {constant!r}.")
    if constant > TIGHTNESS_CONSTANT_MAX:
        raise ProgramError(
            f"the tightness constant must be at most {TIGHTNESS_CONSTANT_MAX:.0f} (K_ε; then ε <= {EPSILON_MAX:g},"
            f" the largest ε a program takes), got {constant!r}."
        )
    tau = float(time)
    if horizon_lower_bound is not None:
        if not math.isfinite(horizon_lower_bound) or horizon_lower_bound < 1:
            raise ProgramError(f"the horizon lower bound must be a finite number >= 1, got {horizon_lower_bound!r}.")
        tau = max(tau, float(horizon_lower_bound))
    return constant * math.sqrt(math.log(tau) / tau)


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


def l1_radius(visits: np.ndarray, time: float, n_states: int, n_actions: int, kind: str = "analysis") -> np.ndarray:
    """The L1 confidence radius ``β(s,a)`` of the optimistic program at epoch start ``t = time``.

    Parameters
    ----------
    visits : ndarray
        ``N(s,a)``, visits before the epoch.
    time : float
        The epoch start ``t_e >= 1``.
    n_states, n_actions : int
        ``S`` and ``A``.
    kind : {"analysis", "experiment"}, default "analysis"
        ``analysis``: ``β = sqrt(14 S ln(2 A t) / max(1, N))``, the radius of the
        paper's regret analysis; ``experiment``: ``β = sqrt(S ln(A t) / max(1, N))``,
        the radius its simulations used (much smaller: on the queue at
        ``t = 5·10^5`` a pair needs 96 visits for ``β < 1`` rather than 1,394).
    """
    if kind == "analysis":
        return np.sqrt(14.0 * n_states * math.log(2.0 * n_actions * time) / np.maximum(1.0, visits))
    if kind == "experiment":
        return np.sqrt(n_states * math.log(n_actions * time) / np.maximum(1.0, visits))
    raise ProgramError(f"radius must be one of {', '.join(map(repr, RADII))}, got {kind!r}.")


def check_kernel(model: CMDP, kernel: Any) -> np.ndarray:
    """``kernel`` as a float array of shape (S, A, S) whose rows are distributions, else a ProgramError."""
    S, A = model.n_states, model.n_actions
    q = np.asarray(kernel, dtype=float)
    if q.shape != (S, A, S):
        raise ProgramError(f"kernel must have shape (S, A, S) = ({S}, {A}, {S}), got {q.shape}.")
    if not np.all(np.isfinite(q)):
        raise ProgramError("kernel contains NaN or infinite entries.")
    try:
        check_distribution(q, "kernel")
    except ModelError as exc:
        raise ProgramError(str(exc)) from None
    return q


@dataclass(frozen=True)
class VariableBlock:
    """A named block of variables: ``x[start:start+size]`` reshaped to ``shape``."""

    name: str
    shape: tuple[int, ...]
    start: int
    lower: float = 0.0
    upper: float = math.inf

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def slice(self) -> slice:
        return slice(self.start, self.start + self.size)

    def indices(self) -> np.ndarray:
        """Column index of each variable, shaped like the block."""
        return np.arange(self.start, self.start + self.size).reshape(self.shape)


class LinearRows:
    """Rows ``lower <= (fixed + parameter entries) x <= upper`` with a fixed sparsity pattern.

    Attributes
    ----------
    fixed : scipy.sparse.csr_matrix
        The constant coefficients, shape (rows, columns).
    param_rows, param_cols : ndarray of int
        Position of each parameter entry.
    param_values : ndarray of float
        Current value of each parameter entry, **read-only**: a program changes its data through its
        ``update()`` method (which writes through :meth:`writable_values`), so that every backend sees the
        same data — a write that one backend would read and another ignore cannot happen.
    lower, upper : ndarray
        Row bounds (``±inf`` where absent; equal for equality rows).
    groups : dict of str to slice
        Row ranges by meaning (``mass``, ``flow``, ...), for reports.
    """

    def __init__(self, n_cols: int):
        self.n_cols = n_cols
        self._coo_rows: list[np.ndarray] = []
        self._coo_cols: list[np.ndarray] = []
        self._coo_vals: list[np.ndarray] = []
        self._param_rows: list[np.ndarray] = []
        self._param_cols: list[np.ndarray] = []
        self._lower: list[np.ndarray] = []
        self._upper: list[np.ndarray] = []
        self.groups: dict[str, slice] = {}
        self.param_groups: dict[str, slice] = {}
        self.n_rows = 0
        self.n_params = 0

    # -- construction ---------------------------------------------------------
    def add(self, name: str, count: int, rows: Any, cols: Any, values: Any, lower: Any, upper: Any) -> int:
        """Add ``count`` rows with constant entries at local ``rows``; return the first row's index."""
        first = self.n_rows
        self._coo_rows.append(np.asarray(rows, dtype=np.int64).ravel() + first)
        self._coo_cols.append(np.asarray(cols, dtype=np.int64).ravel())
        self._coo_vals.append(np.broadcast_to(np.asarray(values, dtype=float), np.shape(np.ravel(rows))).ravel())
        self._lower.append(np.broadcast_to(np.asarray(lower, dtype=float), (count,)).copy())
        self._upper.append(np.broadcast_to(np.asarray(upper, dtype=float), (count,)).copy())
        self.groups[name] = slice(first, first + count)
        self.n_rows += count
        return first

    def add_parameters(self, name: str, first_row: int, rows: Any, cols: Any) -> None:
        """Declare parameter entries at local ``rows`` (relative to ``first_row``) and ``cols``."""
        rows = np.asarray(rows, dtype=np.int64).ravel() + first_row
        cols = np.asarray(cols, dtype=np.int64).ravel()
        self._param_rows.append(rows)
        self._param_cols.append(cols)
        self.param_groups[name] = slice(self.n_params, self.n_params + rows.size)
        self.n_params += rows.size

    def finish(self) -> None:
        """Freeze the pattern; check that constant and parameter positions are disjoint."""
        rows = np.concatenate(self._coo_rows) if self._coo_rows else np.zeros(0, np.int64)
        cols = np.concatenate(self._coo_cols) if self._coo_cols else np.zeros(0, np.int64)
        vals = np.concatenate(self._coo_vals) if self._coo_vals else np.zeros(0)
        self.fixed = sp.csr_matrix((vals, (rows, cols)), shape=(self.n_rows, self.n_cols))
        self.fixed.sum_duplicates()
        self.param_rows = np.concatenate(self._param_rows) if self._param_rows else np.zeros(0, np.int64)
        self.param_cols = np.concatenate(self._param_cols) if self._param_cols else np.zeros(0, np.int64)
        self._values = np.zeros(self.param_rows.size)
        self._readonly = self._values.view()
        self._readonly.flags.writeable = False
        self.lower = np.concatenate(self._lower)
        self.upper = np.concatenate(self._upper)
        overlap = self.fixed[self.param_rows, self.param_cols]
        if self.param_rows.size and np.any(np.asarray(overlap) != 0):
            raise AssertionError("a parameter entry shares its position with a constant entry")
        keys = self.param_rows * self.n_cols + self.param_cols
        if np.unique(keys).size != keys.size:
            raise AssertionError("two parameter entries share a position")
        del self._coo_rows, self._coo_cols, self._coo_vals, self._param_rows, self._param_cols
        del self._lower, self._upper

    # -- use ------------------------------------------------------------------
    @property
    def param_values(self) -> np.ndarray:
        """The current parameter values, as a read-only view (see the class docstring)."""
        return self._readonly

    def writable_values(self) -> np.ndarray:
        """The parameter values, writable: for the owning program's ``update()`` only."""
        return self._values

    def matrix(self) -> sp.csr_matrix:
        """The full current matrix (constant plus parameter entries)."""
        params = sp.csr_matrix(
            (self.param_values, (self.param_rows, self.param_cols)), shape=(self.n_rows, self.n_cols)
        )
        return (self.fixed + params).tocsr()

    def is_equality(self) -> np.ndarray:
        """Boolean mask of equality rows."""
        return self.lower == self.upper


class Program:
    """Common part of the occupancy and optimistic programs.

    Attributes
    ----------
    model : CMDP
    blocks : dict of str to VariableBlock
    n_vars : int
    linear : LinearRows
    reward_map : scipy.sparse.csr_matrix, shape (K, n_vars)
        ``λ = reward_map @ x``.
    cost_map : scipy.sparse.csr_matrix, shape (d, n_vars)
        ``ζ = cost_map @ x``.
    epsilon : float
        Current tightness ε; the constraint rows read ``g_m(ζ) <= -ε``.
    version : int
        Increases with every update, so a compiled backend knows when to re-read data.
    """

    kind: str = "program"

    def __init__(self, model: CMDP, blocks: list[tuple[str, tuple[int, ...]]]):
        if not isinstance(model, CMDP):
            raise ProgramError(f"a program needs a curlopt CMDP model, got {type(model).__name__}.")
        self.model = model
        self.blocks: dict[str, VariableBlock] = {}
        start = 0
        for name, shape in blocks:
            block = VariableBlock(name, shape, start)
            self.blocks[name] = block
            start += block.size
        self.n_vars = start
        self.linear = LinearRows(self.n_vars)
        S, A = model.n_states, model.n_actions
        rho = self.blocks["occupancy"].indices().ravel()
        self.reward_map = sp.csr_matrix(
            (model.rewards.reshape(model.n_rewards, S * A).ravel(),
             (np.repeat(np.arange(model.n_rewards), S * A), np.tile(rho, model.n_rewards))),
            shape=(model.n_rewards, self.n_vars),
        )
        self.cost_map = sp.csr_matrix(
            (model.costs.reshape(model.n_costs, S * A).ravel(),
             (np.repeat(np.arange(model.n_costs), S * A), np.tile(rho, model.n_costs))),
            shape=(model.n_costs, self.n_vars),
        )
        self.epsilon = 0.0
        self.version = 0

    # -- facts ----------------------------------------------------------------
    @property
    def objective(self):
        return self.model.objective

    @property
    def constraints(self):
        return self.model.constraints

    def column_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bound of every variable."""
        lower = np.empty(self.n_vars)
        upper = np.empty(self.n_vars)
        for block in self.blocks.values():
            lower[block.slice] = block.lower
            upper[block.slice] = block.upper
        return lower, upper

    def occupancy(self, x: np.ndarray) -> np.ndarray:
        """ρ (S, A) from a solution vector."""
        return np.asarray(x)[self.blocks["occupancy"].slice].reshape(self.blocks["occupancy"].shape)

    def joint(self, x: np.ndarray) -> np.ndarray | None:
        """p (S, A, S) from a solution vector, or None for a program without it."""
        block = self.blocks.get("joint")
        return None if block is None else np.asarray(x)[block.slice].reshape(block.shape)

    def _set_epsilon(self, epsilon: Any) -> None:
        """Set ε after checking ``0 <= ε <= EPSILON_MAX`` (before any backend sees it)."""
        value = _finite_at_least(epsilon, "epsilon", 0.0)
        if value > EPSILON_MAX:
            raise ProgramError(
                f"epsilon must be at most {EPSILON_MAX:g} (the largest tightness every backend represents"
                f" exactly; an ε-tight program with a larger ε cannot hold for costs of ordinary size), got {epsilon!r}."
            )
        self.epsilon = value

    def residuals(self, x: np.ndarray, include_constraints: bool = True) -> dict[str, float]:
        """Largest violation of each group of rows at ``x`` (0 when satisfied).

        Groups: ``bounds`` (variable bounds), each linear row group, and
        ``constraints`` (``g_m(ζ) + ε``) when ``include_constraints``.
        """
        x = np.asarray(x, dtype=float)
        lower, upper = self.column_bounds()
        out = {"bounds": float(max(0.0, np.max(lower - x), np.max(x - upper)))}
        values = self.linear.matrix() @ x
        violation = np.maximum(self.linear.lower - values, values - self.linear.upper)
        for name, rows in self.linear.groups.items():
            out[name] = float(max(0.0, violation[rows].max())) if rows.stop > rows.start else 0.0
        if include_constraints and self.constraints:
            costs = self.cost_map @ x
            out["constraints"] = float(max(0.0, max(g.value(costs) + self.epsilon for g in self.constraints)))
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model.name!r}, n_vars={self.n_vars}, rows={self.linear.n_rows})"


class OccupancyProgram(Program):
    """The occupancy program of docs/math.md §2 for a given kernel ``Q`` and tightness ε.

    maximise ``f(λ(ρ))`` over ρ >= 0 with ``Σ ρ = 1``, flow balance
    ``Σ_a ρ(s',a) = Σ_{s,a} Q(s'|s,a) ρ(s,a)`` and ``g_m(ζ(ρ)) <= -ε``.

    Parameters
    ----------
    model : CMDP
    kernel : array_like, shape (S, A, S), optional
        ``Q``; default the model's own kernel (then required).
    epsilon : float, default 0
        Tightness ε >= 0.
    """

    kind = "occupancy"

    def __init__(self, model: CMDP, kernel: Any = None, epsilon: float = 0.0):
        S, A = model.n_states, model.n_actions
        super().__init__(model, [("occupancy", (S, A))])
        if kernel is None and model.kernel is None:
            raise ProgramError(
                f"the occupancy program needs a kernel: model {model.name!r} has none, pass kernel=... (shape (S, A, S))."
            )
        lin = self.linear
        n = S * A
        lin.add("mass", 1, np.zeros(n), np.arange(n), 1.0, 1.0, 1.0)
        # Flow rows s' = 0..S-2: every coefficient Σ_a ρ(s',a) - Σ Q(s'|s,a) ρ(s,a) depends on Q.
        first = lin.add("flow", S - 1, np.zeros(0), np.zeros(0), 0.0, 0.0, 0.0)
        rows, cols = np.meshgrid(np.arange(S - 1), np.arange(n), indexing="ij")
        lin.add_parameters("flow", first, rows, cols)
        lin.finish()
        self._diagonal = (np.arange(S - 1)[:, None] == np.repeat(np.arange(S), A)[None, :]).astype(float)
        self.kernel = None
        self.update(kernel=model.kernel if kernel is None else kernel, epsilon=epsilon)

    def update(self, kernel: Any = None, epsilon: Any = None) -> None:
        """Set a new kernel and/or tightness; the structure is unchanged.

        Raises
        ------
        ProgramError
            If the kernel has the wrong shape or is not a transition kernel.
        """
        S, A = self.model.n_states, self.model.n_actions
        if kernel is not None:
            q = check_kernel(self.model, kernel)
            self.kernel = q.copy()
            # coefficient of ρ(s,a) in row s': δ(s', s) - Q(s'|s,a)
            self.linear.writable_values()[:] = (self._diagonal - q.reshape(S * A, S).T[: S - 1]).ravel()
        if epsilon is not None:
            self._set_epsilon(epsilon)
        self.version += 1


class JointProgram(Program):
    """What the optimistic programs share: variables ρ (S, A) and p (S, A, S) >= 0, and the rows
    ``Σ ρ = 1``, ``ρ(s,a) = Σ_{s'} p(s,a,s')`` and flow ``Σ_a ρ(s,a) = Σ_{s'',a} p(s'',a,s)``.

    ρ is kept as its own block (rather than written as ``Σ_{s'} p``) so that each
    confidence row has three entries, not S + 2. Subclasses add their confidence
    rows (:meth:`_add_confidence_rows`) and recompute their parameter values from
    the counts (:meth:`_set_confidence`).
    """

    def __init__(self, model: CMDP, extra_blocks: list[tuple[str, tuple[int, ...]]], counts: Any, time: float,
                 epsilon: float):
        S, A = model.n_states, model.n_actions
        super().__init__(model, [("occupancy", (S, A)), ("joint", (S, A, S)), *extra_blocks])
        rho = self.blocks["occupancy"].indices()          # (S, A)
        p = self.blocks["joint"].indices()                # (S, A, S)
        n_pairs, n_triples = S * A, S * A * S
        lin = self.linear
        lin.add("mass", 1, np.zeros(n_pairs), rho.ravel(), 1.0, 1.0, 1.0)
        # link: ρ(s,a) - Σ_{s'} p(s,a,s') = 0
        pair = np.arange(n_pairs)
        lin.add(
            "link", n_pairs,
            np.concatenate([pair, np.repeat(pair, S)]),
            np.concatenate([rho.ravel(), p.ravel()]),
            np.concatenate([np.ones(n_pairs), -np.ones(n_triples)]),
            0.0, 0.0,
        )
        # flow for s = 0..S-2: Σ_a ρ(s,a) - Σ_{s'',a} p(s'',a,s) = 0
        flow_rows_rho = np.repeat(np.arange(S - 1), A)
        flow_rows_p = np.broadcast_to(np.arange(S)[None, None, :], (S, A, S))[:, :, : S - 1].ravel()
        lin.add(
            "flow", S - 1,
            np.concatenate([flow_rows_rho, flow_rows_p]),
            np.concatenate([rho[: S - 1].ravel(), p[:, :, : S - 1].ravel()]),
            np.concatenate([np.ones(flow_rows_rho.size), -np.ones(flow_rows_p.size)]),
            0.0, 0.0,
        )
        self._add_confidence_rows(rho, p)
        lin.finish()
        self.counts = np.zeros((S, A, S))
        self.time = 1.0
        self.update(counts=np.zeros((S, A, S)) if counts is None else counts, time=time, epsilon=epsilon)

    def _add_confidence_rows(self, rho: np.ndarray, p: np.ndarray) -> None:
        raise NotImplementedError

    def _set_confidence(self) -> None:
        """Recompute the parameter values from ``self.counts`` and ``self.time``."""
        raise NotImplementedError

    @property
    def visits(self) -> np.ndarray:
        """``N(s,a) = Σ_{s'} n(s,a,s')``."""
        return self.counts.sum(axis=2)

    @property
    def empirical_kernel(self) -> np.ndarray:
        """``P^(s'|s,a) = n(s,a,s') / max(1, N(s,a))`` (zeros for unvisited pairs)."""
        return self.counts / np.maximum(1.0, self.visits)[:, :, None]

    def update(self, counts: Any = None, time: Any = None, epsilon: Any = None) -> None:
        """Set new counts, time and/or tightness; the structure is unchanged.

        Raises
        ------
        ProgramError
            If counts have the wrong shape or negative/NaN entries, or time < 1.
        """
        S, A = self.model.n_states, self.model.n_actions
        if counts is not None:
            n = np.asarray(counts, dtype=float)
            if n.shape != (S, A, S):
                raise ProgramError(f"counts must have shape (S, A, S) = ({S}, {A}, {S}), got {n.shape}.")
            if not np.all(np.isfinite(n)) or np.any(n < 0):
                raise ProgramError("counts must be finite and non-negative.")
            self.counts = n.copy()
        if time is not None:
            self.time = _finite_at_least(time, "time", 1.0)
        if counts is not None or time is not None:
            self._set_confidence()
        if epsilon is not None:
            self._set_epsilon(epsilon)
        self.version += 1


class OptimisticProgram(JointProgram):
    """The optimistic ε-tight program of docs/math.md §3 over joint probabilities ``p(s,a,s')``.

    Variables ρ (S, A), p (S, A, S) and α (S, A, S), all >= 0. Rows: those of
    :class:`JointProgram`; ``|p(s,a,s') - P^(s'|s,a) ρ(s,a)| <= α(s,a,s')``;
    ``Σ_{s'} α(s,a,s') <= β(s,a) ρ(s,a)``; and ``g_m(ζ) <= -ε``.

    Parameters
    ----------
    model : CMDP
    counts : array_like, shape (S, A, S), optional
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

    Raises
    ------
    ProgramError
        For an unknown ``radius`` or a ``radius_scale`` that is not a finite number >= 0.
    """

    kind = "optimistic"

    def __init__(self, model: CMDP, counts: Any = None, time: float = 1.0, epsilon: float = 0.0,
                 radius: str = "analysis", radius_scale: float = 1.0):
        S, A = model.n_states, model.n_actions
        # Set before the base class computes the first radius.
        self.radius_kind, self.radius_scale = check_radius(radius, radius_scale)
        super().__init__(model, [("deviation", (S, A, S))], counts, time, epsilon)

    def _add_confidence_rows(self, rho, p):
        S = self.model.n_states
        alpha = self.blocks["deviation"].indices()
        n_pairs, n_triples = rho.size, p.size
        triple = np.arange(n_triples)
        rho_of_triple = np.repeat(rho.ravel(), S)
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
        first = lin.add("radius", n_pairs, np.repeat(pair, S), alpha.ravel(), 1.0, -np.inf, 0.0)
        lin.add_parameters("radius", first, pair, rho.ravel())

    @property
    def radius(self) -> np.ndarray:
        """``β(s,a)`` at the current counts and time (the chosen radius times ``radius_scale``)."""
        beta = l1_radius(self.visits, self.time, self.model.n_states, self.model.n_actions, self.radius_kind)
        return beta if self.radius_scale == 1.0 else self.radius_scale * beta

    def _set_confidence(self) -> None:
        p_hat = self.empirical_kernel.ravel()
        values, groups = self.linear.writable_values(), self.linear.param_groups
        values[groups["deviation_upper"]] = -p_hat
        values[groups["deviation_lower"]] = p_hat
        values[groups["radius"]] = -self.radius.ravel()


def box_radius(visits: np.ndarray, horizon: float, n_states: int, n_actions: int) -> np.ndarray:
    """The per-entry radius ``b(s,a) = min(1, sqrt(ln(2 S² A T²) / (2 max(1, N(s,a)))))`` (docs/math.md §9)."""
    log_term = math.log(2.0 * n_states**2 * n_actions * float(horizon) ** 2)
    return np.minimum(1.0, np.sqrt(log_term / (2.0 * np.maximum(1.0, visits))))


class BoxOptimisticProgram(JointProgram):
    """UCRL-CMDP's optimistic program (docs/math.md §9): per-entry boxes instead of an L1 ball.

    Variables ρ (S, A) and p (S, A, S), both >= 0 (no α). Rows: those of
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
    counts : array_like, shape (S, A, S), optional
        Transition counts ``n(s,a,s')``; default zeros (no data).
    time : float, default 1
        The epoch start ``t_e >= 1`` (recorded only: the radius uses ``T``).
    epsilon : float, default 0
        Tightness ε >= 0.
    """

    kind = "box-optimistic"

    def __init__(self, model: CMDP, horizon: float, counts: Any = None, time: float = 1.0, epsilon: float = 0.0):
        if isinstance(horizon, bool) or not isinstance(horizon, (int, float, np.integer, np.floating)) \
                or not math.isfinite(horizon) or horizon < 1:
            raise ProgramError(f"the horizon T must be a finite number >= 1, got {horizon!r}.")
        self.horizon = float(horizon)
        super().__init__(model, [], counts, time, epsilon)
        # Read once per solve (thousands per run): the blocks' slices, kept rather than rebuilt each time.
        self._views = {name: (block.slice, block.shape) for name, block in self.blocks.items()}

    def occupancy(self, x: np.ndarray) -> np.ndarray:
        """ρ (S, A) from a solution vector."""
        where, shape = self._views["occupancy"]
        return np.asarray(x)[where].reshape(shape)

    def joint(self, x: np.ndarray) -> np.ndarray:
        """p (S, A, S) from a solution vector."""
        where, shape = self._views["joint"]
        return np.asarray(x)[where].reshape(shape)

    def _add_confidence_rows(self, rho, p):
        S = self.model.n_states
        triple = np.arange(p.size)
        rho_of_triple = np.repeat(rho.ravel(), S)
        # box_upper: p - (P^ + b) ρ <= 0;  box_lower: -p + (P^ - b) ρ <= 0
        for name, sign in (("box_upper", 1.0), ("box_lower", -1.0)):
            first = self.linear.add(name, p.size, triple, p.ravel(), sign, -np.inf, 0.0)
            self.linear.add_parameters(name, first, triple, rho_of_triple)

    @property
    def radius(self) -> np.ndarray:
        """``b(s,a)`` at the current counts and the horizon."""
        return box_radius(self.visits, self.horizon, self.model.n_states, self.model.n_actions)

    def kernel_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Entrywise lower and upper bounds ``P^ ∓ b`` of the implied kernel, shape (S, A, S) each."""
        p_hat, b = self.empirical_kernel, self.radius[:, :, None]
        return p_hat - b, p_hat + b

    def _set_confidence(self) -> None:
        """Recompute the box coefficients of the pairs whose counts changed since the last call.

        A pair's coefficients depend only on its own counts and on ``T`` (the epoch start is
        recorded, not used), so an epoch that visited a few pairs rewrites only their ``2 S``
        entries each. Every entry is computed by the same elementwise arithmetic as
        :meth:`kernel_bounds`, so the values are bit-identical to a full recomputation.
        """
        S = self.model.n_states
        flat = self.counts.reshape(-1, S)
        previous = getattr(self, "_confidence_counts", None)
        if previous is None:
            pairs = np.arange(flat.shape[0])
        else:
            pairs = np.flatnonzero(np.any(flat != previous.reshape(-1, S), axis=1))
        if pairs.size:
            self._set_box_rows(pairs, flat[pairs])
        self._confidence_counts = self.counts.copy()

    def _set_box_rows(self, pairs: np.ndarray, counts: np.ndarray) -> None:
        """Write ``-(P^ + b)`` and ``P^ - b`` for the flat pair indices ``pairs`` from their counts (k, S)."""
        S = self.model.n_states
        visits = counts.sum(axis=1)
        p_hat = counts / np.maximum(1.0, visits)[:, None]
        b = box_radius(visits, self.horizon, S, self.model.n_actions)[:, None]
        entries = (pairs[:, None] * S + np.arange(S)).ravel()
        groups = self.linear.param_groups
        upper_values = self.linear.writable_values()[groups["box_upper"]]   # views into the values
        lower_values = self.linear.writable_values()[groups["box_lower"]]
        upper_values[entries] = -(p_hat + b).ravel()
        lower_values[entries] = (p_hat - b).ravel()

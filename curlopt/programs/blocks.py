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
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ProgramError
from ..models.cmdp import BYTES_PER_NONZERO, BYTES_PER_VARIABLE, CMDP, MAX_PROGRAM_BYTES
from ..utilities.library import Utility
from .policy import policy_of_clipped
from .support import Support, check_kernel
from .tightness import EPSILON_MAX, finite_at_least

__all__ = ['VariableBlock', 'LinearRows', 'Program', 'check_kernel', 'check_program_size', 'MAX_PROGRAM_BYTES']


# The size limit and the bytes per variable and nonzero of a program live with the models (curlopt.models.cmdp), whose
# builders refuse a model whose occupancy program could not be built, before allocating it.


def check_program_size(kind: str, model: CMDP, n_vars: int, n_nonzeros: int) -> None:
    """Refuse a program whose arrays would need more than :data:`MAX_PROGRAM_BYTES` (before building any).

    Raises
    ------
    ProgramError
        Naming the program, its counts of variables and nonzeros and the estimated size.
    """
    size = BYTES_PER_VARIABLE * int(n_vars) + BYTES_PER_NONZERO * int(n_nonzeros)
    if size > MAX_PROGRAM_BYTES:
        raise ProgramError(
            f"the {kind} program of model {model.name!r} (S={model.n_states}, A={model.n_actions}) would have"
            f" {int(n_vars):,} variables and {int(n_nonzeros):,} nonzeros, about {size / 2 ** 30:.3g} GiB for its"
            f" arrays alone, more than the limit of {MAX_PROGRAM_BYTES / 2 ** 30:g} GiB: build it on a sparse"
            " support (a model stored sparse, or support=...) or use a smaller model."
        )


@dataclass(frozen=True)
class VariableBlock:
    """A named block of variables: ``x[start:start+size]`` reshaped to ``shape``."""

    name: str
    shape: tuple[int, ...]
    start: int
    lower: float = 0.0
    upper: float = math.inf

    # Computed once (a block is frozen): a solve's result is read through them every epoch.
    @cached_property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @cached_property
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
        keys = np.sort(self.param_rows * self.n_cols + self.param_cols)
        if np.any(keys[1:] == keys[:-1]):
            raise AssertionError("two parameter entries share a position")
        del self._coo_rows, self._coo_cols, self._coo_vals, self._param_rows, self._param_cols
        del self._lower, self._upper

    def __getstate__(self) -> dict:
        # A copy (copy.deepcopy, pickle) copies each array on its own, so the read-only view would become a
        # separate array that the copy's update() no longer changes: it is left out and made again from the values.
        state = dict(vars(self))
        state.pop("_readonly", None)
        return state

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        if "_values" in state:
            self._readonly = self._values.view()
            self._readonly.flags.writeable = False

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

    def product(self, x: np.ndarray) -> np.ndarray:
        """``A x`` for the current matrix, without building it (the constant part's product plus each parameter
        entry's term): a solve's result is checked with it every epoch."""
        terms = self.param_values * x[self.param_cols]
        return self.fixed @ x + np.bincount(self.param_rows, weights=terms, minlength=self.n_rows)

    def magnitude(self, x: np.ndarray) -> np.ndarray:
        """``max_j |a_ij x_j|`` of every row: the size of the largest term its value is summed from."""
        x = np.abs(np.asarray(x, dtype=float))
        out = np.asarray(abs(self.fixed).multiply(x[None, :]).max(axis=1).todense()).ravel()
        np.maximum.at(out, self.param_rows, np.abs(self.param_values) * x[self.param_cols])
        return out

    def is_equality(self) -> np.ndarray:
        """Boolean mask of equality rows."""
        return self.lower == self.upper


@dataclass(frozen=True)
class _ResidualLayout:
    """What :meth:`Program.residuals` keeps of a program's structure between solves.

    ``lower``, ``upper``: the variable bounds (:meth:`Program.column_bounds`, read-only); ``names`` and ``starts``: the
    row groups and the first row of each, when the groups tile the rows in order, each non-empty (else ``starts`` is
    None); ``nonnegative``: every variable's bounds are ``[0, inf)`` (the occupancy programs'), so the bounds'
    residual is ``-min x``.
    """

    lower: np.ndarray
    upper: np.ndarray
    names: tuple[str, ...]
    starts: np.ndarray | None
    nonnegative: bool


def _bounds_residual(x: np.ndarray, layout: _ResidualLayout) -> float:
    """The ``bounds`` group of :meth:`Program.residuals`: ``max(0, max(lower - x), max(x - upper))``, with Python's
    max (a NaN maximum counts as satisfied). With bounds ``[0, inf)`` that is ``max(0, -min x)``, bit for bit:
    ``0 - x_j`` is ``-x_j`` but for the sign of a zero, which the max with 0 drops, and ``x - inf`` is ``-inf`` or
    NaN, neither of which a Python max keeps over 0."""
    if layout.nonnegative and x.shape == layout.lower.shape:
        return float(max(0.0, -float(np.minimum.reduce(x))))  # Python floats compare faster than a numpy scalar
    return float(max(0.0, np.maximum.reduce(layout.lower - x), np.maximum.reduce(x - layout.upper)))


class _Products:
    """``A x`` (:meth:`LinearRows.product`) and ``ζ = cost_map @ x`` in one gather, one product and one ``bincount``.

    A CSR product sums each row's terms one after the other from 0, in the stored order, exactly as ``bincount`` adds
    its weights; so the constant part, the parameter entries and the cost map each get their own bins (rows ``i``,
    ``n + i`` and ``2n + m``), and ``A x`` is the first two added, as :meth:`LinearRows.product` adds them: the same
    bits (a test checks them against the sparse products). Measured between two solves, when the processor's caches
    hold the solver's data, it takes two thirds of the time of the two sparse products, whose Python dispatch costs
    more than their arithmetic. The index arrays are built once; only the parameter values are copied in at each call.
    """

    def __init__(self, linear: LinearRows, cost_map: Any):
        # CSR matrices (the fixed part always is one; a cost map in another format takes the sparse product), read
        # in their stored order without a copy
        fixed, costs = sp.csr_matrix(linear.fixed), sp.csr_matrix(cost_map)
        self.fixed, self.fixed_data, self.fixed_indices = linear.fixed, linear.fixed.data, linear.fixed.indices
        self.param_rows, self.param_cols = linear.param_rows, linear.param_cols
        self.cost_map, self.cost_data, self.cost_indices = cost_map, cost_map.data, cost_map.indices
        n, d = linear.n_rows, costs.shape[0]
        self.n_rows, self.bins = n, 2 * n + d
        fixed_rows = np.repeat(np.arange(n, dtype=np.intp), np.diff(fixed.indptr))
        cost_rows = np.repeat(np.arange(d, dtype=np.intp), np.diff(costs.indptr))
        self.bin_of = np.concatenate([fixed_rows, n + linear.param_rows, 2 * n + cost_rows]).astype(np.intp)
        self.column_of = np.concatenate([fixed.indices, linear.param_cols, costs.indices]).astype(np.intp)
        self.coefficients = np.concatenate([fixed.data, linear.param_values, costs.data]).astype(float)
        first = fixed.data.size
        self.parameters = self.coefficients[first:first + linear.param_rows.size]  # a view, refreshed at each call

    def built_for(self, linear: LinearRows, cost_map: Any) -> bool:
        """Whether the arrays it was built from are still the program's, compared by identity: a program replaces its
        matrices (an episodic program's signal maps), never edits them in place, and its parameter positions are
        fixed."""
        fixed = linear.fixed
        return (fixed is self.fixed and fixed.data is self.fixed_data and fixed.indices is self.fixed_indices
                and linear.param_rows is self.param_rows and linear.param_cols is self.param_cols
                and cost_map is self.cost_map and cost_map.data is self.cost_data
                and cost_map.indices is self.cost_indices)

    def __call__(self, linear: LinearRows, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(A x, cost_map @ x)`` for the current parameter values."""
        self.parameters[...] = linear.param_values  # what np.copyto does, without its dispatch
        # take: the same elements as x[column_of], without fancy indexing's general machinery
        sums = np.bincount(self.bin_of, weights=self.coefficients * x.take(self.column_of), minlength=self.bins)
        n = self.n_rows
        return sums[:n] + sums[n:2 * n], sums[2 * n:]


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
    support : Support or None
        The successors the program's kernel entries or joint variables exist for
        (:mod:`curlopt.programs.support`); None for a program without either.
    """

    kind: str = "program"
    support: Support | None = None
    #: row groups (and ``constraints``) whose violation :meth:`residuals` measures relative to their own magnitude
    #: (see there); none by default: every row then holds masses or averages of signals, of order 1
    SCALED_GROUPS: frozenset[str] = frozenset()
    #: ``update(**data)``: new data and/or ε on the same structure (each program takes its own keywords, e.g.
    #: ``kernel``, ``counts``, ``time``, ``epsilon``); it increases :attr:`version`
    update: Callable[..., None]
    #: what :meth:`residuals` keeps of the structure between solves, with the key it was computed for
    _layout: tuple[Any, _ResidualLayout] | None = None
    #: the products :meth:`residuals` takes at every solve, flattened (built at the first)
    _product_form: _Products | None = None

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
        self.reward_map, self.cost_map = self._signal_maps()
        self.epsilon = 0.0
        self.version = 0

    def _signal_maps(self) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        """``(reward_map, cost_map)``: the model's per-pair signals on the ``occupancy`` block (S, A).

        A program whose occupancy has another layout (a step axis) or whose signals change between solves
        overrides this (see :mod:`curlopt.programs.episodic`).
        """
        model = self.model
        S, A = model.n_states, model.n_actions
        rho = self.blocks["occupancy"].indices().ravel()
        reward_map = sp.csr_matrix(
            (model.rewards.reshape(model.n_rewards, S * A).ravel(),
             (np.repeat(np.arange(model.n_rewards), S * A), np.tile(rho, model.n_rewards))),
            shape=(model.n_rewards, self.n_vars),
        )
        cost_map = sp.csr_matrix(
            (model.costs.reshape(model.n_costs, S * A).ravel(),
             (np.repeat(np.arange(model.n_costs), S * A), np.tile(rho, model.n_costs))),
            shape=(model.n_costs, self.n_vars),
        )
        return reward_map, cost_map

    # -- facts ----------------------------------------------------------------
    @property
    def objective(self) -> Utility:
        return self.model.objective

    @property
    def constraints(self) -> tuple[Utility, ...]:
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
        """p from a solution vector, or None for a program without it: shape (S, A, S) on the dense support,
        else (nnz,) in the support's entry order (:class:`~curlopt.programs.support.Support`)."""
        block = self.blocks.get("joint")
        return None if block is None else np.asarray(x)[block.slice].reshape(block.shape)

    def interpret(self, x: np.ndarray) -> dict[str, Any]:
        """What a solution vector means for the model: the fields a solve result carries.

        The one place a backend learns how to read a program's solution, so that a program of another criterion
        (e.g. an episodic program whose occupancy has a step axis) needs no backend code: it overrides this.

        Returns
        -------
        dict
            ``occupancy`` (clipped at 0), ``joint`` (clipped, or None), ``policy``, ``rewards`` (λ) and ``costs`` (ζ);
            optionally ``unreached``, the states the policy is uniform in for want of mass (the base class's).
        """
        model = self.model
        rho = np.maximum(self.occupancy(x), 0.0)  # np.clip(·, 0.0, None) calls this ufunc (at every solve)
        joint = self.joint(x)
        policy, unreached = policy_of_clipped(rho)
        return {
            "occupancy": rho,
            "joint": None if joint is None else np.maximum(joint, 0.0),
            "policy": policy,
            "unreached": unreached,
            "rewards": model.average_rewards(rho),
            "costs": model.average_costs(rho),
        }

    def _set_epsilon(self, epsilon: Any) -> None:
        """Set ε after checking ``0 <= ε <= EPSILON_MAX`` (before any backend sees it)."""
        value = finite_at_least(epsilon, "epsilon", 0.0)
        if value > EPSILON_MAX:
            raise ProgramError(
                f"epsilon must be at most {EPSILON_MAX:g} (the largest tightness every backend represents"
                f" exactly; an ε-tight program with a larger ε cannot hold for costs of ordinary size), got {epsilon!r}."
            )
        self.epsilon = value

    def residuals(self, x: np.ndarray, include_constraints: bool = True) -> dict[str, float]:
        """Largest violation of each group of rows at ``x`` (0 when satisfied).

        Groups: ``bounds`` (variable bounds), each linear row group, and
        ``constraints`` (``g_m(ζ) + ε``) when ``include_constraints``. A group of :attr:`SCALED_GROUPS` is
        divided by ``max(1, largest term of the row)`` (for ``constraints``, ``max(1, max_i |ζ_i|)``).

        Every solve's point is checked with this, so what does not change between solves (the variable bounds,
        where each row group starts) is computed once per structure (:meth:`_residual_layout`), and the row
        groups' maxima are taken in one pass; the values are those of a group-by-group computation, bit for bit
        (a maximum does not depend on the order it is taken in).
        """
        x = np.asarray(x, dtype=float)
        layout = self._residual_layout()
        out = {"bounds": _bounds_residual(x, layout)}
        linear = self.linear
        if x.shape == (self.n_vars,) and getattr(self.cost_map, "format", None) == "csr":
            values, costs = self._products(x)
        else:  # the sparse products themselves (a wrong size is refused with scipy's own message)
            values, costs = linear.product(x), self.cost_map @ x
        violation = np.maximum(linear.lower - values, values - linear.upper)
        if self.SCALED_GROUPS:
            # A group of SCALED_GROUPS is measured relative to max(1, max_j |a_ij x_j|), its largest term (for a
            # totals row ``ζ − Σ c q = 0``, the total ζ itself): a row that holds a total of order T (an episode of
            # H steps) is computed, by the solver and here, to a relative accuracy, so an absolute 1e-7 would ask of
            # it T times what a row of masses is asked. The max with 1 leaves every row whose terms are at most 1
            # (totals of order 1: a small model's, and every row of masses) measured exactly as before.
            magnitude = np.maximum(1.0, linear.magnitude(x))
            for name in self.SCALED_GROUPS & linear.groups.keys():
                rows = linear.groups[name]
                violation[rows] = violation[rows] / magnitude[rows]
        starts = layout.starts
        if starts is None:  # groups out of row order, or empty ones: one at a time
            for name, rows in linear.groups.items():
                out[name] = float(max(0.0, violation[rows].max())) if rows.stop > rows.start else 0.0
        elif starts.size:
            # Python's max: a NaN maximum (none for a finite x) counts as satisfied, as it always has
            for name, worst in zip(layout.names, np.maximum.reduceat(violation, starts).tolist(), strict=True):
                out[name] = max(0.0, worst)
        if include_constraints and self.constraints:
            epsilon = self.epsilon
            excess = max(g.value(costs) + epsilon for g in self.constraints)
            if "constraints" in self.SCALED_GROUPS:   # g(ζ) is as accurate as the totals ζ it reads
                excess /= max(1.0, float(np.max(np.abs(costs), initial=0.0)))
            out["constraints"] = float(max(0.0, excess))
        return out

    def _products(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(linear.product(x), cost_map @ x)``, the same bits in a handful of numpy calls (:class:`_Products`)."""
        products, linear, cost_map = self._product_form, self.linear, self.cost_map
        if products is None or not products.built_for(linear, cost_map):
            products = self._product_form = _Products(linear, cost_map)
        return products(linear, x)

    def _residual_layout(self) -> _ResidualLayout:
        """What :meth:`residuals` keeps of the structure (:class:`_ResidualLayout`). Kept until the blocks or the row
        groups change (a program's structure is fixed once built; the key makes a later change safe, not silent)."""
        key = (tuple(self.blocks.values()), tuple(self.linear.groups.items()), self.linear.n_rows)
        layout = self._layout
        if layout is not None and layout[0] == key:
            return layout[1]
        lower, upper = self.column_bounds()
        lower.flags.writeable = upper.flags.writeable = False
        names = tuple(self.linear.groups)
        ranges = list(self.linear.groups.values())
        tiled = all(rows.step in (None, 1) and rows.stop > rows.start for rows in ranges) and all(
            first.stop == second.start for first, second in zip(ranges[:-1], ranges[1:], strict=True)) and (
            not ranges or (ranges[0].start == 0 and ranges[-1].stop == self.linear.n_rows))
        starts = np.array([rows.start for rows in ranges], dtype=np.intp) if tiled else None
        nonnegative = bool(lower.size) and bool(np.all(lower == 0.0)) and bool(np.all(upper == math.inf))
        self._layout = (key, _ResidualLayout(lower, upper, names, starts, nonnegative))
        return self._layout[1]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model.name!r}, n_vars={self.n_vars}, rows={self.linear.n_rows})"

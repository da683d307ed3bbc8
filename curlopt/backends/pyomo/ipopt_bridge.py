"""A Pyomo model solved by Ipopt through cyipopt, without the AMPL Solver Library.

Pyomo's own ``cyipopt`` solver evaluates a model through PyNumero, which needs
the AMPL Solver Library (``pynumero_ASL``); that library cannot be pip-installed.
This module bridges a Pyomo model of a particular but common shape directly to
cyipopt's callback interface:

* **linear rows** — any Pyomo constraints whose body is linear in the variables.
  Each is read **once** with :func:`pyomo.repn.generate_standard_repn`
  (``compute_values=False``), so a coefficient, a constant or a bound that
  involves a *mutable* Param stays a Pyomo expression. The bridge records its
  position in the sparse matrix; before each solve it evaluates only those
  expressions (a bare ``ParamData`` is read directly) and writes the numbers into
  the fixed sparsity pattern;
* **smooth terms** — the objective and the nonlinear constraint rows, each a
  smooth function ``h(y)`` of a few linear aggregates ``y = B x + b`` (``B`` read
  from the aggregates' standard representation, once). Value, gradient and
  Hessian follow from ``h``'s derivatives by the chain rule,
  ``∇(h∘B) = Bᵀ∇h`` and ``∇²(h∘B) = Bᵀ∇²h B``; the Hessian pattern is the union
  of the terms' ``Bᵀ B`` patterns (restricted to the pairs ``(k, m)`` where
  ``∇²h`` can be non-zero), lower triangle. ``h`` is evaluated either by numpy
  callables (a curlopt utility's ``value/gradient/hessian``) or by symbolic
  differentiation of a Pyomo expression on the low-dimensional aggregate
  (:class:`PyomoEvaluator`).

Jacobian and Hessian structures depend only on which constraints are active (the
ε-tight program and its fallback differ by the g rows), and are computed once per
activity pattern. Nothing in Pyomo is touched while Ipopt iterates: the callbacks
are sparse matrix-vector products and a few small numpy calls.

Warm start: after a solve that ends with a solution, the primal point, the
constraint multipliers and the bound multipliers are kept (one set per activity
pattern); the next solve of that pattern starts from them with Ipopt's
``warm_start_init_point``. The first solve is a cold start from the given point.

This module imports pyomo and cyipopt at import time; :mod:`curlopt.backends.pyomo`
imports it only when a program is compiled.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import cyipopt
import numpy as np
import scipy.sparse as sp
from pyomo.core.base.param import ParamData
from pyomo.core.expr.calculus.derivatives import Modes, differentiate
from pyomo.core.expr.numvalue import is_constant, native_numeric_types, value
from pyomo.repn import generate_standard_repn

from ...errors import BackendOptionError, UtilityCodeError

__all__ = [
    "BridgeError",
    "NumpyEvaluator",
    "PyomoEvaluator",
    "AffineEvaluator",
    "ShiftedEvaluator",
    "SmoothTerm",
    "IpoptBridge",
    "BridgeResult",
    "IPOPT_STATUS_NAMES",
    "check_ipopt_options",
]

#: Ipopt's ApplicationReturnStatus codes
IPOPT_STATUS_NAMES = {
    0: "Solve_Succeeded",
    1: "Solved_To_Acceptable_Level",
    2: "Infeasible_Problem_Detected",
    3: "Search_Direction_Becomes_Too_Small",
    4: "Diverging_Iterates",
    5: "User_Requested_Stop",
    6: "Feasible_Point_Found",
    -1: "Maximum_Iterations_Exceeded",
    -2: "Restoration_Failed",
    -3: "Error_In_Step_Computation",
    -4: "Maximum_CpuTime_Exceeded",
    -5: "Maximum_WallTime_Exceeded",
    -10: "Not_Enough_Degrees_Of_Freedom",
    -11: "Invalid_Problem_Definition",
    -12: "Invalid_Option",
    -13: "Invalid_Number_Detected",
    -100: "Unrecoverable_Exception",
    -101: "NonIpopt_Exception_Thrown",
    -102: "Insufficient_Memory",
    -199: "Internal_Error",
}
#: statuses after which Ipopt's final point is a solution worth warm-starting from
SOLVED = (0, 1)
#: Ipopt's return codes of a run stopped at a limit (iterations, CPU time, wall time): its last iterate is returned
#: too, for the shared check to keep it when it holds the rows (or say why its objective is not finite)
STOPPED = (-1, -4, -5)
INFINITY = 1e20  # beyond Ipopt's nlp_{lower,upper}_bound_inf (1e19): no bound
DOMAIN_ERRORS = (ValueError, ZeroDivisionError, OverflowError, FloatingPointError)


class BridgeError(ValueError):
    """The Pyomo model has a shape the bridge cannot take, or inconsistent data."""


# ----------------------------------------------------------------------------
# Functions of the aggregates
# ----------------------------------------------------------------------------


class NumpyEvaluator:
    """``h`` from numpy callables ``value(y)``, ``gradient(y)``, ``hessian(y)``.

    Parameters
    ----------
    dim : int
    value, gradient, hessian : callable
    pairs : list of (k, m) or None
        Entries of the Hessian that may be non-zero (``None``: all).
    lower : ndarray, optional
        Open lower end of the domain: a point with ``y_k <= lower_k`` is an
        evaluation error (Ipopt then shortens its step).
    """

    def __init__(self, dim: int, value: Callable, gradient: Callable, hessian: Callable,
                 pairs: list[tuple[int, int]] | None = None, lower: np.ndarray | None = None):
        self.dim = dim
        self._value, self._gradient, self._hessian = value, gradient, hessian
        self.pairs = [(k, m) for k in range(dim) for m in range(dim)] if pairs is None else list(pairs)
        lower = np.full(dim, -np.inf) if lower is None else np.asarray(lower, dtype=float)
        self._lower = lower if np.any(np.isfinite(lower)) else None

    def in_domain(self, y: np.ndarray) -> bool:
        return self._lower is None or bool(np.all(y > self._lower))

    def value(self, y: np.ndarray) -> float:
        return float(self._value(y))

    def gradient(self, y: np.ndarray) -> np.ndarray:
        return np.asarray(self._gradient(y), dtype=float).reshape(self.dim)

    def hessian(self, y: np.ndarray) -> np.ndarray:
        return np.asarray(self._hessian(y), dtype=float).reshape(self.dim, self.dim)


class AffineEvaluator(NumpyEvaluator):
    """``h(y) = w·y + c``: zero Hessian (used for linear objectives such as an epigraph variable)."""

    def __init__(self, weights: Sequence[float], constant: float = 0.0):
        w = np.asarray(weights, dtype=float).reshape(-1)
        super().__init__(w.size, lambda y: float(w @ y + constant), lambda y: w, lambda y: np.zeros((w.size, w.size)),
                         pairs=[])


class ShiftedEvaluator:
    """``h(y, s) = base(y) - s``: a constraint body relaxed by a free variable ``s`` (phase-1 problems)."""

    def __init__(self, base: Any):
        self.base = base
        self.dim = base.dim + 1
        self.pairs = list(base.pairs)

    def in_domain(self, y: np.ndarray) -> bool:
        return self.base.in_domain(y[:-1])

    def value(self, y: np.ndarray) -> float:
        return self.base.value(y[:-1]) - float(y[-1])

    def gradient(self, y: np.ndarray) -> np.ndarray:
        return np.append(self.base.gradient(y[:-1]), -1.0)

    def hessian(self, y: np.ndarray) -> np.ndarray:
        out = np.zeros((self.dim, self.dim))
        out[:-1, :-1] = self.base.hessian(y[:-1])
        return out


class PyomoEvaluator:
    """``h`` from a Pyomo expression builder, differentiated symbolically on the aggregate.

    ``builder(y)`` receives ``dim`` scalar Pyomo variables of a private model and
    returns an expression. Gradient and Hessian expressions are derived once with
    :func:`pyomo.core.expr.calculus.derivatives.differentiate` (reverse symbolic
    mode); each evaluation sets the ``dim`` variables and evaluates them. Entries
    of the Hessian that differentiate to the constant 0 are structural zeros.
    """

    def __init__(self, dim: int, builder: Callable[[list], Any], lower: np.ndarray | None = None):
        import pyomo.environ as pe

        self.dim = dim
        self.model = pe.ConcreteModel(name="aggregate")
        self.model.y = pe.Var(range(dim), initialize=1.0)
        self._y = [self.model.y[k] for k in range(dim)]
        self.expr = builder(list(self._y))
        self._grad = list(differentiate(self.expr, wrt_list=self._y, mode=Modes.reverse_symbolic))
        self._hess: list[list[Any]] = []
        for g in self._grad:
            if type(g) in native_numeric_types:
                self._hess.append([0] * dim)
            else:
                self._hess.append(list(differentiate(g, wrt_list=self._y, mode=Modes.reverse_symbolic)))
        self.pairs = [
            (k, m) for k in range(dim) for m in range(dim)
            if not (type(self._hess[k][m]) in native_numeric_types and self._hess[k][m] == 0)
        ]
        lower = np.full(dim, -np.inf) if lower is None else np.asarray(lower, dtype=float)
        self._lower = lower if np.any(np.isfinite(lower)) else None

    def in_domain(self, y: np.ndarray) -> bool:
        return self._lower is None or bool(np.all(y > self._lower))

    def _set(self, y: np.ndarray) -> None:
        for var, v in zip(self._y, y, strict=True):
            var.set_value(float(v), skip_validation=True)

    def value(self, y: np.ndarray) -> float:
        self._set(y)
        return float(value(self.expr))

    def gradient(self, y: np.ndarray) -> np.ndarray:
        self._set(y)
        return np.array([float(value(g)) for g in self._grad])

    def hessian(self, y: np.ndarray) -> np.ndarray:
        self._set(y)
        out = np.zeros((self.dim, self.dim))
        for k, m in self.pairs:
            out[k, m] = value(self._hess[k][m])
        return out


@dataclass
class SmoothTerm:
    """A smooth function of linear aggregates: the objective, or the body of a nonlinear constraint.

    Attributes
    ----------
    evaluator : NumpyEvaluator or PyomoEvaluator
        ``h`` and its derivatives.
    aggregates : sequence of Pyomo expressions
        ``y``; each must be linear in the bridge's variables with constant coefficients.
    constraint : ConstraintData, optional
        For a constraint row: the Pyomo constraint whose body equals ``h(y)``
        (bounds and activity are read from it). ``None`` for the objective.
    expression : Pyomo expression, optional
        For the objective: the Pyomo expression of ``h(y)`` in the model, used by
        :meth:`IpoptBridge.check_terms` (a constraint's is its body).
    label : str
        For messages.
    """

    evaluator: Any
    aggregates: Sequence[Any]
    constraint: Any = None
    expression: Any = None
    label: str = ""
    # filled by the bridge
    map: sp.csr_matrix | None = field(default=None, repr=False)
    offset: np.ndarray | None = field(default=None, repr=False)
    support: np.ndarray | None = field(default=None, repr=False)
    dense: np.ndarray | None = field(default=None, repr=False)  # map restricted to support, (dim, |support|)

    def aggregate(self, x: np.ndarray) -> np.ndarray:
        return self.dense @ x[self.support] + self.offset

    def checked(self, x: np.ndarray) -> np.ndarray:
        """The aggregate at ``x``, or an Ipopt evaluation error outside ``h``'s domain."""
        y = self.aggregate(x)
        if not self.evaluator.in_domain(y):
            raise cyipopt.CyIpoptEvaluationError(f"{self.label}: aggregate {y} outside the domain")
        return y

    def value(self, x: np.ndarray) -> float:
        """``h(B x + b)``; an Ipopt evaluation error outside the domain or for a non-finite value."""
        try:
            result = self.evaluator.value(self.checked(x))
        except UtilityCodeError:  # a bug in the utility's code, not a point outside its domain
            raise
        except DOMAIN_ERRORS as exc:
            raise cyipopt.CyIpoptEvaluationError(f"{self.label}: {exc}") from None
        if not math.isfinite(result):
            raise cyipopt.CyIpoptEvaluationError(f"{self.label}: value {result} is not finite")
        return result

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """``Bᵀ ∇h`` restricted to the support columns."""
        try:
            return self.evaluator.gradient(self.checked(x)) @ self.dense
        except UtilityCodeError:
            raise
        except DOMAIN_ERRORS as exc:
            raise cyipopt.CyIpoptEvaluationError(f"{self.label}: {exc}") from None

    def hessian(self, x: np.ndarray) -> np.ndarray:
        """``∇²h`` at the aggregate, flattened row-major."""
        try:
            return self.evaluator.hessian(self.checked(x)).ravel()
        except UtilityCodeError:
            raise
        except DOMAIN_ERRORS as exc:
            raise cyipopt.CyIpoptEvaluationError(f"{self.label}: {exc}") from None


def _coefficient(expr: Any) -> tuple[float | None, Any]:
    """(number, None) for a constant coefficient, (None, expression) for one that involves mutable data."""
    if type(expr) in native_numeric_types:
        return float(expr), None
    if is_constant(expr):
        return float(value(expr)), None
    return None, expr


class _Dynamic:
    """Values read from Pyomo before each solve: bare mutable Params directly, other expressions by value()."""

    def __init__(self, exprs: list[Any]):
        self.params = [e for e in exprs if isinstance(e, ParamData)]
        self.param_slots = np.array([i for i, e in enumerate(exprs) if isinstance(e, ParamData)], dtype=np.int64)
        self.others = [(i, e) for i, e in enumerate(exprs) if not isinstance(e, ParamData)]
        self.size = len(exprs)

    def values(self) -> np.ndarray:
        out = np.empty(self.size)
        if self.params:
            out[self.param_slots] = np.fromiter((p.value for p in self.params), float, len(self.params))
        for i, e in self.others:
            out[i] = value(e)
        return out


def _current_bound(expr: Any, infinite: float) -> float:
    """A bound's current number (``infinite`` for None or an infinite value)."""
    if expr is None:
        return infinite
    number = float(value(expr))
    return number if math.isfinite(number) else infinite


def _bound(expr: Any, infinite: float) -> tuple[float | None, Any]:
    if expr is None:
        return infinite, None
    number, dynamic = _coefficient(expr)
    if dynamic is None and number is not None and not math.isfinite(number):
        number = infinite
    return number, dynamic


class _LinearRows:
    """Linear constraints as a sparse matrix with positions of the Param-dependent data."""

    def __init__(self, constraints: Sequence[Any], column: dict[int, int], n_cols: int):
        rows, cols, numbers, dyn_slots, dyn_exprs = [], [], [], [], []
        self.constant = np.zeros(len(constraints))
        self.lower = np.zeros(len(constraints))
        self.upper = np.zeros(len(constraints))
        bound_slots, bound_exprs = [], []  # slots into (constant | lower | upper) stacked
        n = len(constraints)
        for r, con in enumerate(constraints):
            repn = generate_standard_repn(con.body, compute_values=False, quadratic=False)
            if not repn.is_linear():
                raise BridgeError(f"constraint {con.name} is not linear; give it to the bridge as a SmoothTerm.")
            for coef, var in zip(repn.linear_coefs, repn.linear_vars, strict=True):
                if id(var) not in column:
                    raise BridgeError(
                        f"constraint {con.name} uses variable {var.name}, which the bridge was not given."
                    )
                number, dynamic = _coefficient(coef)
                rows.append(r)
                cols.append(column[id(var)])
                if dynamic is None:
                    numbers.append(number)
                else:
                    numbers.append(0.0)
                    dyn_slots.append(len(numbers) - 1)
                    dyn_exprs.append(dynamic)
            for slot, (number, dynamic) in enumerate(
                (_coefficient(repn.constant), _bound(con.lower, -INFINITY), _bound(con.upper, INFINITY))
            ):
                if dynamic is None:
                    (self.constant, self.lower, self.upper)[slot][r] = number
                else:
                    bound_slots.append(slot * n + r)
                    bound_exprs.append(dynamic)
        self.constraints = list(constraints)
        self.n_rows, self.n_cols = n, n_cols
        self.rows = np.asarray(rows, dtype=np.int64)
        self.cols = np.asarray(cols, dtype=np.int64)
        self.numbers = np.asarray(numbers, dtype=float)
        self.dyn_slots = np.asarray(dyn_slots, dtype=np.int64)
        self.dynamic = _Dynamic(dyn_exprs)
        self.bound_slots = np.asarray(bound_slots, dtype=np.int64)
        self.bound_dynamic = _Dynamic(bound_exprs)
        #: entries whose value is a mutable expression, as (row, col) — for tests and reports
        self.dynamic_positions = (self.rows[self.dyn_slots], self.cols[self.dyn_slots])

    def current(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Entry values, lower and upper row bounds (constant moved to the bounds), from Pyomo's current data."""
        values = self.numbers.copy()
        if self.dyn_slots.size:
            values[self.dyn_slots] = self.dynamic.values()
        stacked = np.concatenate([self.constant, self.lower, self.upper])
        if self.bound_slots.size:
            stacked[self.bound_slots] = self.bound_dynamic.values()
        n = self.n_rows
        constant, lower, upper = stacked[:n], stacked[n: 2 * n], stacked[2 * n:]
        lower = np.where(lower <= -INFINITY, -INFINITY, lower - constant)
        upper = np.where(upper >= INFINITY, INFINITY, upper - constant)
        return values, lower, upper

    def matrix(self) -> sp.csr_matrix:
        """The current matrix (for checks)."""
        values, _, _ = self.current()
        return sp.csr_matrix((values, (self.rows, self.cols)), shape=(self.n_rows, self.n_cols))


def _hessian_products(term: SmoothTerm) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Lower-triangle entries (i, j) of ``Bᵀ H B`` with, per contribution, the index k·dim+m of H and
    ``B_ki B_mj``."""
    dim = term.evaluator.dim
    if term.map is None:
        raise BridgeError(f"{term.label}: the term is not part of a bridge (its aggregate map is not read yet).")
    coo = term.map.tocoo()
    by_row = [(coo.col[coo.row == k], coo.data[coo.row == k]) for k in range(dim)]
    out_i, out_j, out_h, out_v = [], [], [], []
    for k, m in term.evaluator.pairs:
        ci, vi = by_row[k]
        cj, vj = by_row[m]
        if ci.size == 0 or cj.size == 0:
            continue
        ii, jj = np.meshgrid(ci, cj, indexing="ij")
        vv = np.outer(vi, vj)
        keep = ii >= jj
        out_i.append(ii[keep])
        out_j.append(jj[keep])
        out_v.append(vv[keep])
        out_h.append(np.full(int(keep.sum()), k * dim + m, dtype=np.int64))
    if not out_i:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, np.zeros(0)
    return np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_h), np.concatenate(out_v)


class _Variant:
    """Structures for one pattern of active constraints (e.g. the ε-tight program or its fallback)."""

    def __init__(self, bridge: IpoptBridge, linear_active: np.ndarray, terms: list[SmoothTerm]):
        lin = bridge.linear
        self.linear_rows = np.flatnonzero(linear_active)
        renumber = np.full(lin.n_rows, -1, dtype=np.int64)
        renumber[self.linear_rows] = np.arange(self.linear_rows.size)
        self.entry_mask = linear_active[lin.rows]
        self.lin_rows = renumber[lin.rows[self.entry_mask]]
        self.lin_cols = lin.cols[self.entry_mask]
        self.terms = terms
        self.n_linear = self.linear_rows.size
        self.n_rows = self.n_linear + len(terms)
        jac_rows = [self.lin_rows]
        jac_cols = [self.lin_cols]
        for t, term in enumerate(terms):
            if term.support is None:
                raise BridgeError(f"{term.label}: the term is not part of a bridge (its support is not read yet).")
            jac_rows.append(np.full(term.support.size, self.n_linear + t, dtype=np.int64))
            jac_cols.append(term.support)
        self.jac_structure = (np.concatenate(jac_rows), np.concatenate(jac_cols))
        # Hessian: union pattern of the objective and the active terms
        parts = [(bridge.objective, _hessian_products(bridge.objective))]
        parts += [(term, _hessian_products(term)) for term in terms]
        n = bridge.n
        keys = np.concatenate([p[1][0] * n + p[1][1] for p in parts]) if parts else np.zeros(0, np.int64)
        unique = np.unique(keys)
        self.hess_structure = (unique // n, unique % n)
        self.hess_maps: list[sp.csr_matrix | None] = []  # None: the term's Hessian is structurally zero
        for term, (i, j, h, v) in parts:
            position = np.searchsorted(unique, i * n + j)
            dim = term.evaluator.dim
            self.hess_maps.append(
                sp.csr_matrix((v, (position, h)), shape=(unique.size, dim * dim)) if v.size else None
            )
        self.warm: dict[str, np.ndarray] | None = None


class _Callbacks:
    """The object cyipopt calls: objective, gradient, constraints, Jacobian, Hessian (of the Lagrangian)."""

    def __init__(self, bridge: IpoptBridge, variant: _Variant, values: np.ndarray):
        self.bridge, self.variant = bridge, variant
        self.sign = -1.0 if bridge.maximize else 1.0  # Ipopt minimises
        self.jac_linear = values[variant.entry_mask]
        self.matrix = sp.csr_matrix(
            (self.jac_linear, (variant.lin_rows, variant.lin_cols)), shape=(variant.n_linear, bridge.n)
        )
        self.iterations = 0

    def objective(self, x: np.ndarray) -> float:
        return self.sign * self.bridge.objective.value(x)

    def gradient(self, x: np.ndarray) -> np.ndarray:
        term = self.bridge.objective
        out = np.zeros(self.bridge.n)
        out[term.support] = self.sign * term.gradient(x)
        return out

    def constraints(self, x: np.ndarray) -> np.ndarray:
        out = np.empty(self.variant.n_rows)
        out[: self.variant.n_linear] = self.matrix @ x
        for t, term in enumerate(self.variant.terms):
            out[self.variant.n_linear + t] = term.value(x)
        return out

    def jacobianstructure(self) -> tuple[np.ndarray, np.ndarray]:
        return self.variant.jac_structure

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        parts = [self.jac_linear]
        for term in self.variant.terms:
            parts.append(term.gradient(x))
        return np.concatenate(parts)

    def hessianstructure(self) -> tuple[np.ndarray, np.ndarray]:
        return self.variant.hess_structure

    def hessian(self, x: np.ndarray, lagrange: np.ndarray, obj_factor: float) -> np.ndarray:
        variant = self.variant
        out = np.zeros(variant.hess_structure[0].size)
        weights = [obj_factor * self.sign] + list(lagrange[variant.n_linear:])
        for term, weight, hmap in zip([self.bridge.objective] + variant.terms, weights, variant.hess_maps, strict=True):
            if hmap is None or weight == 0.0:
                continue
            out += weight * (hmap @ term.hessian(x))
        return out

    def intermediate(self, alg_mod: int, iter_count: int, *args: Any) -> bool:
        self.iterations = int(iter_count)
        return True


def _add_option(problem: Any, key: str, val: Any) -> None:
    """Set an Ipopt option; an int given for a real-valued option (``tol=0``) is passed as a float."""
    try:
        problem.add_option(key, val)
        return
    except TypeError:
        if isinstance(val, (int, np.integer)) and not isinstance(val, bool):
            try:
                problem.add_option(key, float(val))
                return
            except TypeError:
                pass
    raise BridgeError(f"Ipopt refused the option {key}={val!r} (unknown name, or a value of the wrong type).")


class _Scratch:
    """A one-variable problem without rows: a place to try options."""

    def objective(self, x: np.ndarray) -> float:
        return 0.0

    def gradient(self, x: np.ndarray) -> np.ndarray:
        return np.zeros(1)

    def constraints(self, x: np.ndarray) -> np.ndarray:
        return np.zeros(0)

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        return np.zeros(0)


def _refusal(printed: str) -> str:
    """Ipopt's explanation, in one line: its first line, and the valid range or settings."""
    lines = [line.strip() for line in printed.splitlines() if line.strip()]
    if not lines:
        return ""
    # an int retried as a float prints twice: the last complaint is the one that stands
    first = max((i for i, line in enumerate(lines) if line.startswith(("Tried to set", "Setting:"))), default=0)
    lines = lines[first:]
    parts = [lines[0]]
    ranges = [line for line in lines[1:] if "<" in line]
    if ranges:
        parts.append(f"valid: {ranges[0]}")
    if "Valid Settings:" in lines:
        names = []
        for line in lines[lines.index("Valid Settings:") + 1:]:
            if line.startswith("Default:"):
                break
            names.append(line.split()[0])
        parts.append(f"valid settings: {', '.join(names)}")
    return f" ({' '.join(parts)})"


def check_ipopt_options(options: dict[str, Any], owner: str = "the pyomo backend") -> None:
    """Raise :class:`BackendOptionError` unless Ipopt takes every option (name, type and value).

    Each option is set on a scratch cyipopt problem (Ipopt cannot list its options without printing
    them all); what Ipopt prints when it refuses one is captured and quoted.
    """
    from ..base import captured_output

    refused = []
    problem = cyipopt.Problem(n=1, m=0, problem_obj=_Scratch(), lb=[0.0], ub=[1.0])
    try:
        for key, val in options.items():
            if not isinstance(key, str) or not isinstance(val, (str, int, float, np.integer, np.floating)) \
                    or isinstance(val, bool):
                refused.append(f"{key!r}={val!r} (Ipopt options take a string, an integer or a number)")
                continue
            with captured_output() as printed:
                try:
                    _add_option(problem, key, val)
                    ok = True
                except BridgeError:
                    ok = False
            if not ok:
                refused.append(f"{key}={val!r}" + _refusal("".join(printed)))
    finally:
        problem.close()
    if refused:
        raise BackendOptionError(f"{owner} was given Ipopt option(s) that Ipopt refuses: {'; '.join(refused)}.")


@dataclass
class BridgeResult:
    """One Ipopt run."""

    status: int
    status_name: str
    message: str
    x: np.ndarray | None
    iterations: int
    solve_time: float
    warm: bool
    objective: float = math.nan
    role: str = ""  # set by the caller, e.g. "phase1" or "program"
    #: the complementarity left at the point (see :func:`complementarity_gap`); NaN without a solution
    duality_gap: float = math.nan


class IpoptBridge:
    """A Pyomo model's linear rows and smooth terms, solved by Ipopt via cyipopt.

    Parameters
    ----------
    variables : sequence of VarData
        The variables, in the order of the solution vector.
    linear_constraints : sequence of ConstraintData
        Constraints with linear bodies (coefficients, constants and bounds may
        involve mutable Params).
    objective : SmoothTerm
        The objective (its ``constraint`` is None).
    nonlinear_constraints : sequence of SmoothTerm
        Each with ``constraint`` set; the row is ``lower <= h(y) <= upper`` with
        the constraint's bounds.
    maximize : bool
        Sense of the objective.

    Only constraints that are active in Pyomo at solve time are passed to Ipopt.
    """

    def __init__(self, variables: Sequence[Any], linear_constraints: Sequence[Any], objective: SmoothTerm,
                 nonlinear_constraints: Sequence[SmoothTerm] = (), maximize: bool = False):
        self.variables = list(variables)
        self.n = len(self.variables)
        self.column = {id(v): i for i, v in enumerate(self.variables)}
        if len(self.column) != self.n:
            raise BridgeError("a variable is listed twice.")
        self.linear = _LinearRows(linear_constraints, self.column, self.n)
        self.objective = objective
        self.terms = list(nonlinear_constraints)
        self.maximize = bool(maximize)
        for term in [objective] + self.terms:
            self._read_aggregates(term)
        for term in self.terms:
            if term.constraint is None:
                raise BridgeError(f"nonlinear row {term.label} has no Pyomo constraint.")
        self._variants: dict[tuple[bool, ...], _Variant] = {}

    # -- structure --------------------------------------------------------------
    def _read_aggregates(self, term: SmoothTerm) -> None:
        rows, cols, vals = [], [], []
        offset = np.zeros(len(term.aggregates))
        for k, expr in enumerate(term.aggregates):
            repn = generate_standard_repn(expr, compute_values=True, quadratic=False)
            if not repn.is_linear():
                raise BridgeError(f"aggregate {k} of {term.label} is not linear.")
            offset[k] = float(value(repn.constant))
            for coef, var in zip(repn.linear_coefs, repn.linear_vars, strict=True):
                if id(var) not in self.column:
                    raise BridgeError(f"{term.label} uses variable {var.name}, which the bridge was not given.")
                rows.append(k)
                cols.append(self.column[id(var)])
                vals.append(float(coef))
        dim = len(term.aggregates)
        if dim != term.evaluator.dim:
            raise BridgeError(f"{term.label}: {dim} aggregates for a function of {term.evaluator.dim} inputs.")
        term.map = sp.csr_matrix((vals, (rows, cols)), shape=(dim, self.n))
        term.map.sum_duplicates()
        term.map.eliminate_zeros()
        term.offset = offset
        term.support = np.unique(term.map.indices).astype(np.int64)
        term.dense = term.map[:, term.support].toarray()

    def variant(self) -> _Variant:
        """The structures for the constraints active now (built on first use, then cached)."""
        linear_active = np.fromiter((c.active for c in self.linear.constraints), bool, self.linear.n_rows)
        term_active = tuple(bool(t.constraint.active) for t in self.terms)
        key = tuple(linear_active.tolist()) + term_active
        variant = self._variants.get(key)
        if variant is None:
            variant = _Variant(self, linear_active, [t for t, a in zip(self.terms, term_active, strict=True) if a])
            self._variants[key] = variant
        return variant

    def check_terms(self, x: np.ndarray, tolerance: float = 1e-8) -> None:
        """Check at ``x`` that each term's ``h`` equals its Pyomo expression (the objective's, or the constraint body).

        Skipped for a term whose aggregate is outside its domain at ``x``.

        Raises
        ------
        BridgeError
            When they differ by more than ``tolerance`` (relative).
        """
        for var, v in zip(self.variables, x, strict=True):
            var.set_value(float(v), skip_validation=True)
        for term in [self.objective] + self.terms:
            expr = term.constraint.body if term.constraint is not None else term.expression
            if expr is None:
                continue
            y = term.aggregate(x)
            if not term.evaluator.in_domain(y):
                continue
            try:
                ours = term.evaluator.value(y)
                theirs = float(value(expr))
            except UtilityCodeError:
                raise
            except DOMAIN_ERRORS:
                continue
            if math.isfinite(ours) and math.isfinite(theirs) and abs(ours - theirs) > tolerance * (1 + abs(ours)):
                raise BridgeError(
                    f"{term.label}: the Pyomo expression gives {theirs!r} but the numpy value gives {ours!r}"
                    f" at aggregate {y.tolist()}; they must be the same function."
                )

    # -- solving ----------------------------------------------------------------
    def solve(self, x0: np.ndarray, options: dict[str, Any], warm_start: bool = True,
              warm_options: dict[str, Any] | None = None) -> BridgeResult:
        """Run Ipopt once on the model's current data and active constraints.

        Parameters
        ----------
        x0 : ndarray
            Starting point of a cold start.
        options : dict
            Ipopt options for every run.
        warm_start : bool
            Start from the last solution of the same pattern of active
            constraints, if there is one, with ``warm_options`` added.
        """
        variant = self.variant()
        values, lower, upper = self.linear.current()
        callbacks = _Callbacks(self, variant, values)
        col_lower = np.array([-INFINITY if v.lb is None else v.lb for v in self.variables], dtype=float)
        col_upper = np.array([INFINITY if v.ub is None else v.ub for v in self.variables], dtype=float)
        row_lower: list[np.ndarray | list[float]] = [lower[variant.linear_rows]]
        row_upper: list[np.ndarray | list[float]] = [upper[variant.linear_rows]]
        for term in variant.terms:
            row_lower.append([_current_bound(term.constraint.lower, -INFINITY)])
            row_upper.append([_current_bound(term.constraint.upper, INFINITY)])
        problem = cyipopt.Problem(
            n=self.n, m=variant.n_rows, problem_obj=callbacks,
            lb=col_lower, ub=col_upper, cl=np.concatenate(row_lower), cu=np.concatenate(row_upper),
        )
        start = variant.warm if warm_start else None
        warm = start is not None
        for key, val in options.items():
            _add_option(problem, key, val)
        if start is not None:
            for key, val in (warm_options or {}).items():
                _add_option(problem, key, val)
            _add_option(problem, "warm_start_init_point", "yes")
            args = dict(lagrange=start["mult_g"], zl=start["mult_x_L"], zu=start["mult_x_U"])
            x_start = start["x"]
        else:
            args = {}
            x_start = np.asarray(x0, dtype=float)
        started = time.perf_counter()
        try:
            x, info = problem.solve(x_start, **args)
        finally:
            elapsed = time.perf_counter() - started
            problem.close()
        status = int(info["status"])
        message = info["status_msg"]
        message = message.decode(errors="replace") if isinstance(message, bytes) else str(message)
        solved = status in SOLVED and np.all(np.isfinite(x))
        if solved:
            variant.warm = {"x": np.array(x), "mult_g": np.array(info["mult_g"]),
                            "mult_x_L": np.array(info["mult_x_L"]), "mult_x_U": np.array(info["mult_x_U"])}
        objective = float(info["obj_val"]) * (-1.0 if self.maximize else 1.0)
        gap = complementarity_gap(np.asarray(x, dtype=float), info, col_lower, col_upper,
                                  np.concatenate(row_lower), np.concatenate(row_upper)) if solved else math.nan
        stopped = status in STOPPED and np.all(np.isfinite(x))
        return BridgeResult(status, IPOPT_STATUS_NAMES.get(status, f"status {status}"), message,
                            np.array(x) if solved or stopped else None, callbacks.iterations, elapsed, warm, objective,
                            duality_gap=gap)


def complementarity_gap(x: np.ndarray, info: dict[str, Any], col_lower: np.ndarray, col_upper: np.ndarray,
                        row_lower: np.ndarray, row_upper: np.ndarray) -> float:
    """How far an interior point's objective may be from the optimum: the complementarity its multipliers leave.

    ``Σ z_L (x - l) + Σ z_U (u - x)`` over the finite bounds, plus ``Σ |y| · distance to the nearer bound`` over the
    rows that are not equalities. For a concave program whose multipliers are dual feasible it is the duality gap,
    so ``f* - f(x)`` is at most it; an interior-point method stopped early leaves it large (the barrier's ``n·μ``).
    """
    def finite_part(values: np.ndarray, distance: np.ndarray) -> float:
        keep = np.isfinite(distance) & (np.abs(distance) < INFINITY / 2)
        return float(np.sum(np.abs(values[keep] * distance[keep])))

    with np.errstate(all="ignore"):
        gap = finite_part(np.asarray(info["mult_x_L"], dtype=float), x - col_lower)
        gap += finite_part(np.asarray(info["mult_x_U"], dtype=float), col_upper - x)
        rows = np.asarray(info["g"], dtype=float)
        inequality = row_lower != row_upper
        distance = np.minimum(np.abs(rows - row_lower), np.abs(row_upper - rows))
        gap += finite_part(np.asarray(info["mult_g"], dtype=float)[inequality], distance[inequality])
    return gap

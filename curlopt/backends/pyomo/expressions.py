"""A program as a Pyomo model: variables, parameterised linear rows, and utilities compiled from their forms into Pyomo expressions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import CurloptError, UnsupportedUtilityError
from ...models.cmdp import stationary_occupancy
from ...programs.blocks import Program
from ...programs.lp import piece_rows
from ...programs.optimistic import JointProgram, OptimisticProgram
from ...programs.support import Support
from ...utilities import forms
from ...utilities.library import Utility
from ..base import call_utility, expression_error
from ..form_table import FormCompiler, FormTable, Rule
from .solvers import DOMAIN_ERRORS

if TYPE_CHECKING:
    from .ipopt_bridge import NumpyEvaluator, PyomoEvaluator

__all__ = ['build_pyomo_model', 'pyomo_expression', 'can_express', 'starting_point', 'PYOMO_FORMS']


# ----------------------------------------------------------------------------
# The Pyomo model
# ----------------------------------------------------------------------------


class PyomoModel:
    """A program's Pyomo model and the handles the backend needs.

    Attributes
    ----------
    model : pyomo ConcreteModel
        Components: ``x``, ``theta``, ``eps``, ``rows``, ``reward``, ``cost``,
        ``objective``; ``g`` (smooth constraint rows, indexed by constraint
        number), ``g_pieces`` (epigraph rows of non-smooth constraints, indexed by
        (constraint, piece)); ``t`` and ``objective_pieces`` for a non-smooth
        objective; with constraints, the (normally inactive) phase-1 problem
        ``phase1_s``, ``phase1_objective``, ``phase1_g``, ``phase1_pieces``.
    variables : list of VarData
        ``x[0..n-1]`` then ``t`` if present.
    theta : list of ParamData
    external : list of str
        Utilities that entered as Python-callback ExternalFunctions (no Pyomo expression).
    objective_rows : tuple (scipy.sparse.csr_matrix, ndarray) or None
        For a non-smooth objective, its epigraph rows ``(W R, c)`` (:func:`curlopt.programs.lp.piece_rows`).
    """

    def __init__(self) -> None:
        self.model: Any = None  # set by build_pyomo_model
        self.variables: list[Any] = []
        self.theta: list[Any] = []
        self.external: list[str] = []
        # (utility, aggregate exprs, expression) for a smooth objective
        self.objective_term: tuple[Utility, list[Any], Any] | None = None
        self.objective_rows: tuple[Any, np.ndarray] | None = None
        self.g_terms: list[tuple[int, Utility, Any]] = []  # (m, utility, ConstraintData)
        self.linear_constraints: list[Any] = []


def row_role(label: str) -> str:
    """``"objective"`` -> ``"the objective"``, ``"g3"`` -> ``"constraint 3"`` (for messages)."""
    return "the objective" if label == "objective" else f"constraint {label[1:]}" if label[:1] == "g" else label


# ----------------------------------------------------------------------------
# Utilities as Pyomo expressions
# ----------------------------------------------------------------------------


def can_express(utility: Utility) -> bool:
    """True when ``utility`` gives its own ``pyomo_expr``, or a form the pyomo backend writes as one smooth
    Pyomo expression (:data:`PYOMO_FORMS`: not a minimum or maximum of several pieces, not a 1- or inf-norm)."""
    return utility.has_pyomo or PYOMO_FORMS.can(utility.describe())


def pyomo_expression(utility: Utility, y: Sequence[Any], role: str = "the utility") -> Any:
    """The Pyomo expression of ``utility`` at the Pyomo expressions ``y``: its own ``pyomo_expr`` when it
    gives one (an optional expression, see :class:`~curlopt.utilities.library.Utility`), else its compiled form.

    An exception names the utility and its ``role`` (see :func:`~curlopt.backends.base.expression_error`).
    """
    method = "pyomo_expr" if utility.has_pyomo else "compiled form"
    try:
        if utility.has_pyomo:
            return utility.pyomo_expr(y)
        form = utility.describe()
        why = "it has no form" if form is None else PYOMO_FORMS.refusal(form)
        if form is None or why is not None:
            raise NotImplementedError(f"{utility!r} has neither a pyomo_expr nor a form the pyomo backend can write"
                                      f" as one smooth Pyomo expression ({why}).")
        return PYOMO_FORMS.compile(form, list(y), role)
    except (NotImplementedError, CurloptError):
        raise
    except Exception as exc:
        raise expression_error("pyomo", utility, role, method, exc) from exc


# Each form class's Pyomo expression (the entries of PYOMO_FORMS); ``y`` is a list of Pyomo expressions and the
# terms are summed in its order.

def _affine(form: forms.AffinePieces, y: list, compile: FormCompiler) -> Any:
    return sum(float(w) * yk for w, yk in zip(form.matrix[0], y, strict=True)) + float(form.offset[0])


def _logs(form: forms.Logs, y: list, compile: FormCompiler) -> Any:
    from pyomo.environ import log

    return sum(float(w) * log(yk + form.shift) for w, yk in zip(form.weights, y, strict=True))


def _powers(form: forms.Powers, y: list, compile: FormCompiler) -> Any:
    e = form.exponent
    return sum(float(w) * (yk + form.shift) ** e / e for w, yk in zip(form.weights, y, strict=True))


def _entropy(form: forms.Entropy, y: list, compile: FormCompiler) -> Any:
    from pyomo.environ import log

    return -sum(yk * log(yk + form.shift) for yk in y)


def _quadratic(form: forms.Quadratic, y: list, compile: FormCompiler) -> Any:
    n, q = form.dim, form.matrix
    quad = sum(float(q[i, j]) * y[i] * y[j] for i in range(n) for j in range(n) if q[i, j])
    return quad + sum(float(a) * yk for a, yk in zip(form.linear, y, strict=True)) + form.constant


def _norm(form: forms.Norm, y: list, compile: FormCompiler) -> Any:
    from pyomo.environ import sqrt

    return sqrt(sum((yk - float(c)) ** 2 for yk, c in zip(y, form.center, strict=True))) - form.radius


def _of(form: forms.Of, y: list, compile: FormCompiler) -> Any:
    return pyomo_expression(form.utility, y, compile.role)


def _head_plus_linear(form: forms.HeadPlusLinear, y: list, compile: FormCompiler) -> Any:
    n = form.head.dim
    return compile(form.head, y[:n]) + sum(float(k) * z for k, z in zip(form.coefficients, y[n:], strict=True) if k)


def _negated(form: forms.Negated, y: list, compile: FormCompiler) -> Any:
    return -compile(form.inner, y)


def _sum(form: forms.Sum | forms.Minimum | forms.Maximum, y: list, compile: FormCompiler) -> Any:
    """A sum, or a minimum or maximum of one term (the table refuses one of several)."""
    terms = [compile(term, y) for term in form.children()]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def _one_term(form: forms.Minimum | forms.Maximum) -> str | None:
    if len(form.terms) == 1:
        return None
    return ("one of several terms has kinks, which Ipopt cannot take (a utility with kinks, smooth=False, enters"
            " through the epigraph rows of its affine pieces)")


def _utility_refused(form: forms.Of) -> str | None:
    if can_express(form.utility):
        return None
    return f"{form.utility!r} has neither a pyomo_expr nor a form the pyomo backend compiles"


#: How the pyomo backend writes each form class as one smooth Pyomo expression. Kinks are refused: a utility with
#: kinks (``smooth = False``) enters the model through the epigraph rows of its affine pieces instead.
PYOMO_FORMS = FormTable("pyomo", {
    forms.AffinePieces: Rule(_affine, lambda form: None if form.combine == "affine" else
                             f"a {form.combine} of several affine pieces has kinks, which Ipopt cannot take"),
    forms.Logs: _logs,
    forms.Powers: _powers,
    forms.Entropy: _entropy,
    forms.Quadratic: _quadratic,
    forms.Norm: Rule(_norm, lambda form: None if form.ord == 2 else
                     f"the {form.ord:g}-norm has kinks, which Ipopt cannot take (only the 2-norm is smooth)"),
    forms.Of: Rule(_of, _utility_refused),
    forms.HeadPlusLinear: _head_plus_linear,
    forms.Negated: _negated,
    forms.Sum: _sum,
    forms.Minimum: Rule(_sum, _one_term),
    forms.Maximum: Rule(_sum, _one_term),
}, refused={})


def _pyomo_or_external(model: Any, utility: Utility, y: list, label: str, holder: PyomoModel) -> Any:
    """The utility's Pyomo expression, or a Python-callback ExternalFunction of its numpy value."""
    import pyomo.environ as pe

    if can_express(utility):
        return pyomo_expression(utility, y, row_role(label))
    function = pe.ExternalFunction(lambda *args: utility.value(np.asarray(args, dtype=float)))
    model.add_component(f"{label}_function", function)
    holder.external.append(f"{label} {utility!r}")
    return function(*y)


# ----------------------------------------------------------------------------
# Building the model
# ----------------------------------------------------------------------------


def _sparse_sum(matrix: Any, r: int, x: list) -> Any:
    """``Σ_c matrix[r, c] x[c]`` over the stored entries of row ``r`` of a CSR matrix."""
    import pyomo.environ as pe

    start, stop = matrix.indptr[r], matrix.indptr[r + 1]
    row = zip(matrix.data[start:stop], matrix.indices[start:stop], strict=True)
    return pe.quicksum(float(a) * x[c] for a, c in row)


def build_pyomo_model(program: Program) -> PyomoModel:
    """Build the Pyomo model of ``program`` (structure and current data). See the module docstring."""
    import pyomo.environ as pe

    out = PyomoModel()
    out.model = m = pe.ConcreteModel(name=f"{program.kind} program of {program.model.name}")
    x = _add_columns_and_rows(m, program, out)
    reward_map, cost_map = program.reward_map.tocsr(), program.cost_map.tocsr()
    m.reward = pe.Expression(range(reward_map.shape[0]), rule=lambda _m, k: _sparse_sum(reward_map, k, x))
    m.cost = pe.Expression(range(cost_map.shape[0]), rule=lambda _m, i: _sparse_sum(cost_map, i, x))
    _add_objective(m, program, x, out)
    _add_constraints(m, program, x, out)
    out.variables = x + ([m.t] if out.objective_rows is not None else [])
    return out


def _add_columns_and_rows(m: Any, program: Program, out: PyomoModel) -> list:
    """The variables ``x`` with their bounds, the Params ``theta`` and ``eps``, and the linear rows."""
    import pyomo.environ as pe

    n = program.n_vars
    lower, upper = program.column_bounds()
    m.x = pe.Var(
        range(n), dense=True,
        bounds=lambda _m, i: (float(lower[i]) if np.isfinite(lower[i]) else None,
                              float(upper[i]) if np.isfinite(upper[i]) else None),
    )
    x = [m.x[i] for i in range(n)]
    lin = program.linear
    m.theta = pe.Param(range(lin.n_params), mutable=True, initialize=dict(enumerate(lin.param_values.tolist())))
    out.theta = theta = [m.theta[j] for j in range(lin.n_params)]
    m.eps = pe.Param(mutable=True, initialize=float(program.epsilon))
    fixed = lin.fixed.tocsr()
    param_by_row: list[list[int]] = [[] for _ in range(lin.n_rows)]
    for j, r in enumerate(lin.param_rows.tolist()):
        param_by_row[r].append(j)
    param_cols = lin.param_cols.tolist()

    def row_rule(_m: Any, r: int) -> Any:
        start, stop = fixed.indptr[r], fixed.indptr[r + 1]
        terms = [float(a) * x[c] for a, c in zip(fixed.data[start:stop], fixed.indices[start:stop], strict=True)]
        terms += [theta[j] * x[param_cols[j]] for j in param_by_row[r]]
        body = pe.quicksum(terms)
        lo, up = lin.lower[r], lin.upper[r]
        if lo == up:
            return body == float(lo)
        return (float(lo) if np.isfinite(lo) else None, body, float(up) if np.isfinite(up) else None)

    m.rows = pe.Constraint(range(lin.n_rows), rule=row_rule)
    out.linear_constraints = [m.rows[r] for r in range(lin.n_rows)]
    return x


def _add_objective(m: Any, program: Program, x: list, out: PyomoModel) -> None:
    """``f(reward)`` maximised; for a non-smooth ``f``, the LP epigraph: ``t`` maximised, ``t - (W R)_j x <= c_j``."""
    import pyomo.environ as pe

    f = program.objective
    if _uses_pieces(f):
        rows, c = out.objective_rows = piece_rows(f, program.reward_map, "the objective")
        m.t = pe.Var()
        m.objective_pieces = pe.Constraint(range(rows.shape[0]),
                                           rule=lambda _m, j: _m.t - _sparse_sum(rows, j, x) <= float(c[j]))
        m.objective = pe.Objective(expr=m.t, sense=pe.maximize)
        out.linear_constraints += [m.objective_pieces[j] for j in range(rows.shape[0])]
    else:
        rewards = [m.reward[k] for k in range(program.reward_map.shape[0])]
        expr = _pyomo_or_external(m, f, rewards, "objective", out)
        m.objective = pe.Objective(expr=expr, sense=pe.maximize)
        out.objective_term = (f, rewards, expr)


def _add_constraints(m: Any, program: Program, x: list, out: PyomoModel) -> None:
    """The rows ``g_m(cost) <= -eps`` (smooth ``g_m``) and ``(W C)_j x + c_j <= -eps`` (the LP rows of a
    non-smooth ``g_m``), and the inactive phase-1 problem: the smallest ``s`` with every row ``- s`` holding."""
    import pyomo.environ as pe

    costs = [m.cost[i] for i in range(program.cost_map.shape[0])]
    smooth = [i for i, g in enumerate(program.constraints) if not _uses_pieces(g)]
    rows = {i: piece_rows(g, program.cost_map, f"constraint {i}")
            for i, g in enumerate(program.constraints) if _uses_pieces(g)}
    bodies = {i: _pyomo_or_external(m, program.constraints[i], costs, f"g{i}", out) for i in smooth}
    index = [(i, j) for i, (w, _) in rows.items() for j in range(w.shape[0])]

    def piece_body(i: int, j: int) -> Any:
        w, c = rows[i]
        return _sparse_sum(w, j, x) + float(c[j])

    if smooth:
        m.g = pe.Constraint(smooth, rule=lambda _m, i: bodies[i] <= -_m.eps)
        out.g_terms = [(i, program.constraints[i], m.g[i]) for i in smooth]
    if rows:
        m.g_pieces = pe.Constraint(index, rule=lambda _m, i, j: piece_body(i, j) <= -_m.eps)
        out.linear_constraints += [m.g_pieces[key] for key in index]
    if program.constraints:
        # Phase 1: the smallest s with g_m(ζ) - s <= -ε for all m, over the linear rows (inactive until used).
        m.phase1_s = pe.Var()
        m.phase1_objective = pe.Objective(expr=m.phase1_s, sense=pe.minimize)
        m.phase1_objective.deactivate()
        if smooth:
            m.phase1_g = pe.Constraint(smooth, rule=lambda _m, i: bodies[i] - _m.phase1_s <= -_m.eps)
            m.phase1_g.deactivate()
        if rows:
            m.phase1_pieces = pe.Constraint(index, rule=lambda _m, i, j: piece_body(i, j) - _m.phase1_s <= -_m.eps)
            m.phase1_pieces.deactivate()


def _stationary_mix(kernel: Any, S: int, A: int) -> np.ndarray:
    """Half the uniform policy's stationary occupancy on ``kernel`` (dense or sparse), half uniform mass."""
    try:
        rho = stationary_occupancy(kernel, np.full((S, A), 1.0 / A))
    except Exception:  # a degenerate chain: the uniform point is fine
        rho = np.full((S, A), 1.0 / (S * A))
    return 0.5 * rho + 0.5 / (S * A)


def _sparse_starting_point(program: Program, support: Support) -> np.ndarray:
    """:func:`starting_point` for a program on a sparse support: the joint blocks hold one value per entry."""
    model = program.model
    S, A = model.n_states, model.n_actions
    pairs, sizes = support.pairs, support.row_counts[support.pairs]
    x = np.zeros(program.n_vars)
    blocks = program.blocks
    if not isinstance(program, JointProgram):  # an occupancy program (plain or safe mode's): ρ on its kernel
        x[blocks["occupancy"].slice] = _stationary_mix(getattr(program, "kernel", None), S, A).ravel()
        return x
    p_hat = program.empirical_entries()
    visited = (program.visits.ravel() > 0)[pairs]
    q = np.where(visited, p_hat, 1.0 / sizes)         # unvisited pairs: uniform over their successors
    rho = _stationary_mix(support.matrix(q), S, A).ravel()
    x[blocks["occupancy"].slice] = rho
    p = rho[pairs] * q
    x[blocks["joint"].slice] = p
    if isinstance(program, OptimisticProgram):  # its deviation block α
        deviation = np.abs(p - p_hat * rho[pairs])
        room = np.maximum(program.radius.ravel() * rho - support.row_sums(deviation), 0.0)
        x[blocks["deviation"].slice] = deviation + 0.5 * room[pairs] / sizes
    return x


def starting_point(program: Program) -> np.ndarray:
    """A cold-start point for ``program`` (see the module docstring), length ``n_vars``."""
    own = getattr(program, "starting_point", None)
    if callable(own):  # a program of another layout (a step axis) says its own start
        return np.asarray(own(), dtype=float)
    if program.support is not None and not program.support.is_dense:
        return _sparse_starting_point(program, program.support)
    model = program.model
    S, A = model.n_states, model.n_actions
    x = np.zeros(program.n_vars)
    uniform_policy = np.full((S, A), 1.0 / A)
    kernel = getattr(program, "kernel", None)
    if kernel is None and hasattr(program, "empirical_kernel"):
        kernel = program.empirical_kernel.copy()
        unvisited = kernel.sum(axis=2) <= 0
        kernel[unvisited] = 1.0 / S
    if kernel is not None:
        try:
            rho = stationary_occupancy(kernel, uniform_policy)
        except Exception:  # a degenerate chain: the uniform point is fine
            rho = np.full((S, A), 1.0 / (S * A))
        rho = 0.5 * rho + 0.5 / (S * A)
    else:
        rho = np.full((S, A), 1.0 / (S * A))
    blocks = program.blocks
    x[blocks["occupancy"].slice] = rho.ravel()
    if "joint" in blocks:
        q = kernel if kernel is not None else np.full((S, A, S), 1.0 / S)
        p = rho[:, :, None] * q
        x[blocks["joint"].slice] = p.ravel()
        if isinstance(program, OptimisticProgram):  # its deviation block α
            deviation = np.abs(p - program.empirical_kernel * rho[:, :, None])
            room = np.maximum(program.radius * rho - deviation.sum(axis=2), 0.0)
            x[blocks["deviation"].slice] = (deviation + 0.5 * room[:, :, None] / S).ravel()
    return x


# ----------------------------------------------------------------------------
# Compiled program
# ----------------------------------------------------------------------------


def _numpy_evaluator(utility: Utility, role: str = "the utility") -> NumpyEvaluator:
    """The utility's numpy value, gradient and Hessian for the bridge. An exception from them is a
    :class:`UtilityCodeError` naming the utility (the solve lets it through), except a domain error
    (ValueError, ZeroDivisionError, ...), which tells Ipopt to shorten its step."""
    from .ipopt_bridge import NumpyEvaluator

    dim = utility.dim
    if utility.curvature == "affine":
        pairs: list[tuple[int, int]] | None = []
    elif forms.is_separable(utility.describe()):  # only the diagonal enters the sparsity pattern
        pairs = [(k, k) for k in range(dim)]
    else:
        pairs = None

    def guarded(method: str) -> Callable[[np.ndarray], Any]:
        function = getattr(utility, method)
        return lambda y: call_utility(utility, role, method, function, y, allowed=DOMAIN_ERRORS)

    return NumpyEvaluator(dim, guarded("value"), guarded("gradient"), guarded("hessian"), pairs=pairs,
                          lower=utility.domain_lower())


def utility_evaluator(utility: Utility, derivatives: str,
                      role: str = "the utility") -> tuple[NumpyEvaluator | PyomoEvaluator, str]:
    from .ipopt_bridge import PyomoEvaluator

    numpy_ok = has_numpy_derivatives(utility)
    use_pyomo = can_express(utility) and (derivatives == "pyomo" or not numpy_ok)
    if use_pyomo:
        def builder(y: list) -> Any:
            return pyomo_expression(utility, y, role)

        return PyomoEvaluator(utility.dim, builder, lower=utility.domain_lower()), "pyomo"
    if not numpy_ok:
        raise UnsupportedUtilityError(
            f"{utility!r} has neither a pyomo_expr nor numpy gradient and hessian; the pyomo backend needs one of them."
        )
    return _numpy_evaluator(utility, role), "numpy"


def _probe(utility: Utility) -> np.ndarray:
    """A point strictly inside the utility's domain (one unit above a finite lower end)."""
    lower = np.asarray(utility.domain_lower(), dtype=float)
    return np.where(np.isfinite(lower), lower + 1.0, 1.0)


def has_numpy_derivatives(utility: Utility) -> bool:
    """True when ``gradient`` and ``hessian`` are implemented (a call raising NotImplementedError says no)."""
    y = _probe(utility)
    try:
        utility.gradient(y)
        utility.hessian(y)
    except NotImplementedError:
        return False
    except Exception:  # implemented, just unhappy at the probe point
        return True
    return True


def _uses_pieces(utility: Utility) -> bool:
    return not utility.smooth

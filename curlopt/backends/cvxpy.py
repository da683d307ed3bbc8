"""The ``cvxpy`` backend: conic programs for DCP utilities, compiled once with Parameters (DPP).

The program's parameter entries become one CVXPY Parameter vector θ, entering the
rows as ``scatter @ (diag(θ) @ (select @ x))`` — a DPP form, so CVXPY canonicalises
the problem once and each re-solve only substitutes numbers. ε is a Parameter too.
The product is written with ``diag(θ)`` rather than ``multiply(θ, ·)`` because CVXPY
(1.9, COO canonicalisation backend) canonicalises a parameter matrix product in
memory linear in the J parameter entries, while its elementwise product with a
J-vector parameter builds a J²-row sparse matrix on the way (8·J² bytes: 39 GiB
for the optimistic program at (S, A) = (60, 10); ~0.4 GiB in all with ``diag``).
The ε-tight and the fallback problems share variables and parameters; the
fallback is built the first time it is needed.

Utilities enter as CVXPY expressions compiled from their forms (:mod:`curlopt.utilities.forms`,
:func:`cvxpy_expression`), or written by a utility's own ``cvxpy_expr``.

Solvers are tried in order (default Clarabel, then SCS), because conic solvers
can stall on exponential cones; the result names the solver that succeeded and
the message lists any that failed. Clarabel is called through :class:`ClarabelPath`
(CVXPY's canonical data, fed straight to one Clarabel solver), the others through
``Problem.solve``.
"""

from __future__ import annotations

import importlib.util
import time
import warnings
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ..errors import BackendError, BackendOptionError, CurloptError, UnsupportedUtilityError
from ..programs.blocks import Program
from ..utilities import forms
from ..utilities.library import Utility
from .base import Backend, CompiledProgram, RawSolution, expression_error, package_version
from .form_table import FormCompiler, FormTable, Rule
from .options import NONE, Option, refuse_both
from .results import Status

if TYPE_CHECKING:  # imported where a problem is built, so that importing the backend stays cheap
    import cvxpy

__all__ = ["CvxpyBackend", "DEFAULT_SOLVERS", "DEFAULT_SOLVER_OPTIONS", "cvxpy_expression", "can_express", "STATUS_MAP",
           "CVXPY_FORMS"]

DEFAULT_SOLVERS = ("CLARABEL", "SCS")
#: tolerances tight enough that solutions meet the constraint rows to ~1e-8
DEFAULT_SOLVER_OPTIONS: dict[str, dict[str, Any]] = {
    "CLARABEL": {"tol_gap_abs": 1e-9, "tol_gap_rel": 1e-9, "tol_feas": 1e-9, "max_iter": 500},
    "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
}
#: keywords of ``Problem.solve`` itself that may be given among a solver's settings
CVXPY_KEYWORDS = ("verbose", "canon_backend")
#: keywords of ``Problem.solve`` the backend sets itself (or that change what is solved)
RESERVED_KEYWORDS = ("solver", "warm_start", "ignore_dpp", "enforce_dpp", "gp", "qcp", "requires_grad",
                     "solver_path")
#: each CVXPY solver's setting of a time limit in seconds (the backend-neutral ``time_limit`` sets it)
#: (those CVXPY passes on as a number: MOSEK's and CPLEX's limits sit in parameter dictionaries, ECOS has none)
TIME_LIMIT_SETTINGS = {"CLARABEL": "time_limit", "SCS": "time_limit_secs", "HIGHS": "time_limit", "OSQP": "time_limit",
                       "GUROBI": "TimeLimit", "IPOPT": "max_wall_time"}
#: the package of each CVXPY solver, for :meth:`CvxpyBackend.version`
SOLVER_PACKAGES = {"CLARABEL": "clarabel", "SCS": "scs", "ECOS": "ecos", "HIGHS": "highspy", "OSQP": "osqp",
                   "MOSEK": "mosek", "GUROBI": "gurobipy", "CPLEX": "cplex", "IPOPT": "cyipopt"}


def check_solver_settings(solver: str, settings: dict[str, Any]) -> None:
    """Raise :class:`BackendOptionError` for a setting ``solver`` would refuse at its first solve.

    CLARABEL: each name must be a field of ``clarabel.DefaultSettings()`` and take the value. SCS: the
    settings (as CVXPY rewrites them) are passed to a scratch ``scs.SCS`` on a one-variable problem,
    which refuses unknown names and wrong types. Other solvers' settings are passed on unchecked.
    """
    reserved = [key for key in settings if key in RESERVED_KEYWORDS]
    if reserved:
        raise BackendOptionError(
            f"{solver} settings {reserved} are set by the cvxpy backend itself (or change what is solved);"
            " remove them."
        )
    own = {key: value for key, value in settings.items() if key not in CVXPY_KEYWORDS}
    problems: list[str] = []
    if solver == "CLARABEL":
        import clarabel

        scratch = clarabel.DefaultSettings()
        for key, value in own.items():
            if key in ("use_quad_obj", "accept_unknown"):  # read by CVXPY, not Clarabel
                continue
            if key.startswith("_") or not hasattr(scratch, key) or callable(getattr(scratch, key)):
                problems.append(f"unknown setting {key!r}")
                continue
            try:
                setattr(scratch, key, value)
            except Exception as exc:  # TypeError, OverflowError, ValueError from the Rust binding
                problems.append(f"{key}={value!r} ({exc})")
    elif solver == "SCS":
        import scs
        from cvxpy.reductions.solvers.conic_solvers.scs_conif import SCS as ScsInterface

        try:
            options = ScsInterface.parse_solver_options(dict(own))
            options.pop("use_quad_obj", None)
            data = {"A": sp.csc_matrix(np.ones((1, 1))), "b": np.ones(1), "c": np.ones(1)}
            scs.SCS(data, {"l": 1}, **{**options, "verbose": False})
        except Exception as exc:  # TypeError for an unknown name or a wrong type, ValueError for a bad value
            problems.append(str(exc))
    if problems:
        raise BackendOptionError(f"the cvxpy backend's {solver} settings are refused: {'; '.join(problems)}.")


#: CVXPY's status names (``cvxpy.settings``; every solver's own status is translated to one of them by CVXPY)
#: -> Status. Strings, so that this module needs no CVXPY import to be read.
STATUS_MAP: dict[str, Status] = {
    "optimal": Status.OPTIMAL,
    "optimal_inaccurate": Status.ALMOST_OPTIMAL,  # kept or discarded by the rule of curlopt.backends.results.Status
    "infeasible": Status.INFEASIBLE,
    # An inaccurate certificate is not a proof: it must not send the program to its fallback.
    "infeasible_inaccurate": Status.NUMERICAL_ERROR,
    "unbounded": Status.UNBOUNDED,
    "unbounded_inaccurate": Status.NUMERICAL_ERROR,
    "infeasible_or_unbounded": Status.UNKNOWN,
    "user_limit": Status.ITERATION_LIMIT,
    "solver_error": Status.SOLVER_ERROR,
}


# ----------------------------------------------------------------------------
# Utilities as CVXPY expressions
# ----------------------------------------------------------------------------


def can_express(utility: Utility) -> bool:
    """True when ``utility`` gives its own ``cvxpy_expr``, or a form the cvxpy backend compiles whole
    (:data:`CVXPY_FORMS`; the utilities inside :class:`~curlopt.utilities.forms.Of` included)."""
    return utility.has_cvxpy or CVXPY_FORMS.can(utility.describe())


def cvxpy_expression(utility: Utility, y: Any, role: str = "the utility") -> Any:
    """The CVXPY expression of ``utility`` at the CVXPY expression ``y``: its own ``cvxpy_expr`` when it
    gives one (an optional expression, see :class:`~curlopt.utilities.library.Utility`), else its compiled form.

    An exception names the utility and its ``role`` (see :func:`~curlopt.backends.base.expression_error`).
    """
    import cvxpy as cp

    method = "cvxpy_expr" if utility.has_cvxpy else "compiled form"
    try:
        if utility.has_cvxpy:
            expr = utility.cvxpy_expr(y)
        else:
            form = utility.describe()
            if form is None:
                raise NotImplementedError(f"{utility!r} has neither a form (describe()) nor a cvxpy_expr.")
            expr = CVXPY_FORMS.compile(form, y, role)
    except (NotImplementedError, CurloptError):
        raise
    except Exception as exc:  # e.g. cp.power's rational approximation of 1 - α for α = 1e6 divides by zero
        raise expression_error("cvxpy", utility, role, method, exc) from exc
    if not isinstance(expr, cp.Expression):
        raise expression_error("cvxpy", utility, role, method,
                               TypeError(f"it returned {type(expr).__name__}, not a CVXPY expression"))
    return expr


# Each form class's CVXPY expression (the entries of CVXPY_FORMS); ``y`` is a CVXPY expression.

def _affine_pieces(form: forms.AffinePieces, y: Any, compile: FormCompiler) -> Any:
    import cvxpy as cp

    if form.combine == "affine":
        return form.matrix[0] @ y + float(form.offset[0])
    return (cp.min if form.combine == "min" else cp.max)(form.matrix @ y + form.offset)


def _logs(form: forms.Logs, y: Any, compile: FormCompiler) -> Any:
    import cvxpy as cp

    return form.weights @ cp.log(y + form.shift)


def _powers(form: forms.Powers, y: Any, compile: FormCompiler) -> Any:
    import cvxpy as cp

    return form.weights @ cp.power(y + form.shift, form.exponent) / form.exponent


def _entropy(form: forms.Entropy, y: Any, compile: FormCompiler) -> Any:
    import cvxpy as cp

    if form.shift == 0:
        return cp.sum(cp.entr(y))
    # -y ln(y+η) = entr(y+η) + η ln(y+η): both terms concave, so DCP.
    z = y + form.shift
    return cp.sum(cp.entr(z)) + form.shift * cp.sum(cp.log(z))


def _quadratic(form: forms.Quadratic, y: Any, compile: FormCompiler) -> Any:
    import cvxpy as cp

    return cp.quad_form(y, cp.psd_wrap(form.matrix)) + form.linear @ y + form.constant


def _norm(form: forms.Norm, y: Any, compile: FormCompiler) -> Any:
    import cvxpy as cp

    # cvxpy annotates p as int | str, but documents and takes np.inf (and 2.0) as well
    return cp.norm(y - form.center, form.ord) - form.radius  # type: ignore[arg-type]


def _of(form: forms.Of, y: Any, compile: FormCompiler) -> Any:
    return cvxpy_expression(form.utility, y, compile.role)


def _head_plus_linear(form: forms.HeadPlusLinear, y: Any, compile: FormCompiler) -> Any:
    n = form.head.dim
    return compile(form.head, y[:n]) + form.coefficients @ y[n:]


def _negated(form: forms.Negated, y: Any, compile: FormCompiler) -> Any:
    return -compile(form.inner, y)


def _sum(form: forms.Sum, y: Any, compile: FormCompiler) -> Any:
    terms = [compile(term, y) for term in form.children()]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def _extremum(form: forms.Minimum | forms.Maximum, y: Any, compile: FormCompiler) -> Any:
    import cvxpy as cp

    terms = [compile(term, y) for term in form.children()]
    if len(terms) == 1:
        return terms[0]
    return (cp.min if isinstance(form, forms.Minimum) else cp.max)(cp.hstack(terms))


def _utility_refused(form: forms.Of) -> str | None:
    if can_express(form.utility):
        return None
    return f"{form.utility!r} has neither a form the cvxpy backend compiles nor a cvxpy_expr"


#: How the cvxpy backend compiles each form class (every one, into a CVXPY expression; CVXPY then checks the
#: result is DCP with the curvature the utility declares).
CVXPY_FORMS = FormTable("cvxpy", {
    forms.AffinePieces: _affine_pieces,
    forms.Logs: _logs,
    forms.Powers: _powers,
    forms.Entropy: _entropy,
    forms.Quadratic: _quadratic,
    forms.Norm: _norm,
    forms.Of: Rule(_of, _utility_refused),
    forms.HeadPlusLinear: _head_plus_linear,
    forms.Negated: _negated,
    forms.Sum: _sum,
    forms.Minimum: _extremum,
    forms.Maximum: _extremum,
}, refused={})


def solver_names(value: Any) -> str | None:
    """The ``solvers`` option's check (here and wherever CVXPY's solvers are passed on): one or more non-empty
    names."""
    names = [value] if isinstance(value, str) else value
    if value is None or (names and all(isinstance(name, str) and name for name in names)):
        return None
    return "it must hold at least one solver name, each a non-empty string"


def settings_by_solver(value: Any) -> str | None:
    """The ``solver_options`` option's check: a dict of settings per solver name."""
    if value is None or all(isinstance(k, str) and isinstance(v, dict) for k, v in value.items()):
        return None
    return "each key must be a solver name and each value a dict of settings"


class CvxpyBackend(Backend):
    """CVXPY for utilities with a DCP expression (log, α-fair, entropy, quadratic, norms, ...).

    Parameters
    ----------
    solvers : str or sequence of str, optional
        CVXPY solver names tried in order; default ``("CLARABEL", "SCS")``
        restricted to the installed ones.
    solver_options : dict, optional
        Per-solver keyword options, merged over :data:`DEFAULT_SOLVER_OPTIONS`.
    time_limit, verbose
        As for every backend (:class:`~curlopt.backends.base.Backend`): each solver tried gets what is left
        of the limit (its own setting, :data:`TIME_LIMIT_SETTINGS`), and ``verbose`` is CVXPY's.
    """

    name: ClassVar[str] = "cvxpy"
    requires: ClassVar[tuple[str, ...]] = ("cvxpy",)
    extra: ClassVar[str] = "cvxpy"
    takes: ClassVar[str] = "utilities with a form (describe()) or a DCP cvxpy_expr"
    STATUS_MAP: ClassVar[dict[str, Status]] = STATUS_MAP
    FORMS = CVXPY_FORMS
    OPTIONS: ClassVar[tuple[Option, ...]] = (
        Option("solvers", (str, list, tuple) + NONE, None,
               "CVXPY solver names tried in order; None: CLARABEL then SCS, those installed.",
               "a CVXPY solver name or a list of them, or None", solver_names,
               lambda value: [value] if isinstance(value, str) else (None if value is None else list(value))),
        Option("solver_options", (dict,) + NONE, None,
               "Each solver's settings, merged over DEFAULT_SOLVER_OPTIONS; tried on a scratch solver when given.",
               "a dict from CVXPY solver name to a dict of that solver's settings, e.g. {'CLARABEL': {'max_iter':"
               " 100}}, or None", settings_by_solver),
    )

    #: the solvers asked for (None: the default order)
    solvers: list[str] | None
    #: each solver's settings (the defaults with the given ones over them)
    solver_options: dict[str, dict[str, Any]]

    def _configure(self) -> None:
        given = self.solver_options or {}
        self.solver_options = {k: dict(v) for k, v in DEFAULT_SOLVER_OPTIONS.items()}
        for key, value in given.items():
            self.solver_options.setdefault(key.upper(), {}).update(value)
        if self.verbose and any("verbose" in value for value in given.values()):
            refuse_both(self.name, "verbose", "solver_options[<solver>]", "verbose")
        if self.time_limit is not None:
            self._check_time_limit(given)
        if self.solvers or given:  # checked now, not at the first solve (imports CVXPY)
            order = self.solver_order
            for key in given:
                if key.upper() not in order:
                    raise BackendOptionError(
                        f"solver_options has settings for {key!r}, which this cvxpy backend does not run"
                        f" (its solvers: {', '.join(order)}); pass solvers=[...] to choose them."
                    )
                check_solver_settings(key.upper(), self.solver_options[key.upper()])

    def _check_time_limit(self, given: dict[str, dict[str, Any]]) -> None:
        """Every solver the backend may run must have a plain time-limit setting, not given twice."""
        order = [s.upper() for s in self.solvers] if self.solvers else list(DEFAULT_SOLVERS)
        without = [solver for solver in order if solver not in TIME_LIMIT_SETTINGS]
        if without:
            raise BackendOptionError(
                f"the cvxpy backend cannot give the solver(s) {', '.join(without)} a time limit (time_limit="
                f"{self.time_limit:g}): run solvers with a time-limit setting ({', '.join(TIME_LIMIT_SETTINGS)}), or"
                " set the solver's own limit in solver_options without time_limit."
            )
        for key, value in given.items():
            if TIME_LIMIT_SETTINGS.get(key.upper()) in value:
                refuse_both(self.name, "time_limit", f"solver_options[{key!r}]", TIME_LIMIT_SETTINGS[key.upper()])

    @classmethod
    def version(cls) -> str:
        """CVXPY's version and those of the installed solver packages it can run, e.g.
        ``"cvxpy 1.9.3 (CLARABEL: clarabel 0.11.1, SCS: scs 3.3.1)"``."""
        solvers = [f"{name}: {package_version(module)}" for name, module in SOLVER_PACKAGES.items()
                   if importlib.util.find_spec(module) is not None]
        return package_version("cvxpy") + (f" ({', '.join(solvers)})" if solvers else "")

    @property
    def solver_order(self) -> list[str]:
        """The solvers tried, in order, validated against CVXPY's installed solvers."""
        import cvxpy as cp

        installed = set(cp.installed_solvers())
        if self.solvers is None:
            order = [s for s in DEFAULT_SOLVERS if s in installed]
            if not order:
                raise BackendError(f"none of {DEFAULT_SOLVERS} is installed for CVXPY; installed: {sorted(installed)}.")
            return order
        order = [s.upper() for s in self.solvers]
        missing = [s for s in order if s not in installed]
        if missing:
            raise BackendError(f"CVXPY solver(s) {missing} are not installed; installed: {sorted(installed)}.")
        return order

    @classmethod
    def accepts(cls, utility: Utility) -> bool:
        return can_express(utility)

    #: CVXPY solvers worth comparing, when installed (a solver that cannot take a program reports so)
    COMPARABLE_SOLVERS = ("CLARABEL", "SCS", "ECOS", "HIGHS", "MOSEK", "GUROBI", "CPLEX")

    @classmethod
    def solver_variants(cls) -> list[tuple[str, dict]]:
        """Each installed CVXPY solver on its own (no fallback between them)."""
        import cvxpy as cp

        installed = set(cp.installed_solvers())
        return [(name, {"solvers": [name]}) for name in cls.COMPARABLE_SOLVERS if name in installed]

    def _compile(self, program: Program) -> CompiledCvxpy:
        return CompiledCvxpy(self, program)


#: the status name :meth:`CompiledCvxpy._attempt` gives a solve its solver stopped at a time limit (CVXPY says
#: ``user_limit`` for a time and an iteration limit alike; the solver's own status tells them apart)
TIME_LIMIT_NAME = "time_limit"


def _status(name: str) -> Status:
    return Status.TIME_LIMIT if name == TIME_LIMIT_NAME else STATUS_MAP.get(name, Status.UNKNOWN)


def _stopped_by_time(problem: cvxpy.Problem, name: str, time_given: float | None, elapsed: float) -> bool:
    """Whether the solve ``Problem.solve`` just made (CVXPY status ``name``) stopped at a time limit: Clarabel's
    own status ``MaxTime``, SCS's "reached time_limit_secs", and for another solver a ``user_limit`` after at
    least the time the backend gave it."""
    stats = problem.solver_stats
    native = getattr(stats, "extra_stats", None) if stats is not None else None
    if native is not None and hasattr(native, "status"):  # Clarabel's result
        return str(native.status) == "MaxTime"
    if isinstance(native, dict) and isinstance(native.get("info"), dict):  # SCS's solution
        return "time_limit" in str(native["info"].get("status", ""))
    return name == "user_limit" and time_given is not None and elapsed >= time_given


#: CVXPY statuses that come with a point
_WITH_POINT = ("optimal", "optimal_inaccurate")


class ClarabelPath:
    """Re-solves one DPP problem with Clarabel from CVXPY's canonical parameter map, without the rest of
    ``Problem.solve``.

    ``Problem.solve`` spends ~5 ms per call in Python (re-checking the problem, building scipy matrices
    from the parameter map, inverting the whole reduction chain), more than Clarabel itself needs for the
    queue's programs. Here CVXPY canonicalises once (``get_problem_data``, cached DPP form); each solve
    multiplies CVXPY's reduced parameter map by the parameter vector into the data of a fixed sparsity
    pattern, hands it to the same Clarabel solver object through ``update`` (as CVXPY does with
    ``warm_start=True``) and reads ``x`` at its column in CVXPY's stacked variable. The data are checked
    against CVXPY's own at construction, so the solutions are those ``Problem.solve`` would give.
    """

    def __init__(self, problem: cvxpy.Problem, x: cvxpy.Variable, options: dict[str, Any],
                 verbose: bool = False) -> None:
        from cvxpy import settings
        from cvxpy.reductions.solvers.conic_solvers.clarabel_conif import CLARABEL, dims_to_solver_cones
        from cvxpy.reductions.solvers.conic_solvers.conic_solver import ConicSolver

        data, _, _ = problem.get_problem_data(solver="CLARABEL")
        program = data[settings.PARAM_PROB]
        program.reduced_A.cache()
        self._program = program
        self._map = program.reduced_A.reduced_mat.tocsr()
        indices, indptr, shape = program.reduced_A.problem_data_index
        self._n = n = shape[1] - 1  # the last column of [A | b] is b
        self._indices, self._indptr = indices[: indptr[n]], indptr[: n + 1]
        self._b_rows, self._b_at = indices[indptr[n]:], slice(int(indptr[n]), None)
        self._m = shape[0]
        self._q = program.q.tocsr()
        self._column = program.var_id_to_col[x.id]
        self._size = x.size
        self._cones = dims_to_solver_cones(data[ConicSolver.DIMS])
        self._settings = CLARABEL().parse_solver_opts(verbose, dict(options))
        self._solver: Any = None
        self._timed = False  # whether the solver's settings hold a time limit
        #: Clarabel's own status of the last solve (e.g. "MaxTime" where CVXPY says "user_limit")
        self.last_status = ""
        q, A, b = self.data()
        A = self.matrix(A)
        if not (np.array_equal(q, data[settings.C]) and np.array_equal(b, data[settings.B])
                and A.shape == data[settings.A].shape and (A != data[settings.A]).nnz == 0):
            raise BackendError("the Clarabel path's data differ from CVXPY's")

    @classmethod
    def create(cls, problem: cvxpy.Problem, x: cvxpy.Variable, options: dict[str, Any],
               verbose: bool = False) -> ClarabelPath | None:
        """The path for ``problem``, or None where it cannot be had (not DPP, quadratic objective, bounds, ...)."""
        try:
            if not problem.is_dpp():
                return None
            path = cls(problem, x, options, verbose)
        except Exception:  # any CVXPY internal we do not expect: Problem.solve serves instead
            return None
        program = path._program
        if program.P is not None or program.lb_tensor is not None or program.ub_tensor is not None:
            return None
        return path

    def data(self, values: dict[int, Any] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Clarabel's ``q``, the data of ``A`` (CSC order, fixed pattern) and ``b`` (``A x + s = b``, s in the
        cones) at the given parameter values (by parameter id; default the parameters' own values)."""
        from cvxpy.cvxcore.python import canonInterface

        program = self._program
        value = (lambda i: np.array(program.id_to_param[i].value)) if values is None else values.__getitem__
        vector = canonInterface.get_parameter_vector(program.total_param_size, program.param_id_to_col,
                                                     program.param_id_to_size, value)
        stacked = self._map @ vector
        b = np.zeros(self._m)
        b[self._b_rows] = stacked[self._b_at]
        q = np.asarray(self._q @ vector).ravel()[: self._n]
        return q, -stacked[: self._indptr[-1]], b

    def reset(self) -> None:
        """Start the next solve with a new Clarabel solver (as ``Problem.solve`` does after another solver)."""
        self._solver = None

    def matrix(self, data: np.ndarray) -> sp.csc_array:
        """``A`` as a matrix, from the data of its fixed pattern."""
        return sp.csc_array((data, self._indices, self._indptr), shape=(self._m, self._n))

    def solve(self, values: dict[int, Any],
              time_limit: float | None = None) -> tuple[str, np.ndarray | None, int, float]:
        """Clarabel's status name (as CVXPY spells it), ``x`` (or None), iterations and Clarabel's solve time,
        at the given parameter values (by parameter id), within ``time_limit`` seconds (None: no limit)."""
        import clarabel
        from cvxpy.reductions.solvers.conic_solvers.clarabel_conif import CLARABEL

        q, A, b = self.data(values)
        if self._solver is None:
            P = sp.csc_array((self._n, self._n))
            self._solver = clarabel.DefaultSolver(P, q, self.matrix(A), b, self._cones, self._settings)
        else:
            self._solver.update(q=q, A=A, b=b)  # the data of A's fixed pattern: no matrix to build
        if time_limit is not None or self._timed:  # settings touched only by a time limit
            self._settings.time_limit = float("inf") if time_limit is None else time_limit
            self._solver.update(settings=self._settings)
            self._timed = time_limit is not None
        result = self._solver.solve()
        self.last_status = str(result.status)
        name = CLARABEL.STATUS_MAP.get(self.last_status, "solver_error")
        x = np.array(result.x[self._column: self._column + self._size], dtype=float) if result.x is not None else None
        return name, x, int(result.iterations), float(result.solve_time)


class CompiledCvxpy(CompiledProgram):
    """Two DPP CVXPY problems (ε-tight and fallback) over shared variables and parameters."""

    backend: CvxpyBackend

    def __init__(self, backend: CvxpyBackend, program: Program) -> None:
        super().__init__(backend, program)
        import cvxpy as cp

        self._cp = cp
        self.solvers = backend.solver_order
        lin = program.linear
        n, J = program.n_vars, lin.n_params
        self.x = x = cp.Variable(n, name="x")
        self.theta = cp.Parameter(J, name="theta", value=lin.param_values.copy())
        self.epsilon = cp.Parameter(nonneg=True, name="epsilon", value=program.epsilon)
        select = sp.csr_matrix((np.ones(J), (np.arange(J), lin.param_cols)), shape=(J, n))
        scatter = sp.csr_matrix((np.ones(J), (lin.param_rows, np.arange(J))), shape=(lin.n_rows, J))
        scaled = cp.diag(self.theta) @ (select @ x)  # not cp.multiply: see the module doc (memory)

        def rows(mask: np.ndarray) -> tuple[Any, np.ndarray]:
            index = np.flatnonzero(mask)
            return lin.fixed[index] @ x + scatter[index] @ scaled, index

        base: list[Any] = []
        lower, upper = program.column_bounds()
        if np.any(np.isfinite(lower)):
            base.append(x[np.flatnonzero(np.isfinite(lower))] >= lower[np.isfinite(lower)])
        if np.any(np.isfinite(upper)):
            base.append(x[np.flatnonzero(np.isfinite(upper))] <= upper[np.isfinite(upper)])
        equality = lin.is_equality()
        if equality.any():
            expr, index = rows(equality)
            base.append(expr == lin.lower[index])
        if (~equality & np.isfinite(lin.upper)).any():
            expr, index = rows(~equality & np.isfinite(lin.upper))
            base.append(expr <= lin.upper[index])
        if (~equality & np.isfinite(lin.lower)).any():
            expr, index = rows(~equality & np.isfinite(lin.lower))
            base.append(expr >= lin.lower[index])

        rewards = program.reward_map @ x
        objective = self._expression(program.objective, "the objective", rewards)
        if not objective.is_concave():
            raise UnsupportedUtilityError(
                f"the objective {program.objective!r} gives a CVXPY expression that is not DCP-concave;"
                " describe it with a concave form or a DCP cvxpy_expr, or use the pyomo backend."
            )
        costs = program.cost_map @ x
        g_rows = []
        for m, g in enumerate(program.constraints):
            expr = self._expression(g, f"constraint {m}", costs)
            if not expr.is_convex():
                raise UnsupportedUtilityError(
                    f"constraint {m} {g!r} gives a CVXPY expression that is not DCP-convex;"
                    " describe it with a convex form or a DCP cvxpy_expr, or use the pyomo backend."
                )
            g_rows.append(expr <= -self.epsilon)
        self._objective = cp.Maximize(objective)
        self._base = base
        self.tight = cp.Problem(self._objective, base + g_rows)
        self._fallback: cvxpy.Problem | None = None
        self._paths: dict[int, ClarabelPath | None] = {}
        self._last_solver: dict[int, str] = {}  # by id(problem): the solver of its last attempt
        #: False if CVXPY could not keep the problem DPP (then every solve recompiles)
        self.is_dpp = self.tight.is_dpp()
        #: True: every solve re-canonicalises with the parameters as constants (a what-if for benchmarks; small
        #: programs only: diag(θ) then becomes a dense J×J constant, 8·J² bytes)
        self.ignore_dpp = False

    def _expression(self, utility: Utility, role: str, aggregate: Any) -> Any:
        """The utility's CVXPY expression (:func:`cvxpy_expression`)."""
        return cvxpy_expression(utility, aggregate, role)

    @property
    def fallback(self) -> cvxpy.Problem:
        if self._fallback is None:
            self._fallback = self._cp.Problem(self._objective, self._base)
        return self._fallback

    def _explain_infeasible_fallback(self, solver: str) -> str:
        """Why the program without constraint rows is infeasible: its rows, or the objective's domain.

        CVXPY keeps ``λ = R x`` inside the objective's domain (``log`` and ``power`` add cone rows), so when
        every point the rows allow has ``f(λ) = -inf`` (e.g. a reward signal that is zero under every
        policy, with a logarithmic objective), the conic program is infeasible although its rows hold.
        """
        cp = self._cp
        self._set_values()
        rows_only = cp.Problem(cp.Minimize(0), self._base)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # DPP (no ignore_dpp): with parameters as constants diag(θ) would become a dense J×J matrix
                rows_only.solve(solver=solver, **self._keywords(solver, self.time_left()))
        except Exception as exc:  # the explanation is a courtesy: never let it fail the solve
            return f"could not check the rows alone ({type(exc).__name__})"
        if _status(rows_only.status) is Status.OPTIMAL:
            return (f"its rows hold (checked), but the objective {self.program.objective!r} is -inf at every point"
                    " they allow: λ = R x never enters the objective's domain (e.g. a reward signal that is zero"
                    " under every policy); no policy has a finite objective")
        if _status(rows_only.status) is Status.INFEASIBLE:
            return "its linear rows themselves cannot hold"
        return f"the rows alone ended with {rows_only.status}"

    def _path(self, problem: cvxpy.Problem) -> ClarabelPath | None:
        """The Clarabel path of ``problem`` (made at its first use), or None where ``Problem.solve`` must serve."""
        key = id(problem)
        if key not in self._paths:
            self._set_values()  # CVXPY's canonical data, checked against the path's, are taken at these values
            options = self.backend.solver_options.get("CLARABEL", {})
            plain = not any(k in options for k in CVXPY_KEYWORDS + ("use_quad_obj", "accept_unknown"))
            self._paths[key] = ClarabelPath.create(problem, self.x, options, self.backend.verbose) if plain else None
        return self._paths[key]

    def _keywords(self, solver: str, time_given: float | None) -> dict[str, Any]:
        """``Problem.solve``'s keywords for ``solver``: its settings, the time it is given, CVXPY's verbose."""
        keywords = dict(self.backend.solver_options.get(solver, {}))
        if time_given is not None:
            keywords[TIME_LIMIT_SETTINGS[solver]] = max(time_given, 0.0)
        if self.backend.verbose:
            keywords["verbose"] = True
        return keywords

    def _set_values(self) -> None:
        """Give the CVXPY Parameters the program's current values (checked by CVXPY: ~0.6 ms each, so only
        when ``Problem.solve`` needs them)."""
        self.theta.value = self.program.linear.param_values.copy()
        self.epsilon.value = self.program.epsilon

    def _attempt(self, problem: cvxpy.Problem, solver: str) -> tuple[str, np.ndarray | None, int, float]:
        """One solver on ``problem``: CVXPY's status name (:data:`TIME_LIMIT_NAME` when the solver stopped at the
        time it was given), ``x`` (None unless optimal), iterations, solver time.

        Raises ``cvxpy.error.SolverError`` when the solver fails, as ``Problem.solve`` does.
        """
        cp = self._cp
        time_given = self.time_left()
        # Problem.solve keeps one solver's state per problem and drops it when another solver ran on that problem
        # (a new cache key): the path and Problem.solve follow the same rule, so the solutions are the same.
        same_solver = self._last_solver.get(id(problem)) == solver
        self._last_solver[id(problem)] = solver
        path = self._path(problem) if solver == "CLARABEL" and not self.ignore_dpp else None
        if path is not None:
            values = {self.theta.id: self.program.linear.param_values,
                      self.epsilon.id: np.asarray(self.program.epsilon)}
            if not same_solver:
                path.reset()
            name, x, iterations, solver_time = path.solve(values, time_given)
            if path.last_status == "MaxTime":
                return TIME_LIMIT_NAME, None, iterations, solver_time
            if name == cp.SOLVER_ERROR:  # CVXPY's own words for this case
                raise cp.error.SolverError("Solver 'CLARABEL' failed. Try another solver, or solve with verbose=True"
                                           " for more information.")
            return name, x if name in _WITH_POINT else None, iterations, solver_time
        self._set_values()
        with warnings.catch_warnings():
            # An inaccurate solve is a status we handle (next solver, and a note in the message).
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            started = time.perf_counter()
            problem.solve(solver=solver, warm_start=same_solver, ignore_dpp=self.ignore_dpp,
                          **self._keywords(solver, time_given))
        stats = problem.solver_stats
        name = problem.status
        if _stopped_by_time(problem, name, time_given, time.perf_counter() - started):
            name = TIME_LIMIT_NAME
        x = np.asarray(self.x.value, dtype=float) if name in _WITH_POINT and self.x.value is not None else None
        return (name, x, int(stats.num_iters or 0) if stats is not None else 0,
                float(stats.solve_time or 0.0) if stats is not None else 0.0)

    def _solve(self, with_constraints: bool) -> RawSolution:
        cp = self._cp
        program = self.program
        problem = self.tight if (with_constraints and program.constraints) else self.fallback
        notes: list[str] = []
        iterations = 0
        solver_time = 0.0
        last = Status.SOLVER_ERROR
        almost: RawSolution | None = None  # the first point solved to reduced accuracy: used if no solver does better
        for solver in self.solvers:
            left = self.time_left()
            if left is not None and left <= 0:
                return self.time_limit_reached("; ".join(["before " + solver] + notes), solver, iterations,
                                               solver_time)
            try:
                name, x, its, own = self._attempt(problem, solver)
            except cp.error.SolverError as exc:
                notes.append(f"{solver}: {exc}")
                last = Status.SOLVER_ERROR
                continue
            iterations += its
            solver_time += own
            status = _status(name)
            if status is Status.TIME_LIMIT:  # the time is used up: no other solver is tried
                return RawSolution(status, None, iterations, solver,
                                   "; ".join(notes + [f"{solver}: stopped at its time limit"]), solver_time)
            if status in (Status.OPTIMAL, Status.INFEASIBLE, Status.UNBOUNDED):
                if status is Status.OPTIMAL and (x is None or not np.all(np.isfinite(x))):
                    notes.append(f"{solver}: reported optimal without a finite solution")
                    last = Status.NUMERICAL_ERROR
                    continue
                message = "; ".join(notes + ([f"solved by {solver}"] if notes else []))
                if status is Status.INFEASIBLE and problem is self._fallback:
                    why = f"{solver}: the program without constraint rows is infeasible: "
                    message = "; ".join(filter(None, [message, why + self._explain_infeasible_fallback(solver)]))
                return RawSolution(status, x, iterations, solver, message, solver_time)
            notes.append(f"{solver}: {name}")
            last = status
            if status is Status.ALMOST_OPTIMAL and almost is None and x is not None:
                almost = RawSolution(status, x, 0, solver)
        if almost is not None:  # no solver did better: the reduced-accuracy point, judged by CompiledProgram.solve
            return RawSolution(Status.ALMOST_OPTIMAL, almost.x, iterations, almost.solver, "; ".join(notes),
                               solver_time)
        return RawSolution(last, None, iterations, "/".join(self.solvers), "; ".join(notes), solver_time)

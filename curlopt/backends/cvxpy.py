"""The ``cvxpy`` backend: conic programs for DCP utilities, compiled once with Parameters (DPP).

The program's parameter entries become one CVXPY Parameter vector θ, entering the
rows as ``scatter @ multiply(θ, select @ x)`` — a DPP form, so CVXPY canonicalises
the problem once and each re-solve only substitutes numbers. ε is a Parameter too.
The ε-tight and the fallback problems share variables and parameters; the
fallback is built the first time it is needed.

Solvers are tried in order (default Clarabel, then SCS), because conic solvers
can stall on exponential cones; the result names the solver that succeeded and
the message lists any that failed.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar, Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import BackendError, BackendOptionError, UnsupportedUtilityError
from ..program import Program
from ..results import Status
from ..utilities import Utility
from .base import Backend, CompiledProgram, RawSolution, expression_error

__all__ = ["CvxpyBackend", "DEFAULT_SOLVERS", "DEFAULT_SOLVER_OPTIONS"]

DEFAULT_SOLVERS = ("CLARABEL", "SCS")
#: Above this many parameter entries the problem is re-canonicalised at each solve instead of using DPP:
#: CVXPY 1.9's DPP compile needs ~8·J² bytes (39 GiB for the optimistic program at (S, A) = (60, 10)),
#: while a plain rebuild costs ~0.3 s there (benchmarks/run.py).
DPP_MAX_PARAMETERS = 10_000
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


class CvxpyBackend(Backend):
    """CVXPY for utilities with a DCP expression (log, α-fair, entropy, quadratic, norms, ...).

    Parameters
    ----------
    solvers : str or sequence of str, optional
        CVXPY solver names tried in order; default ``("CLARABEL", "SCS")``
        restricted to the installed ones.
    solver_options : dict, optional
        Per-solver keyword options, merged over :data:`DEFAULT_SOLVER_OPTIONS`.
    """

    name: ClassVar[str] = "cvxpy"
    requires: ClassVar[tuple[str, ...]] = ("cvxpy",)
    extra: ClassVar[str] = "cvxpy"
    takes: ClassVar[str] = "utilities with a DCP cvxpy_expr"

    def __init__(self, solvers: str | Sequence[str] | None = None, solver_options: dict | None = None):
        if solvers is not None and not isinstance(solvers, str) and not (
                isinstance(solvers, (list, tuple)) and all(isinstance(s, str) for s in solvers)):
            raise BackendOptionError(f"solvers must be a CVXPY solver name or a list of them, got {solvers!r}.")
        if solver_options is not None and not (
                isinstance(solver_options, dict)
                and all(isinstance(k, str) and isinstance(v, dict) for k, v in solver_options.items())):
            raise BackendOptionError(
                "solver_options must be a dict from CVXPY solver name to a dict of that solver's settings,"
                f" e.g. {{'CLARABEL': {{'max_iter': 100}}}}, got {solver_options!r}."
            )
        self._requested = [solvers] if isinstance(solvers, str) else (list(solvers) if solvers else None)
        self.solver_options = {k: dict(v) for k, v in DEFAULT_SOLVER_OPTIONS.items()}
        for key, value in (solver_options or {}).items():
            self.solver_options.setdefault(key.upper(), {}).update(value)
        if solvers or solver_options:  # checked now, not at the first solve (imports CVXPY)
            order = self.solvers
            for key, value in (solver_options or {}).items():
                if key.upper() not in order:
                    raise BackendOptionError(
                        f"solver_options has settings for {key!r}, which this cvxpy backend does not run"
                        f" (its solvers: {', '.join(order)}); pass solvers=[...] to choose them."
                    )
                check_solver_settings(key.upper(), self.solver_options[key.upper()])

    @property
    def solvers(self) -> list[str]:
        """The solver order, validated against CVXPY's installed solvers."""
        import cvxpy as cp

        installed = set(cp.installed_solvers())
        if self._requested is None:
            order = [s for s in DEFAULT_SOLVERS if s in installed]
            if not order:
                raise BackendError(f"none of {DEFAULT_SOLVERS} is installed for CVXPY; installed: {sorted(installed)}.")
            return order
        order = [s.upper() for s in self._requested]
        missing = [s for s in order if s not in installed]
        if missing:
            raise BackendError(f"CVXPY solver(s) {missing} are not installed; installed: {sorted(installed)}.")
        return order

    @classmethod
    def accepts(cls, utility: Utility) -> bool:
        return utility.has_cvxpy

    #: CVXPY solvers worth comparing, when installed (a solver that cannot take a program reports so)
    COMPARABLE_SOLVERS = ("CLARABEL", "SCS", "ECOS", "HIGHS", "MOSEK", "GUROBI", "CPLEX")

    @classmethod
    def solver_variants(cls) -> list[tuple[str, dict]]:
        """Each installed CVXPY solver on its own (no fallback between them)."""
        import cvxpy as cp

        installed = set(cp.installed_solvers())
        return [(name, {"solvers": [name]}) for name in cls.COMPARABLE_SOLVERS if name in installed]

    def _compile(self, program: Program) -> "CompiledCvxpy":
        return CompiledCvxpy(self, program)


def _status(name: str) -> Status:
    import cvxpy as cp

    return {
        cp.OPTIMAL: Status.OPTIMAL,
        cp.INFEASIBLE: Status.INFEASIBLE,
        cp.UNBOUNDED: Status.UNBOUNDED,
        cp.USER_LIMIT: Status.ITERATION_LIMIT,
        cp.OPTIMAL_INACCURATE: Status.NUMERICAL_ERROR,
        cp.INFEASIBLE_INACCURATE: Status.NUMERICAL_ERROR,
        cp.UNBOUNDED_INACCURATE: Status.NUMERICAL_ERROR,
    }.get(name, Status.UNKNOWN)


class CompiledCvxpy(CompiledProgram):
    """Two DPP CVXPY problems (ε-tight and fallback) over shared variables and parameters."""

    def __init__(self, backend: CvxpyBackend, program: Program):
        super().__init__(backend, program)
        import cvxpy as cp

        self._cp = cp
        self.solvers = backend.solvers
        lin = program.linear
        n, J = program.n_vars, lin.n_params
        self.x = x = cp.Variable(n, name="x")
        self.theta = cp.Parameter(J, name="theta", value=lin.param_values.copy())
        self.epsilon = cp.Parameter(nonneg=True, name="epsilon", value=program.epsilon)
        select = sp.csr_matrix((np.ones(J), (np.arange(J), lin.param_cols)), shape=(J, n))
        scatter = sp.csr_matrix((np.ones(J), (lin.param_rows, np.arange(J))), shape=(lin.n_rows, J))
        scaled = cp.multiply(self.theta, select @ x)

        def rows(mask: np.ndarray):
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
                " rewrite its cvxpy_expr with DCP atoms, or use the pyomo backend."
            )
        costs = program.cost_map @ x
        g_rows = []
        for m, g in enumerate(program.constraints):
            expr = self._expression(g, f"constraint {m}", costs)
            if not expr.is_convex():
                raise UnsupportedUtilityError(
                    f"constraint {m} {g!r} gives a CVXPY expression that is not DCP-convex;"
                    " rewrite its cvxpy_expr with DCP atoms, or use the pyomo backend."
                )
            g_rows.append(expr <= -self.epsilon)
        self._objective = cp.Maximize(objective)
        self._base = base
        self.tight = cp.Problem(self._objective, base + g_rows)
        self._fallback = None
        #: False if CVXPY could not keep the problem DPP (then every solve recompiles)
        self.is_dpp = self.tight.is_dpp()
        #: True when the program is too large for DPP (see DPP_MAX_PARAMETERS): every solve recompiles
        self.ignore_dpp = J > DPP_MAX_PARAMETERS

    def _expression(self, utility: Utility, role: str, aggregate: Any) -> Any:
        """``utility.cvxpy_expr(aggregate)``; an exception names the utility (see :func:`expression_error`)."""
        try:
            expr = utility.cvxpy_expr(aggregate)
        except (NotImplementedError, BackendError):
            raise
        except Exception as exc:  # e.g. cp.power's rational approximation of 1 - α for α = 1e6 divides by zero
            raise expression_error("cvxpy", utility, role, "cvxpy_expr", exc) from exc
        if not isinstance(expr, self._cp.Expression):
            raise expression_error("cvxpy", utility, role, "cvxpy_expr",
                                   TypeError(f"it returned {type(expr).__name__}, not a CVXPY expression"))
        return expr

    @property
    def fallback(self):
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
        rows_only = cp.Problem(cp.Minimize(0), self._base)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows_only.solve(solver=solver, ignore_dpp=True, **self.backend.solver_options.get(solver, {}))
        except Exception as exc:  # the explanation is a courtesy: never let it fail the solve
            return f"could not check the rows alone ({type(exc).__name__})"
        if _status(rows_only.status) is Status.OPTIMAL:
            return (f"its rows hold (checked), but the objective {self.program.objective!r} is -inf at every point"
                    " they allow: λ = R x never enters the objective's domain (e.g. a reward signal that is zero"
                    " under every policy); no policy has a finite objective")
        if _status(rows_only.status) is Status.INFEASIBLE:
            return "its linear rows themselves cannot hold"
        return f"the rows alone ended with {rows_only.status}"

    def _solve(self, with_constraints: bool) -> RawSolution:
        cp = self._cp
        program = self.program
        self.theta.value = program.linear.param_values.copy()
        self.epsilon.value = program.epsilon
        problem = self.tight if (with_constraints and program.constraints) else self.fallback
        notes = []
        iterations = 0
        solver_time = 0.0
        last = Status.SOLVER_ERROR
        for solver in self.solvers:
            try:
                with warnings.catch_warnings():
                    # An inaccurate solve is a status we handle (next solver, and a note in the message).
                    warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                    problem.solve(solver=solver, warm_start=True, ignore_dpp=self.ignore_dpp,
                                  **self.backend.solver_options.get(solver, {}))
            except cp.error.SolverError as exc:
                notes.append(f"{solver}: {exc}")
                last = Status.SOLVER_ERROR
                continue
            stats = problem.solver_stats
            iterations += int(stats.num_iters or 0) if stats is not None else 0
            solver_time += float(stats.solve_time or 0.0) if stats is not None else 0.0
            status = _status(problem.status)
            if status in (Status.OPTIMAL, Status.INFEASIBLE, Status.UNBOUNDED):
                x = np.asarray(self.x.value, dtype=float) if status is Status.OPTIMAL else None
                if status is Status.OPTIMAL and (x is None or not np.all(np.isfinite(x))):
                    notes.append(f"{solver}: reported optimal without a finite solution")
                    last = Status.NUMERICAL_ERROR
                    continue
                message = "; ".join(notes + ([f"solved by {solver}"] if notes else []))
                if status is Status.INFEASIBLE and problem is self._fallback:
                    why = f"{solver}: the program without constraint rows is infeasible: "
                    message = "; ".join(filter(None, [message, why + self._explain_infeasible_fallback(solver)]))
                return RawSolution(status, x, iterations, solver, message, solver_time)
            notes.append(f"{solver}: {problem.status}")
            last = status
        return RawSolution(last, None, iterations, "/".join(self.solvers), "; ".join(notes), solver_time)

"""The ``pyomo`` backend: smooth concave utilities as Pyomo expressions, solved by Ipopt through cyipopt.

The model
---------
A program is built as a Pyomo ``ConcreteModel`` **once per structure**
(:func:`build_pyomo_model`): one variable ``x[i]`` per program column with its
bounds; the program's parameter entries (kernel, empirical kernel, radius) as one
mutable Param ``theta[j]`` each, entering the linear rows ``rows[r]`` as
``theta[j] * x[c]``; the tightness as the mutable Param ``eps``; the averages
``reward[k]`` (λ = R x) and ``cost[i]`` (ζ = C x) as named Expressions; the
objective ``f(reward)`` and the constraint rows ``g[m]: g_m(cost) <= -eps`` compiled
from each utility's form (:mod:`curlopt.utility_forms`, see :func:`pyomo_expression`),
or written by its own ``pyomo_expr``. Before a solve only the Params that changed are
rewritten (when ``program.version`` moved on), and the g rows are activated or
deactivated (ε-tight program or its fallback). ``compiled.model`` is that model.
Two compiled classes solve it: :class:`CompiledPyomoBridge` (the default solver,
below) and :class:`CompiledPyomoSolver` (a named Pyomo solver); what they share,
including the phase 1, is :class:`CompiledPyomo`.

The default solver: Ipopt through cyipopt, without the AMPL Solver Library
-------------------------------------------------------------------------
Pyomo's own ``cyipopt`` solver evaluates models through PyNumero, which needs the
AMPL Solver Library (``pynumero_ASL``); it cannot be installed from PyPI. The
default solver, ``"cyipopt-bridge"`` (:mod:`curlopt.backends.ipopt_bridge`), feeds
the same Pyomo model to cyipopt directly:

* the linear rows are read **once** from Pyomo's standard representation
  (``generate_standard_repn(..., compute_values=False)``) into a sparse pattern in
  which the positions of the ``theta`` coefficients are known; each solve rewrites
  those values from the Params (the Pyomo model stays the source of truth);
* the objective and the g rows act on a handful of aggregates (K rewards, d
  costs). They are evaluated by the chain rule, ``∇(f∘R) = Rᵀ∇f`` and
  ``∇²(f∘R) = Rᵀ∇²f R``, with the utility's **exact** numpy ``value``, ``gradient``
  and ``hessian``. A utility that gives a Pyomo expression but no numpy
  derivatives (e.g. ``CustomUtility(pyomo=...)`` without ``hessian=``) is
  differentiated symbolically by Pyomo (``differentiate``, reverse symbolic mode)
  on the K- or d-dimensional aggregate — cheap, since the aggregate is tiny. A
  utility with numpy derivatives but no Pyomo expression enters the model as a
  Python-callback ``ExternalFunction`` (the bridge never evaluates it; named Pyomo
  solvers refuse it). ``derivatives="pyomo"`` prefers Pyomo's differentiation
  wherever a Pyomo expression exists. At compile the bridge checks that the numpy
  value and the Pyomo expression agree at the starting point;
* Jacobian and Hessian sparsity structures are fixed per pattern of active
  constraints (tight / fallback). The Hessian pattern is the union of the
  ``RᵀR`` and ``CᵀC`` patterns, lower triangle, restricted to the entries of
  ``∇²f`` that can be non-zero (none for affine utilities, the diagonal for the
  separable forms: sums of logs, α-fairness and entropy).

Starting points and warm start
------------------------------
A cold start begins at the stationary occupancy of the uniform policy under the
program's kernel (the given kernel, or the empirical kernel with unvisited pairs
sent uniformly), mixed half-and-half with the uniform occupancy so that every
``λ_k = R_k x`` is strictly inside the utility's domain (e.g. > 0 for a log);
``p = ρ·P^`` and ``α`` strictly inside the radius rows. After a solve with a
solution, the next solve of the same program variant starts from its primal point
and all its multipliers (``warm_start_init_point=yes`` with small pushes, see
:data:`WARM_START_OPTIONS`). A warm start that ends in a numerical failure is
retried once from a cold start. Pass ``warm_start=False`` to cold-start every
solve. A result's ``iterations`` and solver time add up every Ipopt run behind
it (phase 1, a retried warm start, the fallback).

Non-smooth utilities
--------------------
Ipopt needs twice-differentiable functions. Utilities with kinks (``smooth`` is
False: max-min ``MinOfLinear``, ``MaxOfLinear``, 1- and inf-norms) are
**reformulated with epigraph rows** from their affine pieces, the rows of the LP
form (:func:`curlopt.lp.piece_rows`) the LP backends solve: a concave
``min_j (W_j λ + c_j)`` objective becomes a free variable ``t`` (maximised) with
rows ``t - (W R)_j x <= c_j``; a convex ``max_j (W_j ζ + c_j)`` constraint becomes
the linear rows ``(W C)_j x + c_j <= -eps``. A non-smooth utility
without affine pieces is refused, with a message naming the ``cvxpy`` backend.

Infeasibility: a phase 1 decides
--------------------------------
Ipopt's own infeasibility detection (restoration phase, then
Infeasible_Problem_Detected) is unreliable on these programs: the ε-tight rows
often push an aggregate towards the edge of the objective's domain (for the
scheduler, ζ <= 0.3 - ε forces client 2's reward λ_2 -> 0, where ln λ_2 is
undefined), and Ipopt then fails in restoration or runs to its iteration limit
(observed: 161 to 3000 iterations, up to 100 s, instead of a verdict). So before
each ε-tight solve the backend solves the **phase-1 problem**

    minimise s   subject to   the linear rows,   g_m(ζ) - s <= -ε  for every m

(the model's ``phase1_*`` components; no objective, so no domain trouble; always
feasible; warm-started like the program). Its optimum ``s*`` is the smallest
achievable ``max_m g_m(ζ) + ε``. If ``s* > infeasibility_threshold`` (1e-8) the
ε-tight program is reported INFEASIBLE without running it, and the shared solve
falls back (labelled). The phase 1 is a convex program solved to optimality, so
``s* > 0`` is a real certificate of infeasibility up to Ipopt's tolerances (not a
Farkas certificate as a conic solver gives). With ``feasibility_check=False`` the
phase 1 runs only after the ε-tight solve ends without a solution, which saves
a solve per epoch when the program is known to be feasible. If Ipopt itself says
"infeasible" but the phase 1 finds ``s* <= threshold``, the status is
NUMERICAL_ERROR (no silent fallback on a feasible program).

Statuses
--------
Ipopt's return codes map to :class:`~curlopt.results.Status` (:data:`IPOPT_STATUS`):
Solve_Succeeded → OPTIMAL; Solved_To_Acceptable_Level → ALMOST_OPTIMAL (its point is
kept only if the program's rows hold at it: the rule of :class:`~curlopt.results.Status`);
Infeasible_Problem_Detected → INFEASIBLE (checked by the phase 1, above);
Maximum_Iterations_Exceeded → ITERATION_LIMIT; Maximum_CpuTime/WallTime_Exceeded →
TIME_LIMIT; Diverging_Iterates → UNBOUNDED; Restoration_Failed,
Error_In_Step_Computation, Search_Direction_Becomes_Too_Small,
Invalid_Number_Detected → NUMERICAL_ERROR; Feasible_Point_Found → UNKNOWN; every other
code Ipopt defines → SOLVER_ERROR. A named Pyomo solver's termination condition maps by
:data:`TERMINATION_STATUS`. No Ipopt failure raises. A utility's own code is not a solver: an exception from its
numpy value, gradient or Hessian other than a domain error (ValueError,
ZeroDivisionError, OverflowError, FloatingPointError: Ipopt shortens its step)
raises :class:`~curlopt.errors.UtilityCodeError` naming the utility. Options are
checked when the backend is built (each is set on a scratch cyipopt problem):
one Ipopt refuses is a :class:`~curlopt.errors.BackendOptionError`. Pyomo's log
messages go to the ``curlopt.backends.pyomo`` logger, one line each (on stderr
when logging is not configured), never to stdout. Tolerances (:data:`DEFAULT_IPOPT_OPTIONS`): ``tol`` 1e-10,
``constr_viol_tol`` 1e-9 and ``bound_relax_factor`` 0 — Ipopt's default relaxes
every bound by 1e-8, which left SLA rows violated by ~1e-8 and LP optima above
the true optimum.

Named Pyomo solvers
-------------------
``PyomoBackend(solver="ipopt")`` (an ``ipopt`` executable on PATH),
``solver="appsi_highs"`` or ``"highs"`` (linear programs), or a commercial solver
name solves the same model through Pyomo's ``SolverFactory`` instead. The name is
checked when the backend is created: an unknown or unavailable solver is a
:class:`~curlopt.errors.BackendError`; so are options Ipopt refuses (``ipopt``) or
HiGHS refuses (``appsi_highs``, ``highs``); other solvers' options are passed on
unchecked. Pyomo's own ``"cyipopt"`` solver is accepted
only if its AMPL Solver Library is there. These solvers re-solve from the
previously loaded variable values; iterations are not reported.

Installation
------------
``pip install 'curlopt[pyomo]'`` installs Pyomo and ``cyipopt-wheels``. cyipopt
itself is published on PyPI as a source distribution only, which needs an Ipopt
library (and headers) to build against; ``cyipopt-wheels`` is a binary
distribution of the same ``cyipopt`` module with Ipopt (and MUMPS) bundled. Its
only release is the pre-release ``1.7.0.dev0``, so the extra pins it exactly
(``cyipopt-wheels==1.7.0.dev0``): an exact pin is the one way pip installs a
pre-release without ``--pre``, and nothing newer can sneak in.

Importing this module imports neither Pyomo nor cyipopt; they are imported when a
program is compiled (or a named solver is checked).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import math
from typing import Any, ClassVar, Iterator, Sequence

import numpy as np

from ..errors import (BackendError, BackendNotInstalledError, BackendOptionError, CurloptError,
                      UnsupportedUtilityError, UtilityCodeError)
from .. import utility_forms as forms
from ..lp import piece_rows
from ..model import stationary_occupancy
from ..program import Program
from ..results import Status
from ..utilities import Utility, curvature_violation
from .base import Backend, CompiledProgram, RawSolution, call_utility, expression_error

#: where Pyomo's messages go (one line each); without a logging configuration, WARNING and above print on stderr
LOG = logging.getLogger(__name__)
#: exceptions of a utility's numpy code that mean "outside the domain": Ipopt shortens its step
DOMAIN_ERRORS = (ValueError, ZeroDivisionError, OverflowError, FloatingPointError)

__all__ = [
    "PyomoBackend",
    "CompiledPyomo",
    "CompiledPyomoBridge",
    "CompiledPyomoSolver",
    "build_pyomo_model",
    "pyomo_expression",
    "can_express",
    "starting_point",
    "BRIDGE",
    "DEFAULT_IPOPT_OPTIONS",
    "WARM_START_OPTIONS",
    "IPOPT_STATUS",
    "TERMINATION_STATUS",
]

#: name of the default solver: Ipopt through cyipopt, via the bridge
BRIDGE = "cyipopt-bridge"

#: Ipopt options of the bridge: quiet; tolerances such that rows hold to ~1e-9 and
#: objectives match a conic solver to ~1e-9 relative; adaptive barrier update.
DEFAULT_IPOPT_OPTIONS: dict[str, Any] = {
    "print_level": 0,
    "sb": "yes",
    "tol": 1e-10,
    "constr_viol_tol": 1e-9,
    "acceptable_tol": 1e-8,
    "acceptable_constr_viol_tol": 1e-8,
    "acceptable_dual_inf_tol": 1e-6,
    "acceptable_compl_inf_tol": 1e-8,
    "acceptable_iter": 10,
    "max_iter": 3000,
    "mu_strategy": "adaptive",
    "honor_original_bounds": "yes",
    "bound_relax_factor": 0.0,
}

#: added on a warm start: keep the previous point and multipliers (nearly) where they were. Pushes of
#: 1e-10 took 20-25% fewer iterations than 1e-8 over simulated runs (benchmarks/bench_pyomo_warmstart.py);
#: mu_init only matters with mu_strategy "monotone" (much slower here than the default "adaptive").
WARM_START_OPTIONS: dict[str, Any] = {
    "warm_start_bound_push": 1e-10,
    "warm_start_bound_frac": 1e-10,
    "warm_start_slack_bound_push": 1e-10,
    "warm_start_slack_bound_frac": 1e-10,
    "warm_start_mult_bound_push": 1e-10,
    "mu_init": 1e-9,
}

#: Ipopt ApplicationReturnStatus code -> Status
IPOPT_STATUS: dict[int, Status] = {
    0: Status.OPTIMAL,                # Solve_Succeeded
    1: Status.ALMOST_OPTIMAL,         # Solved_To_Acceptable_Level
    2: Status.INFEASIBLE,             # Infeasible_Problem_Detected (checked by the phase 1)
    3: Status.NUMERICAL_ERROR,        # Search_Direction_Becomes_Too_Small
    4: Status.UNBOUNDED,              # Diverging_Iterates
    5: Status.SOLVER_ERROR,           # User_Requested_Stop (the bridge never asks)
    6: Status.UNKNOWN,                # Feasible_Point_Found (square problems only: no optimality claim)
    -1: Status.ITERATION_LIMIT,       # Maximum_Iterations_Exceeded
    -2: Status.NUMERICAL_ERROR,       # Restoration_Failed
    -3: Status.NUMERICAL_ERROR,       # Error_In_Step_Computation
    -4: Status.TIME_LIMIT,            # Maximum_CpuTime_Exceeded
    -5: Status.TIME_LIMIT,            # Maximum_WallTime_Exceeded
    -10: Status.SOLVER_ERROR,         # Not_Enough_Degrees_Of_Freedom
    -11: Status.SOLVER_ERROR,         # Invalid_Problem_Definition
    -12: Status.SOLVER_ERROR,         # Invalid_Option
    -13: Status.NUMERICAL_ERROR,      # Invalid_Number_Detected
    -100: Status.SOLVER_ERROR,        # Unrecoverable_Exception
    -101: Status.SOLVER_ERROR,        # NonIpopt_Exception_Thrown
    -102: Status.SOLVER_ERROR,        # Insufficient_Memory
    -199: Status.SOLVER_ERROR,        # Internal_Error
}

#: a warm start ending in one of these is retried from a cold start
_RETRY_COLD = (Status.NUMERICAL_ERROR, Status.SOLVER_ERROR, Status.UNKNOWN, Status.UNBOUNDED)


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


class PyomoBackend(Backend):
    """Pyomo models of the programs, solved by Ipopt through cyipopt (or a named Pyomo solver).

    Parameters
    ----------
    solver : str, default ``"cyipopt-bridge"``
        ``"cyipopt-bridge"``: Ipopt via cyipopt, no AMPL Solver Library or
        executable needed. Any other name is a Pyomo ``SolverFactory`` solver
        (``"ipopt"`` for an executable on PATH, ``"appsi_highs"``, ``"gurobi"``,
        ...), checked for availability here.
    options : dict, optional
        Solver options. For the bridge, Ipopt options merged over
        :data:`DEFAULT_IPOPT_OPTIONS` (e.g. ``{"max_iter": 50}``,
        ``{"max_cpu_time": 5.0}``, ``{"print_level": 5}``); for a named solver,
        set on ``solver.options``.
    warm_start : bool, default True
        Bridge only: start each re-solve from the previous solution and
        multipliers.
    warm_start_options : dict, optional
        Ipopt options added on a warm start, merged over :data:`WARM_START_OPTIONS`.
    feasibility_check : bool, default True
        Before each ε-tight solve, solve the *phase-1* problem: minimise ``s``
        subject to the linear rows and ``g_m(ζ) - s <= -ε``. If its optimum
        ``s*`` exceeds ``infeasibility_threshold`` the ε-tight program is
        reported INFEASIBLE without running it (and the shared solve falls
        back). With False the phase 1 runs only after the ε-tight solve fails.
        Either way an ``INFEASIBLE`` status has a phase 1 behind it (unless the
        phase 1 itself failed: then Ipopt's own verdict stands, and the message
        says the phase 1 did not solve).
    infeasibility_threshold : float, default 1e-8
        ``s*`` above this means infeasible.
    derivatives : {"auto", "pyomo"}, default "auto"
        Bridge only: where the utilities' derivatives come from. ``"auto"``
        uses a utility's numpy ``gradient``/``hessian`` when it has them and
        Pyomo's symbolic differentiation of its Pyomo expression otherwise;
        ``"pyomo"`` prefers Pyomo's differentiation whenever there is a
        Pyomo expression (:func:`can_express`).

    Raises
    ------
    BackendError
        For an unknown option value, or a named solver that is unknown or not
        available on this machine.
    """

    name: ClassVar[str] = "pyomo"
    requires: ClassVar[tuple[str, ...]] = ("pyomo", "cyipopt")
    extra: ClassVar[str] = "pyomo"
    takes: ClassVar[str] = (
        "smooth utilities with a form (describe()), a pyomo_expr or numpy gradient and hessian,"
        " and LP-representable ones through epigraph rows"
    )
    #: the default solver's statuses (Ipopt's return codes through the cyipopt bridge); a named Pyomo solver's
    #: termination conditions map by :data:`TERMINATION_STATUS`
    STATUS_MAP: ClassVar[dict[int, Status]] = IPOPT_STATUS

    def __init__(self, solver: str = BRIDGE, options: dict[str, Any] | None = None, warm_start: bool = True,
                 warm_start_options: dict[str, Any] | None = None, feasibility_check: bool = True,
                 infeasibility_threshold: float = 1e-8, derivatives: str = "auto"):
        if not isinstance(solver, str) or not solver:
            raise BackendError(f"solver must be a solver name, got {solver!r}.")
        if derivatives not in ("auto", "pyomo"):
            raise BackendError(f"derivatives must be 'auto' or 'pyomo', got {derivatives!r}.")
        if options is not None and not isinstance(options, dict):
            raise BackendError(f"options must be a dict, got {type(options).__name__}.")
        if not isinstance(infeasibility_threshold, (int, float)) or not infeasibility_threshold >= 0:
            raise BackendError(f"infeasibility_threshold must be a number >= 0, got {infeasibility_threshold!r}.")
        self.solver = solver
        self.derivatives = derivatives
        self.feasibility_check = bool(feasibility_check)
        self.infeasibility_threshold = float(infeasibility_threshold)
        self.warm_start = bool(warm_start)
        self.warm_start_options = {**WARM_START_OPTIONS, **(warm_start_options or {})}
        if warm_start_options is not None and not isinstance(warm_start_options, dict):
            raise BackendError(f"warm_start_options must be a dict, got {type(warm_start_options).__name__}.")
        if solver == BRIDGE:
            self.options = {**DEFAULT_IPOPT_OPTIONS, **(options or {})}
            if (options or warm_start_options) and importlib.util.find_spec("cyipopt") is not None:
                from .ipopt_bridge import check_ipopt_options

                check_ipopt_options({**(options or {}), **(warm_start_options or {})})
        else:
            if warm_start_options:
                raise BackendOptionError(
                    f"warm_start_options apply to the default solver {BRIDGE!r} only, not to {solver!r}.")
            self.options = dict(options or {})
            _check_pyomo_solver(solver)
            _check_named_solver_options(solver, self.options)

    @classmethod
    def accepts(cls, utility: Utility) -> bool:
        if not utility.smooth:
            return utility.affine_pieces() is not None
        return can_express(utility) or has_numpy_derivatives(utility)

    #: Pyomo solvers tried by ``solver_variants`` besides the cyipopt bridge
    PYOMO_SOLVERS = ("ipopt", "appsi_highs", "gurobi_direct", "cplex_direct")

    @classmethod
    def solver_variants(cls) -> list[tuple[str, dict]]:
        """The cyipopt bridge, and each Pyomo solver from :attr:`PYOMO_SOLVERS` available here."""
        import pyomo.environ  # noqa: F401  (registers Pyomo's solver plugins)

        variants = [(BRIDGE, {})]
        with pyomo_messages([]):  # probing a missing solver is not worth a logged traceback
            names = [name for name in cls.PYOMO_SOLVERS if _solver_available(name)]
        return variants + [(name, {"solver": name}) for name in names]

    def check(self, program: Program) -> None:
        """Also refuse a utility whose numpy Hessian contradicts its declared curvature.

        Ipopt finds a local optimum; only for a concave objective and convex
        constraints is it the optimum. CVXPY proves curvature (DCP); here it is
        sampled (:func:`curlopt.utilities.curvature_violation`), a necessary check.
        """
        super().check(program)
        roles = [("objective", program.objective)] + [(f"constraint {m}", g) for m, g in enumerate(program.constraints)]
        for role, utility in roles:
            if not utility.smooth:
                continue
            the = "the objective" if role == "objective" else role
            found = call_utility(utility, the, "hessian", curvature_violation, utility)
            if found is not None:
                point, eigenvalue = found
                raise UnsupportedUtilityError(
                    f"the {role} {utility!r} is declared {utility.curvature} but its Hessian at y={np.round(point, 4).tolist()}"
                    f" has eigenvalue {eigenvalue:.3g}: the pyomo backend (a local solver) needs a concave objective and"
                    " convex constraints. Fix the utility's curvature or its derivatives."
                )

    def _compile(self, program: Program) -> "CompiledPyomo":
        with pyomo_messages():
            if self.solver == BRIDGE:
                return CompiledPyomoBridge(self, program)
            return CompiledPyomoSolver(self, program)

    def __repr__(self) -> str:
        return f"PyomoBackend(solver={self.solver!r})"


class _OneLine(logging.Handler):
    """Pyomo's log records as one line each, to curlopt's logger (or into a list)."""

    def __init__(self, collect: list[str] | None = None):
        super().__init__()
        self.collect = collect

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = " ".join(record.getMessage().split())
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                text += f" ({type(exc).__name__}: {' '.join(str(exc).split())})"
        except Exception:  # a record that cannot be formatted is not worth a crash
            text = str(record.msg)
        if self.collect is not None:
            self.collect.append(text)
        else:
            LOG.log(record.levelno, "Pyomo: %s", text)


@contextlib.contextmanager
def pyomo_messages(collect: list[str] | None = None) -> Iterator[None]:
    """Inside the block, Pyomo's log messages (which Pyomo prints to stdout, with tracebacks) go to the
    ``curlopt.backends.pyomo`` logger as one line each — printed on stderr when logging is not
    configured — or, with ``collect``, into that list."""
    logger = logging.getLogger("pyomo")
    saved = (logger.handlers[:], logger.propagate)
    logger.handlers = [_OneLine(collect)]
    logger.propagate = False
    try:
        yield
    finally:
        logger.handlers, logger.propagate = saved


def _check_named_solver_options(name: str, options: dict[str, Any]) -> None:
    """Check a named Pyomo solver's options where the solver can be asked: Ipopt's (``ipopt``,
    ``cyipopt``) on a scratch cyipopt problem, HiGHS's (``appsi_highs``, ``highs``) on a scratch HiGHS.
    Other solvers' options are passed on unchecked."""
    if not options:
        return
    owner = f"the pyomo backend (solver {name!r})"
    if name in ("ipopt", "cyipopt") and importlib.util.find_spec("cyipopt") is not None:
        from .ipopt_bridge import check_ipopt_options

        check_ipopt_options(options, owner)
    elif name in ("appsi_highs", "highs"):
        from .highs import check_highs_options

        check_highs_options(options, owner)


def _check_pyomo_solver(name: str) -> None:
    """Raise BackendError unless Pyomo's SolverFactory has an available solver ``name``."""
    if importlib.util.find_spec("pyomo") is None:
        raise BackendNotInstalledError(f"the Pyomo solver {name!r} needs Pyomo: pip install 'curlopt[pyomo]'.")
    if name == "cyipopt":
        from pyomo.contrib.pynumero.asl import AmplInterface

        if not AmplInterface.available():
            raise BackendError(
                "Pyomo's own 'cyipopt' solver needs the AMPL Solver Library (pynumero_ASL), which is not installed;"
                f" use the default solver {BRIDGE!r}, which runs Ipopt through cyipopt without it."
            )
    solver = _solver_factory(name)
    messages: list[str] = []
    try:
        with pyomo_messages(messages):
            available = bool(solver.available(exception_flag=False))
    except Exception as exc:  # some plugins raise instead of answering
        available = False
        messages.append(f"{type(exc).__name__}: {exc}")
    detail = f" (Pyomo: {'; '.join(messages)})" if messages else ""
    if not available:
        raise BackendError(
            f"the Pyomo solver {name!r} is not available on this machine{detail}: install it (for 'ipopt', an"
            f" ipopt executable on PATH), or use the default solver {BRIDGE!r} (Ipopt through cyipopt)."
        )


def _solver_available(name: str) -> bool:
    try:
        _check_pyomo_solver(name)
    except BackendError:
        return False
    return True


def _solver_factory(name: str):
    # pyomo.environ registers Pyomo's solver plugins: without it, SolverFactory knows no solver at all
    import pyomo.environ  # noqa: F401
    from pyomo.opt import SolverFactory
    from pyomo.opt.base.solvers import UnknownSolver

    messages: list[str] = []  # Pyomo logs a warning with a traceback for an unknown name; we say it once
    with pyomo_messages(messages):
        solver = SolverFactory(name)
    if solver is None or isinstance(solver, UnknownSolver):
        raise BackendError(f"Pyomo knows no solver named {name!r}; the default solver is {BRIDGE!r}.")
    for text in messages:
        LOG.warning("Pyomo: %s", text)
    return solver


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
        For a non-smooth objective, its epigraph rows ``(W R, c)`` (:func:`curlopt.lp.piece_rows`).
    """

    def __init__(self):
        self.model = None
        self.variables: list[Any] = []
        self.theta: list[Any] = []
        self.external: list[str] = []
        self.objective_term = None  # (utility, aggregate exprs, expression) for a smooth objective
        self.objective_rows = None
        self.g_terms: list[tuple[int, Utility, Any]] = []  # (m, utility, ConstraintData)
        self.linear_constraints: list[Any] = []


def _role(label: str) -> str:
    """``"objective"`` -> ``"the objective"``, ``"g3"`` -> ``"constraint 3"`` (for messages)."""
    return "the objective" if label == "objective" else f"constraint {label[1:]}" if label[:1] == "g" else label


# ----------------------------------------------------------------------------
# Utilities as Pyomo expressions
# ----------------------------------------------------------------------------


def can_express(utility: Utility) -> bool:
    """True when ``utility`` gives its own ``pyomo_expr``, or a form the pyomo backend writes as one smooth
    Pyomo expression (not a minimum or maximum of several pieces, not a 1- or inf-norm)."""
    return utility.has_pyomo or _expressible(utility.describe())


def _expressible(form: forms.Form | None) -> bool:
    if isinstance(form, forms.AffinePieces):
        return form.combine == "affine"
    if isinstance(form, forms.Norm):
        return form.ord == 2
    if isinstance(form, (forms.Logs, forms.Powers, forms.Entropy, forms.Quadratic)):
        return True
    if isinstance(form, forms.Of):
        return can_express(form.utility)
    if isinstance(form, (forms.Minimum, forms.Maximum)) and len(form.terms) > 1:
        return False  # a kink: such utilities enter through epigraph rows
    if isinstance(form, (forms.Sum, forms.Minimum, forms.Maximum, forms.Negated, forms.HeadPlusLinear)):
        return all(_expressible(term) for term in form.children())
    return False


def pyomo_expression(utility: Utility, y: Sequence[Any], role: str = "the utility") -> Any:
    """The Pyomo expression of ``utility`` at the Pyomo expressions ``y``: its own ``pyomo_expr`` when it
    gives one (an optional expression, see :class:`~curlopt.utilities.Utility`), else its compiled form.

    An exception names the utility and its ``role`` (see :func:`~curlopt.backends.base.expression_error`).
    """
    method = "pyomo_expr" if utility.has_pyomo else "compiled form"
    try:
        if utility.has_pyomo:
            return utility.pyomo_expr(y)
        form = utility.describe()
        if not _expressible(form):
            raise NotImplementedError(f"{utility!r} has neither a pyomo_expr nor a form the pyomo backend can write"
                                      " as one smooth Pyomo expression.")
        return _compile(form, list(y), role)
    except (NotImplementedError, CurloptError):
        raise
    except Exception as exc:
        raise expression_error("pyomo", utility, role, method, exc) from exc


def _compile(form: forms.Form, y: list, role: str) -> Any:
    """The Pyomo expression of ``form`` at ``y`` (terms summed in the order of ``y``)."""
    from pyomo.environ import log, sqrt

    if isinstance(form, forms.AffinePieces):
        return sum(float(w) * yk for w, yk in zip(form.matrix[0], y)) + float(form.offset[0])
    if isinstance(form, forms.Logs):
        return sum(float(w) * log(yk + form.shift) for w, yk in zip(form.weights, y))
    if isinstance(form, forms.Powers):
        e = form.exponent
        return sum(float(w) * (yk + form.shift) ** e / e for w, yk in zip(form.weights, y))
    if isinstance(form, forms.Entropy):
        return -sum(yk * log(yk + form.shift) for yk in y)
    if isinstance(form, forms.Quadratic):
        n, q = form.dim, form.matrix
        quad = sum(float(q[i, j]) * y[i] * y[j] for i in range(n) for j in range(n) if q[i, j])
        return quad + sum(float(a) * yk for a, yk in zip(form.linear, y)) + form.constant
    if isinstance(form, forms.Norm):
        return sqrt(sum((yk - float(c)) ** 2 for yk, c in zip(y, form.center))) - form.radius
    if isinstance(form, forms.Of):
        return pyomo_expression(form.utility, y, role)
    if isinstance(form, forms.HeadPlusLinear):
        n = form.head.dim
        return _compile(form.head, y[:n], role) + sum(float(k) * z for k, z in zip(form.coefficients, y[n:]) if k)
    if isinstance(form, forms.Negated):
        return -_compile(form.inner, y, role)
    terms = [_compile(term, y, role) for term in form.children()]
    total = terms[0]  # a Sum, or a Minimum/Maximum of one term
    for term in terms[1:]:
        total = total + term
    return total


def _pyomo_or_external(model, utility: Utility, y: list, label: str, holder: PyomoModel):
    """The utility's Pyomo expression, or a Python-callback ExternalFunction of its numpy value."""
    import pyomo.environ as pe

    if can_express(utility):
        return pyomo_expression(utility, y, _role(label))
    function = pe.ExternalFunction(lambda *args: utility.value(np.asarray(args, dtype=float)))
    model.add_component(f"{label}_function", function)
    holder.external.append(f"{label} {utility!r}")
    return function(*y)


# ----------------------------------------------------------------------------
# Building the model
# ----------------------------------------------------------------------------


def _sparse_sum(matrix, r: int, x: list) -> Any:
    """``Σ_c matrix[r, c] x[c]`` over the stored entries of row ``r`` of a CSR matrix."""
    import pyomo.environ as pe

    start, stop = matrix.indptr[r], matrix.indptr[r + 1]
    return pe.quicksum(float(a) * x[c] for a, c in zip(matrix.data[start:stop], matrix.indices[start:stop]))


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


def _add_columns_and_rows(m, program: Program, out: PyomoModel) -> list:
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

    def row_rule(_m, r):
        start, stop = fixed.indptr[r], fixed.indptr[r + 1]
        terms = [float(a) * x[c] for a, c in zip(fixed.data[start:stop], fixed.indices[start:stop])]
        terms += [theta[j] * x[param_cols[j]] for j in param_by_row[r]]
        body = pe.quicksum(terms)
        lo, up = lin.lower[r], lin.upper[r]
        if lo == up:
            return body == float(lo)
        return (float(lo) if np.isfinite(lo) else None, body, float(up) if np.isfinite(up) else None)

    m.rows = pe.Constraint(range(lin.n_rows), rule=row_rule)
    out.linear_constraints = [m.rows[r] for r in range(lin.n_rows)]
    return x


def _add_objective(m, program: Program, x: list, out: PyomoModel) -> None:
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


def _add_constraints(m, program: Program, x: list, out: PyomoModel) -> None:
    """The rows ``g_m(cost) <= -eps`` (smooth ``g_m``) and ``(W C)_j x + c_j <= -eps`` (the LP rows of a
    non-smooth ``g_m``), and the inactive phase-1 problem: the smallest ``s`` with every row ``- s`` holding."""
    import pyomo.environ as pe

    costs = [m.cost[i] for i in range(program.cost_map.shape[0])]
    smooth = [i for i, g in enumerate(program.constraints) if not _uses_pieces(g)]
    rows = {i: piece_rows(g, program.cost_map, f"constraint {i}")
            for i, g in enumerate(program.constraints) if _uses_pieces(g)}
    bodies = {i: _pyomo_or_external(m, program.constraints[i], costs, f"g{i}", out) for i in smooth}
    index = [(i, j) for i, (w, _) in rows.items() for j in range(w.shape[0])]

    def piece_body(i, j):
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


def starting_point(program: Program) -> np.ndarray:
    """A cold-start point for ``program`` (see the module docstring), length ``n_vars``."""
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
        if "deviation" in blocks and hasattr(program, "empirical_kernel"):
            deviation = np.abs(p - program.empirical_kernel * rho[:, :, None])
            room = np.maximum(program.radius * rho - deviation.sum(axis=2), 0.0)
            x[blocks["deviation"].slice] = (deviation + 0.5 * room[:, :, None] / S).ravel()
    return x


# ----------------------------------------------------------------------------
# Compiled program
# ----------------------------------------------------------------------------


def _numpy_evaluator(utility: Utility, role: str = "the utility"):
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

    def guarded(method: str):
        function = getattr(utility, method)
        return lambda y: call_utility(utility, role, method, function, y, allowed=DOMAIN_ERRORS)

    return NumpyEvaluator(dim, guarded("value"), guarded("gradient"), guarded("hessian"), pairs=pairs,
                          lower=utility.domain_lower())


def _evaluator(utility: Utility, derivatives: str, role: str = "the utility"):
    from .ipopt_bridge import PyomoEvaluator

    numpy_ok = has_numpy_derivatives(utility)
    use_pyomo = can_express(utility) and (derivatives == "pyomo" or not numpy_ok)
    if use_pyomo:
        builder = lambda y: pyomo_expression(utility, y, role)  # noqa: E731
        return PyomoEvaluator(utility.dim, builder, lower=utility.domain_lower()), "pyomo"
    if not numpy_ok:
        raise UnsupportedUtilityError(
            f"{utility!r} has neither a pyomo_expr nor numpy gradient and hessian; the pyomo backend needs one of them."
        )
    return _numpy_evaluator(utility, role), "numpy"


class CompiledPyomo(CompiledProgram):
    """A program's Pyomo model, solved by a subclass: :class:`CompiledPyomoBridge` (Ipopt through cyipopt,
    the default) or :class:`CompiledPyomoSolver` (a named Pyomo solver).

    This class holds what both share: the model and its data, the switch between the ε-tight program,
    its fallback and the phase-1 problem, and the phase-1 decision on infeasibility.

    Attributes
    ----------
    model : pyomo ConcreteModel
        The model (its Params hold the data of the last solve).
    bridge : IpoptBridge or None
        The cyipopt bridge of the program (default solver); ``phase1_bridge``
        that of the phase-1 problem, built when first needed. None for a named solver.
    derivative_sources : dict of str to str
        ``"numpy"`` or ``"pyomo"`` for the objective and each smooth g row (bridge only).
    last_solve : list of BridgeResult
        The Ipopt runs of the last attempt (phase 1, a retried warm start, ...; bridge only).
    last_violation : float or None
        The phase-1 optimum ``s*`` (smallest achievable ``max_m g_m(ζ) + ε``) of
        the last ε-tight attempt that ran a phase 1.
    """

    def __init__(self, backend: PyomoBackend, program: Program):
        super().__init__(backend, program)
        self.built = build_pyomo_model(program)
        self.model = self.built.model
        self._version = program.version
        self._pushed = program.linear.param_values.copy()
        self._pushed_eps = float(program.epsilon)
        self.bridge = None
        self.phase1_bridge = None
        self.derivative_sources: dict[str, str] = {}
        self.last_solve: list[Any] = []
        self.last_violation: float | None = None
        #: how many warm starts failed and were retried from a cold start (bridge only)
        self.cold_retries = 0

    def _run_program(self) -> RawSolution:
        """Solve the model as activated (tight or fallback), over the program's variables (and ``t``)."""
        raise NotImplementedError

    def _run_phase1(self) -> RawSolution:
        """Solve the phase-1 problem (activated); the last entry of ``x`` is ``s``."""
        raise NotImplementedError

    def _solver_name(self) -> str:
        raise NotImplementedError

    # -- data -----------------------------------------------------------------
    def _start(self) -> np.ndarray:
        """Cold-start point over the bridge's variables (x, then t for an epigraph objective)."""
        program = self.program
        x = starting_point(program)
        if len(self.built.variables) == program.n_vars:
            return x
        rows, c = self.built.objective_rows
        t = float(np.min(rows @ x + c)) - 1.0
        return np.append(x, t)

    def _phase1_start(self) -> np.ndarray:
        """Cold start of the phase-1 problem: the program's point and an s that meets every g row with room."""
        program = self.program
        x = starting_point(program)
        costs = program.cost_map @ x
        values = []
        for m, g in enumerate(program.constraints):
            try:
                values.append(call_utility(g, f"constraint {m}", "value", g.value, costs, allowed=DOMAIN_ERRORS))
            except UtilityCodeError:
                raise
            except DOMAIN_ERRORS:  # outside its domain at the start: the phase 1 finds a point
                values.append(math.nan)
        finite = [v for v in values if math.isfinite(v)]
        s = (max(finite) if finite else 0.0) + program.epsilon + 1.0
        return np.append(x, s)

    def _sync(self) -> None:
        """Write the program data that changed into the Params."""
        program, m = self.program, self.model
        if program.version != self._version:
            values = program.linear.param_values
            for j in np.flatnonzero(values != self._pushed):
                self.built.theta[j].set_value(float(values[j]))
            self._pushed = values.copy()
            if program.epsilon != self._pushed_eps:
                m.eps.set_value(float(program.epsilon))
                self._pushed_eps = float(program.epsilon)
            self._version = program.version

    def _activate(self, mode: str) -> None:
        """Switch the model between ``"tight"``, ``"fallback"`` and ``"phase1"`` (objective and rows)."""
        m = self.model
        for name, on in (("objective", mode != "phase1"), ("objective_pieces", mode != "phase1"),
                         ("g", mode == "tight"), ("g_pieces", mode == "tight"),
                         ("phase1_objective", mode == "phase1"), ("phase1_g", mode == "phase1"),
                         ("phase1_pieces", mode == "phase1")):
            component = m.component(name)
            if component is not None:
                component.activate() if on else component.deactivate()

    # -- solving ----------------------------------------------------------------
    def _solve(self, with_constraints: bool) -> RawSolution:
        """One attempt; for the ε-tight program a phase 1 decides infeasibility (see :class:`PyomoBackend`).

        Pyomo's log messages during the attempt go to the logging module, one line each (never stdout).
        """
        with pyomo_messages():
            return self._solve_once(with_constraints)

    def _solve_once(self, with_constraints: bool) -> RawSolution:
        self._sync()
        self.last_solve = []
        if not (with_constraints and self.program.constraints):
            self._activate("fallback")
            return self._attempt()
        self.last_violation = None
        runs: list[RawSolution] = []
        threshold = self.backend.infeasibility_threshold
        if self.backend.feasibility_check:
            phase1, violation = self._phase1()
            runs.append(phase1)
            if violation is not None and violation > threshold:
                return self._infeasible(runs, violation, "")
        self._activate("tight")
        raw = self._attempt()
        runs.append(raw)
        if not raw.status.has_solution and not self.backend.feasibility_check:
            phase1, violation = self._phase1()
            runs.append(phase1)
            if violation is not None and violation > threshold:
                return self._infeasible(runs, violation, f"{self._solver_name()} ended with {raw.status.value}; ")
        else:
            violation = self.last_violation
        message = raw.message
        if raw.status is Status.INFEASIBLE and violation is not None:
            raw.status = Status.NUMERICAL_ERROR
            message = (f"{self._solver_name()} reported the ε-tight program infeasible, but the phase-1 problem"
                       f" meets every g row (smallest max_m g_m(ζ)+ε = {violation:.3g}); " + message)
        notes = [r.message for r in runs if r is not raw and r.message and not r.status.has_solution]
        return RawSolution(
            raw.status, raw.x, self._total_iterations(runs), raw.solver,
            "; ".join(notes + ([message] if message else [])),
            sum(r.solver_time or 0.0 for r in runs),
        )

    def _infeasible(self, runs: list[RawSolution], violation: float, prefix: str) -> RawSolution:
        message = (f"{prefix}phase 1: the ε-tight rows cannot all hold — the smallest achievable max_m g_m(ζ) + ε is"
                   f" {violation:.6g} > {self.backend.infeasibility_threshold:g}")
        return RawSolution(Status.INFEASIBLE, None, self._total_iterations(runs), runs[-1].solver, message,
                           sum(r.solver_time or 0.0 for r in runs))

    @staticmethod
    def _total_iterations(runs: list[RawSolution]) -> int | None:
        counts = [r.iterations for r in runs if r.iterations is not None]
        return sum(counts) if counts else None

    def _phase1(self) -> tuple[RawSolution, float | None]:
        """Solve the phase-1 problem; return its outcome and ``s*`` (None when it did not solve)."""
        self._activate("phase1")
        try:
            raw = self._run_phase1()
        finally:
            self._activate("tight")
        violation = None
        if raw.status.has_solution and raw.x is not None:
            violation = float(raw.x[-1])
            self.last_violation = violation
        elif raw.message:
            raw.message = f"phase 1 did not solve ({raw.status.value}: {raw.message})"
        else:
            raw.message = f"phase 1 did not solve ({raw.status.value})"
        return raw, violation

    def _attempt(self) -> RawSolution:
        """Solve the model as activated (tight or fallback)."""
        raw = self._run_program()
        if raw.x is not None:
            raw.x = raw.x[: self.program.n_vars]
        return raw


class CompiledPyomoBridge(CompiledPyomo):
    """The Pyomo model solved by Ipopt through cyipopt (:mod:`curlopt.backends.ipopt_bridge`), the default."""

    def __init__(self, backend: PyomoBackend, program: Program):
        super().__init__(backend, program)
        self._start_note = ""
        self._evaluators: dict[int, Any] = {}
        self._build_bridge()

    def _evaluator(self, utility: Utility, role: str):
        """One evaluator per utility object (shared by the program and its phase 1)."""
        if id(utility) not in self._evaluators:
            self._evaluators[id(utility)] = _evaluator(utility, self.backend.derivatives, _role(role))
        evaluator, source = self._evaluators[id(utility)]
        self.derivative_sources[role] = source
        return evaluator

    def _build_bridge(self) -> None:
        from .ipopt_bridge import AffineEvaluator, BridgeError, IpoptBridge, SmoothTerm

        built, program, m = self.built, self.program, self.model
        if built.objective_term is not None:
            f, rewards, expr = built.objective_term
            objective = SmoothTerm(self._evaluator(f, "objective"), rewards, expression=expr,
                                   label=f"objective {f!r}")
        else:
            objective = SmoothTerm(AffineEvaluator([1.0]), [m.t], expression=m.t, label="objective epigraph t")
        costs = [m.cost[i] for i in range(program.cost_map.shape[0])]
        terms = [SmoothTerm(self._evaluator(g, f"g{i}"), costs, constraint=con, label=f"constraint {i} {g!r}")
                 for i, g, con in built.g_terms]
        try:
            self.bridge = IpoptBridge(built.variables, built.linear_constraints, objective, terms, maximize=True)
            start = self._start()
            self.bridge.check_terms(start)
        except BridgeError as exc:
            raise BackendError(f"the pyomo backend cannot bridge this program to cyipopt: {exc}") from None
        outside = [term.label for term in [objective] + terms if not term.evaluator.in_domain(term.aggregate(start))]
        if outside:  # said with any failure: Ipopt cannot start there
            self._start_note = (f"the starting point's aggregate is outside the domain of {', '.join(outside)}"
                                " (e.g. a reward signal that is zero for every state and action)")

    def _build_phase1_bridge(self) -> None:
        from .ipopt_bridge import AffineEvaluator, IpoptBridge, ShiftedEvaluator, SmoothTerm

        built, program, m = self.built, self.program, self.model
        costs = [m.cost[i] for i in range(program.cost_map.shape[0])]
        terms = [SmoothTerm(ShiftedEvaluator(self._evaluator(g, f"g{i}")), costs + [m.phase1_s],
                            constraint=m.phase1_g[i], label=f"phase-1 constraint {i} {g!r}")
                 for i, g, _ in built.g_terms]
        pieces = m.component("phase1_pieces")
        linear = [m.rows[r] for r in range(program.linear.n_rows)] + (list(pieces.values()) if pieces else [])
        objective = SmoothTerm(AffineEvaluator([1.0]), [m.phase1_s], expression=m.phase1_s, label="phase-1 s")
        self.phase1_bridge = IpoptBridge(list(m.x.values()) + [m.phase1_s], linear, objective, terms, maximize=False)

    def _solver_name(self) -> str:
        return "Ipopt"

    def _run_program(self) -> RawSolution:
        return self._run_bridge(self.bridge, self._start)

    def _run_phase1(self) -> RawSolution:
        if self.phase1_bridge is None:
            self._build_phase1_bridge()
        return self._run_bridge(self.phase1_bridge, self._phase1_start)

    def _run_bridge(self, bridge, start) -> RawSolution:
        backend = self.backend
        runs = [bridge.solve(start(), backend.options, backend.warm_start, backend.warm_start_options)]
        status = IPOPT_STATUS.get(runs[0].status, Status.SOLVER_ERROR)
        if runs[0].warm and status in _RETRY_COLD:
            self.cold_retries += 1
            runs.append(bridge.solve(start(), backend.options, warm_start=False))
            status = IPOPT_STATUS.get(runs[-1].status, Status.SOLVER_ERROR)
        for run in runs:
            run.role = "phase1" if bridge is self.phase1_bridge else "program"
        self.last_solve.extend(runs)
        last = runs[-1]
        notes = []
        if len(runs) > 1:
            notes.append(f"the warm start ended with {runs[0].status_name}; re-solved from a cold start")
        if last.status == 1:
            notes.append("Ipopt stopped at its acceptable level (Solved_To_Acceptable_Level), not the full tolerance")
        elif not status.has_solution:
            notes.append(f"Ipopt: {last.status_name} ({last.message})")
            if self._start_note and not last.warm:
                notes.append(self._start_note)
        x = last.x
        if status.has_solution and x is None:
            status = Status.NUMERICAL_ERROR
            notes.append("Ipopt reported success without a finite solution")
        return RawSolution(status, x if status.has_solution else None, sum(r.iterations for r in runs),
                           f"ipopt {_ipopt_version()} (cyipopt)", "; ".join(notes), sum(r.solve_time for r in runs))


class CompiledPyomoSolver(CompiledPyomo):
    """The Pyomo model solved by a named Pyomo solver (``SolverFactory``), re-solved from its last solution."""

    def __init__(self, backend: PyomoBackend, program: Program):
        super().__init__(backend, program)
        if self.built.external:
            raise UnsupportedUtilityError(
                f"the Pyomo solver {backend.solver!r} needs Pyomo expressions, but {', '.join(self.built.external)}"
                f" has no pyomo_expr; give it one, or use the default solver {BRIDGE!r}."
            )
        self._loaded = False
        self._phase1_loaded = False
        self._solver = _solver_factory(backend.solver)
        for key, value in backend.options.items():
            self._solver.options[key] = value

    def _solver_name(self) -> str:
        return self.backend.solver

    def _run_program(self) -> RawSolution:
        return self._run_pyomo(self.built.variables, self._start)

    def _run_phase1(self) -> RawSolution:
        return self._run_pyomo(self.built.variables[: self.program.n_vars] + [self.model.phase1_s],
                               self._phase1_start, phase1=True)

    def _run_pyomo(self, variables: list, start, phase1: bool = False) -> RawSolution:
        import time

        loaded = self._phase1_loaded if phase1 else self._loaded
        if not loaded:  # first solve of this problem: the cold-start point; later the last solution
            for var, value in zip(variables, start()):
                var.set_value(float(value), skip_validation=True)
        started = time.perf_counter()
        results = self._solver.solve(self.model, load_solutions=False)
        elapsed = time.perf_counter() - started
        condition = results.solver.termination_condition
        status = TERMINATION_STATUS.get(str(condition), Status.UNKNOWN)
        message = f"{self.backend.solver}: termination condition {condition}"
        x = None
        if status.has_solution:
            try:
                self.model.solutions.load_from(results)
                x = np.array([np.nan if v.value is None else v.value for v in variables], dtype=float)
            except Exception as exc:
                message += f"; could not load the solution ({exc})"
            if x is None or not np.all(np.isfinite(x)):
                status, x = Status.NUMERICAL_ERROR, None
                message += "; no finite solution"
            elif phase1:
                self._phase1_loaded = True
            else:
                self._loaded = True
        return RawSolution(status, x, None, self.backend.solver, "" if status is Status.OPTIMAL else message, elapsed)


#: Pyomo's (legacy) TerminationCondition name -> Status, for every condition Pyomo defines
TERMINATION_STATUS: dict[str, Status] = {
    "optimal": Status.OPTIMAL,
    "locallyOptimal": Status.OPTIMAL,
    "globallyOptimal": Status.OPTIMAL,
    "feasible": Status.UNKNOWN,  # a feasible point without an optimality claim is not a plan
    "infeasible": Status.INFEASIBLE,
    "infeasibleOrUnbounded": Status.INFEASIBLE,  # our programs are bounded
    "unbounded": Status.UNBOUNDED,
    "maxIterations": Status.ITERATION_LIMIT,
    "maxEvaluations": Status.ITERATION_LIMIT,
    "minFunctionValue": Status.ITERATION_LIMIT,  # a user limit (the backend sets none)
    "maxTimeLimit": Status.TIME_LIMIT,
    "resourceInterrupt": Status.TIME_LIMIT,
    "minStepLength": Status.NUMERICAL_ERROR,
    "solverFailure": Status.SOLVER_ERROR,
    "internalSolverError": Status.SOLVER_ERROR,
    "error": Status.SOLVER_ERROR,
    "invalidProblem": Status.SOLVER_ERROR,
    "noSolution": Status.SOLVER_ERROR,
    "userInterrupt": Status.SOLVER_ERROR,
    "licensingProblems": Status.SOLVER_ERROR,
    "intermediateNonInteger": Status.UNKNOWN,
    "other": Status.UNKNOWN,
    "unknown": Status.UNKNOWN,
}


def _ipopt_version() -> str:
    import cyipopt

    version = getattr(cyipopt, "IPOPT_VERSION", None)
    return ".".join(str(v) for v in version) if isinstance(version, tuple) else str(version or "")

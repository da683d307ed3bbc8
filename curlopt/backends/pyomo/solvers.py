"""The solvers behind the pyomo backend: the Ipopt options and status tables, named Pyomo solvers and their checks, and Pyomo's own log messages."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import Iterator
from typing import Any

from ...errors import BackendError, BackendNotInstalledError
from ..results import Status

LOG = logging.getLogger(__name__)

__all__ = ['BRIDGE', 'DEFAULT_IPOPT_OPTIONS', 'WARM_START_OPTIONS', 'IPOPT_STATUS', 'TERMINATION_STATUS',
           'NAMED_TIME_LIMITS', 'NAMED_DEFAULT_OPTIONS']


#: exceptions of a utility's numpy code that mean "outside the domain": Ipopt shortens its step
DOMAIN_ERRORS = (ValueError, ZeroDivisionError, OverflowError, FloatingPointError)


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
    # Ipopt's default (1e-4) let it stop with its barrier's complementarity n·μ still in the objective: 1.4e-5
    # below the optimum on the queue at buffer 3,000, 1.5e-7 at buffer 300; 1e-12 gives 2.4e-8 and 1.9e-8
    # (a few more iterations). The complementarity left is reported as the result's duality gap.
    "compl_inf_tol": 1e-12,
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
RETRY_COLD = (Status.NUMERICAL_ERROR, Status.SOLVER_ERROR, Status.UNKNOWN, Status.UNBOUNDED)


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


def check_named_solver_options(name: str, options: dict[str, Any]) -> None:
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
        from ..highs.backend import check_highs_options

        check_highs_options(options, owner)


def check_pyomo_solver(name: str) -> None:
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
    solver = solver_factory(name)
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


def solver_available(name: str) -> bool:
    try:
        check_pyomo_solver(name)
    except BackendError:
        return False
    return True


def solver_factory(name: str) -> Any:
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


#: options a named Pyomo solver gets unless the backend's ``options`` name them: HiGHS keeps matrix entries down to
#: 1e-12, as the highs backend's does (at its default 1e-9 it drops small kernel entries, which can move the optimum)
NAMED_DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "appsi_highs": {"small_matrix_value": 1e-12}, "highs": {"small_matrix_value": 1e-12},
}


#: each named Pyomo solver's option of a time limit in seconds (set by the backend-neutral ``time_limit``)
NAMED_TIME_LIMITS: dict[str, str] = {
    "ipopt": "max_cpu_time", "cyipopt": "max_cpu_time",
    "gurobi": "TimeLimit", "gurobi_direct": "TimeLimit", "gurobi_persistent": "TimeLimit",
    "cplex": "timelimit", "cplex_direct": "timelimit", "glpk": "tmlim", "cbc": "sec",
}


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


def ipopt_version() -> str:
    import cyipopt

    version = getattr(cyipopt, "IPOPT_VERSION", None)
    return ".".join(str(v) for v in version) if isinstance(version, tuple) else str(version or "")

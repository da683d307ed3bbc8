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
from each utility's form (:mod:`curlopt.utilities.forms`, see :func:`pyomo_expression`),
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
default solver, ``"cyipopt-bridge"`` (:mod:`curlopt.backends.pyomo.ipopt_bridge`), feeds
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
form (:func:`curlopt.programs.lp.piece_rows`) the LP backends solve: a concave
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
Ipopt's return codes map to :class:`~curlopt.backends.results.Status` (:data:`IPOPT_STATUS`):
Solve_Succeeded → OPTIMAL; Solved_To_Acceptable_Level → ALMOST_OPTIMAL (its point is
kept only if the program's rows hold at it: the rule of :class:`~curlopt.backends.results.Status`);
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
the true optimum — and ``compl_inf_tol`` 1e-12: at Ipopt's default (1e-4) it stopped
with its barrier's complementarity still in the objective, up to 1.4e-5 below the
optimum. The complementarity left at the point is the result's
``statistics["duality_gap"]``, which the shared check compares with
:data:`~curlopt.backends.results.OBJECTIVE_TOLERANCE`.

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

import importlib.util
import logging
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ...errors import BackendOptionError, UnsupportedUtilityError
from ...programs.blocks import Program
from ...utilities.library import Utility, curvature_violation
from ..base import Backend, CompiledForm, Exactly, call_utility, package_version
from ..options import NONE, NUMBER, Option, refuse_both, string_keys
from ..results import Status
from .compiled import CompiledPyomo, CompiledPyomoBridge, CompiledPyomoSolver
from .expressions import PYOMO_FORMS, can_express, has_numpy_derivatives
from .solvers import (
    BRIDGE,
    DEFAULT_IPOPT_OPTIONS,
    IPOPT_STATUS,
    NAMED_TIME_LIMITS,
    WARM_START_OPTIONS,
    check_named_solver_options,
    check_pyomo_solver,
    ipopt_version,
    pyomo_messages,
    solver_available,
)

__all__ = ['PyomoBackend']


#: where Pyomo's messages go (one line each); without a logging configuration, WARNING and above print on stderr
LOG = logging.getLogger(__name__)


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

    time_limit, verbose
        As for every backend (:class:`~curlopt.backends.base.Backend`). The
        bridge gives each Ipopt run (phase 1, program, a cold retry) what is
        left of the limit as ``max_cpu_time`` and ``max_wall_time``, and
        ``verbose`` sets ``print_level`` 5; a named solver gets its own
        time-limit option (:data:`~curlopt.backends.pyomo.solvers.NAMED_TIME_LIMITS`)
        and ``tee``.

    Raises
    ------
    BackendOptionError
        For an option value the declaration refuses, or options the solver
        refuses.
    BackendError
        For a named solver that is unknown or not available on this machine.
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

    FORMS = PYOMO_FORMS
    OPTIONS: ClassVar[tuple[Option, ...]] = (
        Option("solver", (str,), BRIDGE, "Ipopt through cyipopt (the default) or a Pyomo SolverFactory solver name.",
               "a solver name (a non-empty string)", lambda v: None if v else "it is empty"),
        Option("options", (dict,) + NONE, None,
               "Solver options: Ipopt's over DEFAULT_IPOPT_OPTIONS for the bridge, else set on solver.options.",
               "a dict of solver options (name: value), or None", string_keys),
        Option("warm_start", (bool,), True, "Bridge only: start each re-solve from the previous solution.",
               "True or False"),
        Option("warm_start_options", (dict,) + NONE, None,
               "Ipopt options added on a warm start, merged over WARM_START_OPTIONS (bridge only).",
               "a dict of Ipopt options (name: value), or None", string_keys),
        Option("feasibility_check", (bool,), True, "Decide infeasibility by a phase 1 before each ε-tight solve.",
               "True or False"),
        Option("infeasibility_threshold", NUMBER, 1e-8, "The phase-1 optimum above which the program is infeasible.",
               "a finite number >= 0", lambda v: None if 0 <= float(v) < float("inf") else "it is negative or infinite",
               float),
        Option("derivatives", (str,), "auto", "Bridge only: where the utilities' derivatives come from.",
               "'auto' or 'pyomo'", lambda v: None if v in ("auto", "pyomo") else "it is neither"),
    )

    solver: str
    options: dict[str, Any]
    warm_start: bool
    warm_start_options: dict[str, Any]
    feasibility_check: bool
    infeasibility_threshold: float
    derivatives: str

    def _configure(self) -> None:
        given, warm = dict(self.options or {}), self.warm_start_options
        self.warm_start_options = {**WARM_START_OPTIONS, **(warm or {})}
        if self.solver == BRIDGE:
            for neutral, keys, on in (("time_limit", ("max_cpu_time", "max_wall_time"), self.time_limit is not None),
                                      ("verbose", ("print_level",), self.verbose)):
                for key in keys:
                    for container, settings in (("options", given), ("warm_start_options", warm or {})):
                        if on and key in settings:
                            refuse_both(self.name, neutral, container, key)
            self.options = {**DEFAULT_IPOPT_OPTIONS, **given, **({"print_level": 5} if self.verbose else {})}
            if (given or warm) and importlib.util.find_spec("cyipopt") is not None:
                from .ipopt_bridge import check_ipopt_options

                check_ipopt_options({**given, **(warm or {})})
            return
        if warm:
            raise BackendOptionError(
                f"warm_start_options apply to the default solver {BRIDGE!r} only, not to {self.solver!r}.")
        self.options = given
        check_pyomo_solver(self.solver)
        check_named_solver_options(self.solver, self.options)
        if self.time_limit is not None:
            setting = NAMED_TIME_LIMITS.get(self.solver)
            if setting is None:
                raise BackendOptionError(
                    f"the pyomo backend knows no time-limit option of the Pyomo solver {self.solver!r} (it knows"
                    f" those of {', '.join(NAMED_TIME_LIMITS)}): set the solver's own in options, without time_limit.")
            if setting in given:
                refuse_both(self.name, "time_limit", "options", setting)

    @classmethod
    def version(cls) -> str:
        """Pyomo's version and Ipopt's (with the cyipopt package that brings it), e.g.
        ``"pyomo 6.10.1, Ipopt 3.14.11 (cyipopt-wheels 1.7.0.dev0)"``."""
        cyipopt = package_version("cyipopt")
        ipopt = f"Ipopt {ipopt_version()} ({cyipopt})" if importlib.util.find_spec("cyipopt") is not None else cyipopt
        return f"{package_version('pyomo')}, {ipopt}"

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

        variants: list[tuple[str, dict]] = [(BRIDGE, {})]
        with pyomo_messages([]):  # probing a missing solver is not worth a logged traceback
            names = [name for name in cls.PYOMO_SOLVERS if solver_available(name)]
        return variants + [(name, {"solver": name}) for name in names]

    def check(self, program: Program) -> None:
        """Also refuse a utility whose numpy Hessian contradicts its declared curvature.

        Ipopt finds a local optimum; only for a concave objective and convex
        constraints is it the optimum. CVXPY proves curvature (DCP); here it is
        sampled (:func:`curlopt.utilities.library.curvature_violation`), a necessary check.
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
                    " convex constraints. Fix the utility's curvature or its derivatives; if the function is defined"
                    " only above some point (e.g. a log or 1/y), declare its domain (CustomUtility(lower=...), or a"
                    " domain_lower() method): the check samples inside the domain."
                )

    def compiled_pyomo(self, program: Program) -> CompiledPyomo:
        """The program as a Pyomo model, solved by Ipopt through cyipopt or by the named Pyomo solver."""
        with pyomo_messages():
            if self.solver == BRIDGE:
                return CompiledPyomoBridge(self, program)
            return CompiledPyomoSolver(self, program)

    #: every program, from its blocks and rows
    COMPILES: ClassVar[Mapping[type[Program], CompiledForm | Exactly]] = {Program: compiled_pyomo}

    def __repr__(self) -> str:
        return f"PyomoBackend(solver={self.solver!r})"

"""The result every backend returns, and policy extraction (docs/math.md §2)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

__all__ = ['Status', 'Termination', 'SolutionStatus', 'ProgramVariant', 'SolveResult', 'ALMOST_OPTIMAL_TOLERANCE',
           'OPTIMAL_TOLERANCE', 'OBJECTIVE_TOLERANCE']


#: Largest residual (rows, bounds, ε-tight constraints: see ``Program.residuals``) at which a point solved to
#: reduced accuracy (``Status.ALMOST_OPTIMAL``) is still used. Occupancies and joint probabilities are masses in
#: [0, 1], so an absolute tolerance is meaningful; 1e-6 is a hundred times the feasibility tolerances the
#: solvers are given and far below any effect on a policy.
ALMOST_OPTIMAL_TOLERANCE = 1e-6

#: Largest residual (as above) at which a point a solver calls optimal is certified ``OPTIMAL`` by the check every
#: backend shares (:meth:`curlopt.backends.base.CompiledProgram.solve`); above it, and up to
#: :data:`ALMOST_OPTIMAL_TOLERANCE`, the result says ``OPTIMAL_INACCURATE``. The solvers are asked for rows that
#: hold to 1e-9 (Clarabel 1e-8) on their scaled problems; 1e-7 leaves room for the unscaling: the largest residual
#: measured was 9e-10 for HiGHS (the queue at buffer 3,000) and 1.2e-9 for Clarabel (every epoch of safe mode,
#: PS-CURL and UC-CURL on the scheduler, 100,000 steps), so no result of those runs changes.
OPTIMAL_TOLERANCE = 1e-7

#: Largest duality gap, relative to ``1 + |f|``, at which a point a solver calls optimal is certified ``OPTIMAL``
#: when the backend reports a gap (its ``statistics["duality_gap"]``, e.g. an interior-point method's
#: complementarity; ``f`` is the program's objective value it reports as ``statistics["objective_value"]``, 0 when
#: it reports none); above it the result says ``OPTIMAL_INACCURATE`` with the gap.
OBJECTIVE_TOLERANCE = 1e-7


class Status(str, Enum):  # noqa: UP042 - StrEnum would turn str(member) and f"{member}" into the bare value
    """How a solve ended (after Pyomo's ``contrib.solver`` termination conditions and MOI's statuses).

    ``OPTIMAL``, ``OPTIMAL_INACCURATE`` and ``ALMOST_OPTIMAL`` carry a solution; every other status does not.

    ``OPTIMAL`` is certified, not taken on the solver's word: the solver ended at its convergence criteria
    and the check every backend shares passed — every row, bound and ε-tight constraint of the program holds
    at the point to :data:`OPTIMAL_TOLERANCE`, the objective is finite on a neighbourhood of the point's
    rewards (a log of a zero average reward is not an optimum), and the duality gap, where the backend
    reports one, is at most :data:`OBJECTIVE_TOLERANCE` relative. ``OPTIMAL_INACCURATE``: the solver called
    the point optimal but the check measured a residual or gap above those tolerances (and the residual at
    most :data:`ALMOST_OPTIMAL_TOLERANCE`); the point is used as an optimal one and the message gives what
    was measured. A point whose objective is not finite near it is discarded (``NUMERICAL_ERROR``).

    ``TIME_LIMIT``: the solver (or the backend, between a solver's runs) stopped at a time limit, the
    backend-neutral ``time_limit`` option or a solver's own. It carries no solution (``ok`` is False: the point
    is not certified optimal, and agents never play it), but where the solver returned the point it stopped at
    and the program's rows hold there, the result keeps it (``solution_status`` ``FEASIBLE``, the arrays filled,
    the message saying so), as for ``ITERATION_LIMIT``; like every failure but ``INFEASIBLE`` it never leads
    to the fallback program.

    ``ALMOST_OPTIMAL`` is the one meaning, across backends, of "solved to reduced accuracy" (CVXPY's
    ``optimal_inaccurate``, Ipopt's ``Solved_To_Acceptable_Level``; MOI calls it ``ALMOST_OPTIMAL``). The
    rule is applied once, in :meth:`curlopt.backends.base.CompiledProgram.solve`, for every backend: such a
    point is kept only when the program's rows, bounds and ε-tight constraints hold at it to
    :data:`ALMOST_OPTIMAL_TOLERANCE`; it is then used as an optimal one is (agents plan with it, and the
    result's message says the accuracy was reduced). Otherwise it is discarded and the result says
    ``NUMERICAL_ERROR`` with the residual that failed, so agents treat it as any failed solve.
    """

    OPTIMAL = "optimal"
    OPTIMAL_INACCURATE = "optimal_inaccurate"
    ALMOST_OPTIMAL = "almost_optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    ITERATION_LIMIT = "iteration_limit"
    TIME_LIMIT = "time_limit"
    NUMERICAL_ERROR = "numerical_error"
    SOLVER_ERROR = "solver_error"
    UNKNOWN = "unknown"

    @property
    def has_solution(self) -> bool:
        """True for ``OPTIMAL``, ``OPTIMAL_INACCURATE`` and ``ALMOST_OPTIMAL``: a point to play comes with the status."""
        return self in _WITH_SOLUTION

    @property
    def termination(self) -> Termination:
        """Why the solver stopped, for a result of this status."""
        return _TERMINATION[self]


class Termination(str, Enum):  # noqa: UP042 - StrEnum would turn str(member) and f"{member}" into the bare value
    """Why a solve stopped (after Pyomo's ``contrib.solver.TerminationCondition``), apart from what the point it
    left is worth (:class:`SolutionStatus`)."""

    CONVERGED = "convergence_criteria_satisfied"
    INFEASIBLE = "proven_infeasible"
    UNBOUNDED = "unbounded"
    ITERATION_LIMIT = "iteration_limit"
    TIME_LIMIT = "time_limit"
    NUMERICAL_ERROR = "numerical_error"
    ERROR = "error"
    UNKNOWN = "unknown"


class SolutionStatus(str, Enum):  # noqa: UP042 - StrEnum would turn str(member) and f"{member}" into the bare value
    """What the point a result holds is worth (after Pyomo's ``contrib.solver.SolutionStatus``).

    ``OPTIMAL``: certified (:class:`Status`); ``FEASIBLE``: the program's rows hold at it to
    :data:`OPTIMAL_TOLERANCE` but optimality is not proven (a point solved to reduced accuracy, or the best
    point of a solve stopped at a limit); ``INFEASIBLE``: a point was reported but a row fails;
    ``NO_SOLUTION``: no point.
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    NO_SOLUTION = "no_solution"


_WITH_SOLUTION = frozenset({Status.OPTIMAL, Status.OPTIMAL_INACCURATE, Status.ALMOST_OPTIMAL})

_TERMINATION = {
    Status.OPTIMAL: Termination.CONVERGED,
    Status.OPTIMAL_INACCURATE: Termination.CONVERGED,
    Status.ALMOST_OPTIMAL: Termination.CONVERGED,
    Status.INFEASIBLE: Termination.INFEASIBLE,
    Status.UNBOUNDED: Termination.UNBOUNDED,
    Status.ITERATION_LIMIT: Termination.ITERATION_LIMIT,
    Status.TIME_LIMIT: Termination.TIME_LIMIT,
    Status.NUMERICAL_ERROR: Termination.NUMERICAL_ERROR,
    Status.SOLVER_ERROR: Termination.ERROR,
    Status.UNKNOWN: Termination.UNKNOWN,
}


class ProgramVariant(str, Enum):  # noqa: UP042 - StrEnum would turn str(member) and f"{member}" into the bare value
    """Which program produced a result: the ε-tight one, or the fallback without g rows (docs/math.md §4)."""

    TIGHT = "tight"
    FALLBACK = "fallback"


@dataclass
class SolveResult:
    """Outcome of one solve, identical in form for every backend.

    Attributes
    ----------
    status : Status
        Final status; ``OPTIMAL`` or ``ALMOST_OPTIMAL`` (see :class:`Status`) means the arrays below hold a
        solution.
    program : ProgramVariant
        ``TIGHT`` when the ε-tight program was solved, ``FALLBACK`` when it was
        infeasible and the program without g rows was solved instead.
    tight_status : Status
        Status of the ε-tight attempt (differs from ``status`` after a fallback).
    objective : float
        ``f(λ)`` at the solution, evaluated by the model's objective utility at the rewards ``λ`` of
        ``occupancy`` (NaN without a solution) — the model's f, not the program's own objective.
        For safe mode's :class:`~curlopt.programs.safe.SafeProgram` it is therefore ``f(λ)`` without the
        exploration bonus ``Σ b(s,a) ρ(s,a)`` the program maximised. For the
        :class:`~curlopt.programs.safe.LeastViolationProgram` it is not the level the program minimised
        (the largest penalised constraint value ``max_m g_m(ζ) + Σ q_m(s,a) ρ(s,a)``, read with
        ``program.level(result.x)``) but ``f(λ)`` of the least-violation occupancy: the objective its
        policy attains on the program's kernel. For both programs ``constraint_values`` are the
        unpenalised ``g_m(ζ)``.
    occupancy : ndarray (S, A) or None
    joint : ndarray (S, A, S), ndarray (nnz,), or None
        ``p`` for the optimistic programs: (S, A, S) on a dense support, (nnz,) in the support's entry order
        (:class:`~curlopt.programs.support.Support`) for a program on a sparse support.
    policy : ndarray (S, A) or None
        Extracted policy; rows sum to 1, uniform where ρ(s,·) = 0.
    rewards, costs : ndarray or None
        ``λ`` and ``ζ`` achieved by ``occupancy``.
    constraint_values : ndarray (M,) or None
        ``g_m(ζ)``.
    epsilon : float
        The tightness used by the ε-tight program.
    solve_time : float
        Wall seconds for the whole call (both attempts after a fallback).
    solver_time : float or None
        The solver's own reported run time, summed over attempts (None when the solver reports none), so the
        overhead of a backend is ``solve_time - solver_time`` without instrumenting it.
    iterations : int or None
        Solver iterations when reported (summed over attempts).
    backend, solver : str
        The backend's registry name and the solver that produced the result.
    solver_version : str
        The versions of the packages behind the backend (its ``version()``, e.g. ``"highspy 1.15.1"``).
    message : str
        What happened, in words (always says so when a fallback was used).
    x : ndarray or None
        The raw variable vector of the program that was solved.
    termination : Termination
        Why the solver stopped (``status.termination`` unless the backend knew better).
    solution_status : SolutionStatus
        What the point is worth. A solve stopped at a time or iteration limit keeps the point it reached when
        the program's rows hold at it (``FEASIBLE``: the arrays above are filled although ``ok`` is False, and
        the message says it is not proven optimal).
    unreached : ndarray of bool (S,) or None
        The states ``policy`` is uniform in for want of planned mass (:func:`~curlopt.programs.policy.unreached_states`
        of ``occupancy``), when the program's reading of the solution gives them.
    statistics : dict
        What the solver reported beyond the status: ``iterations``, ``solver_time``, the measured ``residual``
        (the largest of ``Program.residuals`` at the point), a ``duality_gap`` where known, and the backend's
        own counts (e.g. column-generation rounds).
    """

    status: Status
    program: ProgramVariant
    tight_status: Status
    objective: float = math.nan
    occupancy: np.ndarray | None = None
    joint: np.ndarray | None = None
    policy: np.ndarray | None = None
    rewards: np.ndarray | None = None
    costs: np.ndarray | None = None
    constraint_values: np.ndarray | None = None
    epsilon: float = 0.0
    solve_time: float = 0.0
    solver_time: float | None = None
    iterations: int | None = None
    backend: str = ""
    solver: str = ""
    solver_version: str = ""
    message: str = ""
    x: np.ndarray | None = field(default=None, repr=False)
    termination: Termination | None = None
    solution_status: SolutionStatus | None = None
    statistics: dict[str, Any] = field(default_factory=dict, repr=False)
    unreached: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.termination is None:
            self.termination = self.status.termination
        if self.solution_status is None:
            if self.status is Status.OPTIMAL:
                self.solution_status = SolutionStatus.OPTIMAL
            elif self.status.has_solution:
                self.solution_status = SolutionStatus.FEASIBLE
            else:
                self.solution_status = SolutionStatus.NO_SOLUTION

    @property
    def ok(self) -> bool:
        """True when a solution is present (of either program variant)."""
        return self.status.has_solution

    @property
    def fell_back(self) -> bool:
        return self.program is ProgramVariant.FALLBACK

    def to_dict(self, arrays: bool = True) -> dict[str, Any]:
        """A JSON-ready dictionary (arrays as nested lists when ``arrays``)."""

        def plain(value: Any) -> Any:
            if isinstance(value, np.ndarray):
                return value.tolist() if arrays else None
            if isinstance(value, float) and not math.isfinite(value):
                return None
            return value

        out = {
            "status": self.status.value,
            "program": self.program.value,
            "tight_status": self.tight_status.value,
            "objective": plain(float(self.objective)),
            "epsilon": self.epsilon,
            "rewards": plain(self.rewards),
            "costs": plain(self.costs),
            "constraint_values": plain(self.constraint_values),
            "policy": plain(self.policy),
            "occupancy": plain(self.occupancy),
            "solve_time": self.solve_time,
            "iterations": self.iterations,
            "backend": self.backend,
            "solver": self.solver,
            "solver_version": self.solver_version,
            "message": self.message,
            "termination": self.status.termination.value if self.termination is None else self.termination.value,
            "solution_status": None if self.solution_status is None else self.solution_status.value,
            "statistics": {key: plain(value) for key, value in self.statistics.items()},
        }
        if self.joint is not None and arrays:
            out["joint"] = self.joint.tolist()
        return out

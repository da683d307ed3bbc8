"""The result every backend returns, and policy extraction (docs/math.md §2)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

__all__ = ["Status", "ProgramVariant", "SolveResult", "policy_from_occupancy", "extract_policy", "unreached_states",
           "UNREACHED_FILLS", "VISIT_TOLERANCE", "ALMOST_OPTIMAL_TOLERANCE"]

#: A state whose total occupancy is at most this (per action) is treated as unvisited: uniform policy there.
#: It sits just above the feasibility tolerance of the solvers (~1e-9): interior-point solvers leave
#: round-off of that size on entries that are exactly 0 at the optimum, and a policy made of that
#: round-off would differ between backends for a state the optimum never visits.
VISIT_TOLERANCE = 1e-8

#: Largest residual (rows, bounds, ε-tight constraints: see ``Program.residuals``) at which a point solved to
#: reduced accuracy (``Status.ALMOST_OPTIMAL``) is still used. Occupancies and joint probabilities are masses in
#: [0, 1], so an absolute tolerance is meaningful; 1e-6 is a hundred times the feasibility tolerances the
#: solvers are given and far below any effect on a policy.
ALMOST_OPTIMAL_TOLERANCE = 1e-6


class Status(str, Enum):
    """How a solve ended (after Pyomo's ``contrib.solver`` termination conditions and MOI's statuses).

    ``OPTIMAL`` and ``ALMOST_OPTIMAL`` carry a solution; every other status does not.

    ``ALMOST_OPTIMAL`` is the one meaning, across backends, of "solved to reduced accuracy" (CVXPY's
    ``optimal_inaccurate``, Ipopt's ``Solved_To_Acceptable_Level``; MOI calls it ``ALMOST_OPTIMAL``). The
    rule is applied once, in :meth:`curlopt.backends.base.CompiledProgram.solve`, for every backend: such a
    point is kept only when the program's rows, bounds and ε-tight constraints hold at it to
    :data:`ALMOST_OPTIMAL_TOLERANCE`; it is then used as an optimal one is (agents plan with it, and the
    result's message says the accuracy was reduced). Otherwise it is discarded and the result says
    ``NUMERICAL_ERROR`` with the residual that failed, so agents treat it as any failed solve.
    """

    OPTIMAL = "optimal"
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
        """True for ``OPTIMAL`` and ``ALMOST_OPTIMAL``: a point comes with the status."""
        return self is Status.OPTIMAL or self is Status.ALMOST_OPTIMAL


class ProgramVariant(str, Enum):
    """Which program produced a result: the ε-tight one, or the fallback without g rows (docs/math.md §4)."""

    TIGHT = "tight"
    FALLBACK = "fallback"


def policy_from_occupancy(occupancy: np.ndarray, tolerance: float = VISIT_TOLERANCE) -> np.ndarray:
    """``π(a|s) = ρ(s,a) / Σ_b ρ(s,b)``; uniform where ``Σ_b ρ(s,b) <= tolerance · A``.

    Tiny negative entries (solver round-off) are clipped to zero first, so the
    result is always a proper distribution per state and never contains NaN.
    """
    rho = np.clip(np.nan_to_num(np.asarray(occupancy, dtype=float), nan=0.0), 0.0, None)
    totals = rho.sum(axis=1, keepdims=True)
    visited = totals > tolerance * rho.shape[1]
    uniform = np.full_like(rho, 1.0 / rho.shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        policy = np.where(visited, rho / np.where(visited, totals, 1.0), uniform)
    return policy


#: the rules for the policy in states the plan does not reach (see :func:`extract_policy`)
UNREACHED_FILLS = ("uniform", "safe")


def unreached_states(occupancy: np.ndarray, tolerance: float = VISIT_TOLERANCE) -> np.ndarray:
    """Boolean mask (S,) of the states with ``Σ_b ρ(s,b) <= tolerance · A`` (as :func:`policy_from_occupancy` decides)."""
    rho = np.clip(np.nan_to_num(np.asarray(occupancy, dtype=float), nan=0.0), 0.0, None)
    return ~(rho.sum(axis=1) > tolerance * rho.shape[1])


def check_unreached(unreached: Any, error: type[Exception] | None = None) -> str:
    """``unreached`` if it names a fill in :data:`UNREACHED_FILLS`, else ``error`` (default CurloptError)."""
    if not isinstance(unreached, str) or unreached not in UNREACHED_FILLS:
        from .errors import CurloptError

        raise (error or CurloptError)(
            f"unreached must be one of {', '.join(map(repr, UNREACHED_FILLS))}, got {unreached!r}."
        )
    return unreached


def extract_policy(occupancy: np.ndarray, model: Any, unreached: str = "uniform", costs: Any = None,
                   tolerance: float = VISIT_TOLERANCE, uniform_policy: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The policy of an occupancy, with a chosen rule for the states it does not reach.

    Where a state has planned mass (``Σ_b ρ(s,b) > tolerance · A``) the policy is
    ``π(a|s) = ρ(s,a) / Σ_b ρ(s,b)``. Elsewhere the ratio is 0/0 and the paper
    says nothing; ``unreached`` chooses:

    ``uniform``
        the uniform distribution over actions (exactly :func:`policy_from_occupancy`);
    ``safe``
        uniform over the action(s) that least increase the constraints, to first
        order at the plan: each action gets the score
        ``max_m ∇g_m(ζ_plan)·c(s,a)``, with ``ζ_plan`` the plan's average costs and
        ``c(s,a)`` the model's cost vector at the pair, and the smallest score
        wins (for a linear ``g_m(ζ) = w_m·ζ - b_m`` the score is
        ``max_m w_m·c(s,a)``). Scores within ``1e-12`` times the largest
        absolute score of the minimum count as ties. A model without
        constraints has nothing to protect: uniform, as for ``uniform``.

    Parameters
    ----------
    occupancy : ndarray, shape (S, A)
        The plan's ρ (tiny negative round-off is clipped to 0).
    model : CMDP
        Supplies the costs ``c`` (d, S, A) and the constraints' ``gradient``.
    unreached : {"uniform", "safe"}, default "uniform"
    costs : array_like, shape (d,), optional
        ``ζ_plan``; default ``Σ_{s,a} ρ(s,a) c(s,a)`` from ``occupancy``.
    tolerance : float, default VISIT_TOLERANCE
        A state is unreached when its total mass is at most ``tolerance · A``.
    uniform_policy : ndarray, shape (S, A), optional
        ``policy_from_occupancy(occupancy, tolerance)`` when the caller has it already (a solve result's
        ``policy``): it is not computed again (the agents call this every epoch).

    Returns
    -------
    policy : ndarray, shape (S, A)
        Rows sum to 1.
    unreached_mask : ndarray of bool, shape (S,)
        The states filled by the rule.

    Raises
    ------
    CurloptError
        For an unknown ``unreached``.
    """
    check_unreached(unreached)
    policy = policy_from_occupancy(occupancy, tolerance) if uniform_policy is None else np.array(uniform_policy)
    mask = unreached_states(occupancy, tolerance)
    constraints = tuple(getattr(model, "constraints", ()) or ())
    if unreached == "uniform" or not constraints or not mask.any():
        return policy, mask
    cost_table = np.asarray(model.costs, dtype=float)                     # (d, S, A)
    if costs is None:
        rho = np.clip(np.nan_to_num(np.asarray(occupancy, dtype=float), nan=0.0), 0.0, None)
        costs = np.einsum("isa,sa->i", cost_table, rho)
    zeta = np.asarray(costs, dtype=float).reshape(-1)
    gradients = np.array([np.asarray(g.gradient(zeta), dtype=float).reshape(-1) for g in constraints])  # (M, d)
    scores = np.einsum("mi,isa->msa", gradients, cost_table[:, mask, :]).max(axis=0)  # (unreached, A)
    finite = np.isfinite(scores)
    scale = float(np.abs(scores[finite]).max()) if finite.any() else 0.0
    best = np.where(finite, scores, np.inf).min(axis=1, keepdims=True)
    tied = finite & (scores <= best + 1e-12 * scale)
    # A row without any finite score (a gradient that is not finite) falls back to uniform.
    tied[~tied.any(axis=1)] = True
    policy[mask] = tied / tied.sum(axis=1, keepdims=True)
    return policy, mask


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
        ``f(λ)`` at the solution, evaluated by the utility (NaN without a solution).
    occupancy : ndarray (S, A) or None
    joint : ndarray (S, A, S) or None
        ``p`` for the optimistic program.
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
    message : str
        What happened, in words (always says so when a fallback was used).
    x : ndarray or None
        The raw variable vector of the program that was solved.
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
    message: str = ""
    x: np.ndarray | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        """True when a solution is present (of either program variant)."""
        return self.status.has_solution

    @property
    def fell_back(self) -> bool:
        return self.program is ProgramVariant.FALLBACK

    def to_dict(self, arrays: bool = True) -> dict[str, Any]:
        """A JSON-ready dictionary (arrays as nested lists when ``arrays``)."""

        def plain(value):
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
            "message": self.message,
        }
        if self.joint is not None and arrays:
            out["joint"] = self.joint.tolist()
        return out

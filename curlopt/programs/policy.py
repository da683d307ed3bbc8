"""Policy extraction from an occupancy: π(a|s) = ρ(s,a) / Σ_b ρ(s,b), and the fills for states the occupancy never visits."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ['policy_from_occupancy', 'extract_policy', 'unreached_states', 'UNREACHED_FILLS', 'VISIT_TOLERANCE']


#: A state whose total occupancy is at most this (per action) is treated as unvisited: uniform policy there.
#: It sits just above the feasibility tolerance of the solvers (~1e-9): interior-point solvers leave
#: round-off of that size on entries that are exactly 0 at the optimum, and a policy made of that
#: round-off would differ between backends for a state the optimum never visits.
VISIT_TOLERANCE = 1e-8


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
        from ..errors import CurloptError

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

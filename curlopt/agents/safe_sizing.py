"""How safe mode sizes its bonus and penalties from the model and the data (docs/safe-mode.md).

For a policy π, its occupancy ρ̂ on the kernel Q an epoch plans on (the plug-in estimate P̂
or a posterior draw) and the true kernel P, the average of a signal r differs by (the
simulation identity of average-reward chains)

    λ_P - λ_Q = Σ_{s,a} ρ̂(s,a) Σ_{s'} (P - Q)(s'|s,a) h(s'),   so   |λ_P - λ_Q| <= Σ ρ̂(s,a) ‖P - Q‖₁(s,a) · sp(h)/2,

with h the bias (relative value) of r under π on P and sp(h) = max h - min h. With
``u(s,a)`` a bound on ``‖P - Q‖₁(s,a)``, a constraint g_m with per-cost Lipschitz bounds
``L_{m,i}`` is off by at most ``Σ_i L_{m,i} sp(h_i)/2 · Σ ρ̂ u``. This module computes the
pieces: the uncertainty ``u``, stand-ins for the bias spans (computed on Q, the only chain
at hand) and the Lipschitz bounds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import AgentError
from ..models.cmdp import policy_kernel
from ..programs.optimistic import l1_radius
from ..utilities.library import ConvexQuadratic, Norm, Utility

__all__ = ["plug_in_kernel", "radius_uncertainty", "posterior_uncertainty", "dirichlet_width", "bias_spans", "mixing_factor", "lipschitz_bounds",
           "constraint_scales", "UNCERTAINTY_CAP"]

#: Two distributions are at most 2 apart in L1, so a larger radius says nothing more.
UNCERTAINTY_CAP = 2.0


def plug_in_kernel(counts: np.ndarray) -> np.ndarray:
    """``P̂(s'|s,a) = n(s,a,s') / N(s,a)``, with uniform rows for unvisited pairs (so it is a kernel)."""
    visits = counts.sum(axis=2, keepdims=True)
    S = counts.shape[2]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(visits > 0, counts / np.where(visits > 0, visits, 1.0), 1.0 / S)


def radius_uncertainty(counts: np.ndarray, time: float, kind: str, scale: float) -> np.ndarray:
    """``min(2, scale · β(s,a))`` with β the named L1 radius (:func:`curlopt.programs.optimistic.l1_radius`)."""
    S, A = counts.shape[0], counts.shape[1]
    beta = scale * l1_radius(counts.sum(axis=2), time, S, A, kind)
    return np.minimum(UNCERTAINTY_CAP, beta)


def posterior_uncertainty(counts: np.ndarray, prior: float) -> np.ndarray:
    """The posterior width ``Σ_{s'} std P̃(s'|s,a)`` of ``Dirichlet(prior + n(s,a,·))``, capped at 2.

    The sum of the marginal standard deviations bounds the expected L1 distance of a sample
    from the posterior mean (``E|X - m| <= std X`` for each entry); it shrinks like
    ``sqrt((S-1)/N)``, as the L1 radius does, without its logarithm.
    """
    return dirichlet_width(prior + counts)


def dirichlet_width(alpha: np.ndarray) -> np.ndarray:
    """``min(2, Σ_{s'} std P̃(s'|s,a))`` for ``P̃(·|s,a) ~ Dirichlet(alpha[s,a,·])``, ``alpha`` of shape (S, A, S)
    (all > 0): :func:`posterior_uncertainty` of the parameters themselves, for an agent that has them already."""
    total = alpha.sum(axis=2, keepdims=True)
    mean = alpha / total
    std = np.sqrt(mean * (1.0 - mean) / (total + 1.0))
    return np.minimum(UNCERTAINTY_CAP, std.sum(axis=2))


#: The horizon 1/(1-γ) of the discounted values whose span estimates a bias span (see :func:`bias_spans`):
#: γ = 1 - 1/100 on the unnormalised sum Σ_t γ^t r(s_t), so a signal in [0, 1] has values in [0, 100].
SPAN_HORIZON = 100.0


def bias_spans(kernel: np.ndarray, policy: np.ndarray, signals: np.ndarray, horizon: float = SPAN_HORIZON
               ) -> np.ndarray:
    """The span of each signal's discounted value under ``policy`` on ``kernel``, discount ``γ = 1 - 1/horizon``.

    The value is the unnormalised sum ``V(x) = E[Σ_{t>=0} γ^t r(s_t, a_t) | s_0 = x]``, not multiplied
    by ``1 - γ``: it expands as ``g/(1 - γ) + h + O(1 - γ)`` (g the average, h the bias), so for a
    chain with one recurrent class its span tends to the span of the bias as ``γ → 1`` (the
    normalised value's span would vanish), and is close to it once ``horizon`` exceeds the
    chain's mixing time. Unlike the bias it exists for every chain: an estimated kernel under a
    deterministic policy often has several recurrent classes (pairs seen a few times with
    one outcome), where the bias is not defined and a Poisson solve returns huge numbers.
    It never exceeds ``horizon`` times the signal's range.

    Parameters
    ----------
    kernel : ndarray, shape (S, A, S), or scipy sparse matrix, shape (S·A, S)
        A sparse kernel is solved by a sparse LU of ``I - γ P_π`` (memory linear in its nonzeros).
    policy : ndarray, shape (S, A)
    signals : ndarray, shape (n, S, A)
    horizon : float, default SPAN_HORIZON

    Returns
    -------
    ndarray, shape (n,)
    """
    gamma = 1.0 - 1.0 / horizon
    rhs = np.einsum("sa,nsa->sn", policy, signals)
    if sp.issparse(kernel):
        values = _discounted_solver(kernel, policy, gamma).solve(rhs)
    else:
        S = kernel.shape[0]
        chain = np.einsum("sa,sat->st", policy, kernel)
        values = np.linalg.solve(np.eye(S) - gamma * chain, rhs)  # (S, n)
    return values.max(axis=0) - values.min(axis=0)


def _discounted_solver(kernel: Any, policy: np.ndarray, gamma: float) -> Any:
    """The sparse LU of ``I - γ P_π`` for a sparse (S·A, S) kernel (non-singular for γ < 1)."""
    import scipy.sparse.linalg as spla  # imported here: only sparse kernels need it

    chain = policy_kernel(kernel, policy)
    return spla.splu(sp.csc_array(sp.eye_array(chain.shape[0]) - gamma * chain))


#: how many indicator signals :func:`mixing_factor` solves at once on a sparse kernel (bounds its memory)
_INDICATOR_BLOCK = 256


def mixing_factor(kernel: np.ndarray, horizon: float = SPAN_HORIZON) -> float:
    """``τ = max_s sp(V_s)``: how long the chain under the uniform policy remembers where it started.

    ``V_s`` is the discounted value of the indicator of state ``s`` under the uniform policy on
    ``kernel``, with discount ``1 - 1/horizon`` on the unnormalised sum (:func:`bias_spans`): the
    expected discounted number of visits to ``s``, between 0 and ``horizon``. Safe mode passes
    the kernel its epoch plans on (the posterior draw by default, P̂ with the plug-in kernel), so
    ``τ`` is recomputed every epoch. For a signal of range ``r`` and a chain that
    mixes in about ``τ`` steps, the bias span of the signal is of order ``r τ``. The uniform
    policy is the reference because it exists before any plan and visits every action, so
    ``τ`` does not swing with the last plan's choices (a plan that plays one action
    everywhere makes an action-dependent cost look constant).
    """
    if sp.issparse(kernel):
        # The indicator of state s has r_π = e_s, so its values are the columns of (I - γ P_π)^-1: solved a
        # block of columns at a time, never the (S, S, A) indicator signals.
        S = kernel.shape[1]
        A = kernel.shape[0] // S
        solver = _discounted_solver(kernel, np.full((S, A), 1.0 / A), 1.0 - 1.0 / horizon)
        largest = 0.0
        for start in range(0, S, _INDICATOR_BLOCK):
            columns = np.arange(start, min(S, start + _INDICATOR_BLOCK))
            rhs = np.zeros((S, columns.size))
            rhs[columns, np.arange(columns.size)] = 1.0
            values = solver.solve(rhs)
            largest = max(largest, float((values.max(axis=0) - values.min(axis=0)).max()))
        return largest
    S, A = kernel.shape[0], kernel.shape[1]
    indicators = np.repeat(np.eye(S)[:, :, None], A, axis=2)
    return float(bias_spans(kernel, np.full((S, A), 1.0 / A), indicators, horizon).max())


def _box_lipschitz(utility: Utility, lower: np.ndarray, upper: np.ndarray) -> np.ndarray | None:
    """Per-component bounds of ``|∂u/∂y_i|`` over the box ``[lower, upper]``, or None if unknown."""
    pieces = utility.affine_pieces()
    if pieces is not None:                      # exact: the largest slope among the pieces
        return np.abs(pieces[0]).max(axis=0)
    if isinstance(utility, Norm):               # every subgradient of an L1, L2 or L∞ norm has entries in [-1, 1]
        return np.ones(utility.dim)
    if isinstance(utility, ConvexQuadratic):    # the gradient is affine: centre value plus the Hessian's reach
        centre, half = (lower + upper) / 2.0, (upper - lower) / 2.0
        return np.abs(utility.gradient(centre)) + np.abs(utility.hessian(centre)) @ half
    return None


def lipschitz_bounds(constraints: Any, costs: np.ndarray, override: Any = None) -> np.ndarray:
    """``L[m, i]``: a bound of ``|∂g_m/∂ζ_i|`` over the box of the model's cost ranges.

    Parameters
    ----------
    constraints : sequence of Utility
    costs : ndarray, shape (d, S, A)
    override : float or sequence of float, optional
        The user's bound for each constraint (``cost_lipschitz``): a scalar applies to every
        component of every constraint; a sequence gives one scalar per constraint.

    Raises
    ------
    AgentError
        For a constraint whose bound the toolkit cannot compute when no override is given
        (the message names the option), or an override that is negative or not finite.
    """
    d = costs.shape[0]
    flat = costs.reshape(d, -1) if d else np.zeros((0, 1))  # (-1 cannot be inferred for a model without costs)
    lower, upper = flat.min(axis=1), flat.max(axis=1)
    if override is not None:
        values = np.atleast_1d(np.asarray(override, dtype=float)) if _numbers(override) else None
        if values is None or values.ndim != 1 or values.size not in (1, len(constraints)) \
                or not np.all(np.isfinite(values)) or np.any(values < 0):
            raise AgentError(
                f"cost_lipschitz must be a finite number >= 0 or one per constraint ({len(constraints)}), got {override!r}."
            )
        return np.repeat(np.broadcast_to(values, (len(constraints),))[:, None], d, axis=1).astype(float)
    bounds = []
    for m, g in enumerate(constraints):
        bound = _box_lipschitz(g, lower, upper)
        if bound is None:
            raise AgentError(
                f"safe mode cannot bound the slope of constraint {m} {g!r} (it knows affine pieces, norms and"
                " convex quadratics): give one with the option cost_lipschitz (a bound of |∂g/∂ζ_i|, a number"
                " or one per constraint)."
            )
        bounds.append(bound)
    return np.array(bounds, dtype=float).reshape(len(constraints), d)


def _numbers(value: Any) -> bool:
    """True for a real number or a non-empty flat sequence of them (no bools, strings or None)."""
    items = list(np.ravel(value)) if isinstance(value, (list, tuple, np.ndarray)) else [value]
    return len(items) > 0 and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in items)


def constraint_scales(lipschitz: np.ndarray, costs: np.ndarray) -> np.ndarray:
    """``s_m = Σ_i L_{m,i} · range(c_i)``: how far g_m can move between the model's extreme costs, shape (M,).

    The unit of each constraint: multiplying the costs (and the bounds) by ``k`` multiplies ``s_m`` by ``k``,
    so a margin ``ε · s_m`` keeps the same meaning in any units (docs/safe-mode.md). For a linear
    ``g_m = w·ζ - b`` it is ``Σ_i |w_i| range(c_i)``.

    Parameters
    ----------
    lipschitz : ndarray, shape (M, d)
        Bounds of ``|∂g_m/∂ζ_i|`` (:func:`lipschitz_bounds`).
    costs : ndarray, shape (d, S, A)
    """
    d = costs.shape[0]
    flat = costs.reshape(d, -1) if d else np.zeros((0, 1))  # (-1 cannot be inferred for a model without costs)
    spread = flat.max(axis=1) - flat.min(axis=1) if flat.size else np.zeros(d)
    if not d:  # no costs: no constraint has a unit to scale (a model without costs has no constraints)
        return np.zeros(len(np.asarray(lipschitz)))
    return np.asarray(lipschitz, dtype=float).reshape(-1, d) @ spread

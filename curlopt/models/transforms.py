"""Transforms of a model that keep its problem: other units (:func:`scaled_model`), slower mixing (:func:`lazy_model`).

A user who measures a cost in cents instead of euros has the same problem: every policy keeps or breaks the
same constraints and ranks the same under the objective. :func:`scaled_model` builds that model, so that an
agent can be checked for what it should be, *invariant* to the units (docs/safe-mode.md):

* costs ``c_i ↦ k c_i``, and each constraint ``g_m ↦ g'_m(y) = k g_m(y / k)``, so that ``g'_m(k ζ) = k g_m(ζ)``:
  the same policies are feasible, and a violation reads ``k`` times larger in the new units. For a linear
  constraint ``w·ζ <= b`` this multiplies the bound: ``w·ζ' <= k b``;
* rewards ``r_k ↦ k r_k`` and ``f ↦ f'(x) = k f(x / k)`` for a linear or piecewise-linear ``f`` (the same
  ranking, values and regret ``k`` times larger).

The kernel, the initial distribution and the labels are kept as they are (a sparse kernel stays sparse).

:func:`lazy_model` keeps the units and slows the chain: every step stays where it is with probability ``stay``
and otherwise moves as the base model's kernel says. Every stationary policy keeps its stationary distribution,
so its long-run rewards and costs, the optimum and the feasible set are those of the base model, while the chain
forgets its start ``1 / (1 - stay)`` times more slowly: the same problem, harder to learn safely.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from .cmdp import CMDP
from .registry import build_model
from .units import positive_factor, scale_constraint, scale_objective

__all__ = ["scaled_model", "lazy_model", "scale_constraint", "scale_objective"]


def _base_model(base: str | CMDP, base_params: dict[str, Any], own: str) -> CMDP:
    """The model ``base`` names (built with ``base_params``), or ``base`` itself."""
    if isinstance(base, CMDP):
        if base_params:
            raise ModelError(
                f"base is a model, so base parameters {sorted(base_params)} cannot apply; build the model with them first."
            )
        return base
    if isinstance(base, str):
        if base == own:
            raise ModelError(f"base must be another model than {own!r}: apply the transform once, with its final factor.")
        return build_model(base, **base_params)
    raise ModelError(f"base must be a built-in model name or a curlopt CMDP, got {type(base).__name__}.")


def scaled_model(base: str | CMDP = "random", costs: float = 1.0, rewards: float = 1.0, **base_params: Any) -> CMDP:
    """``base`` with its costs multiplied by ``costs`` and its rewards by ``rewards`` (the same problem in other units).

    Parameters
    ----------
    base : str or CMDP, default "random"
        A built-in model name (built with ``base_params``) or a model.
    costs : float, default 1
        The factor ``k > 0`` of every cost signal; each constraint becomes ``k g(ζ / k)`` (a linear bound ``b``
        becomes ``k b``), see :func:`scale_constraint`.
    rewards : float, default 1
        The factor of every reward signal; the objective becomes ``k f(λ / k)``. A factor other than 1 needs a
        linear or piecewise-linear objective (:func:`scale_objective`).
    **base_params
        Parameters of the named base model (e.g. ``n_states=10, seed=3`` for ``random``).

    Raises
    ------
    ModelError
        For an unknown base, base parameters given with a model, ``"scaled"`` as its own base, a factor that is
        not a finite number > 0, or a utility the transform does not know.

    Examples
    --------
    In a study file: ``params = { base = "random", costs = 100.0, n_states = 10, seed = 3 }``.
    """
    k_cost, k_reward = positive_factor(costs, "costs"), positive_factor(rewards, "rewards")
    model = _base_model(base, base_params, "scaled")
    objective = model.objective if k_reward == 1.0 else scale_objective(model.objective, k_reward)
    constraints = [g if k_cost == 1.0 else scale_constraint(g, k_cost) for g in model.constraints]
    kernel = model.transitions if model.sparse else model.kernel
    return CMDP(
        rewards=k_reward * model.rewards,
        costs=k_cost * model.costs if model.n_costs else None,
        objective=objective,
        constraints=constraints,
        kernel=kernel,
        initial=model.initial,
        name=f"scaled({model.name}, costs={k_cost:g}, rewards={k_reward:g})",
        labels=model.labels,
    )


def lazy_model(base: str | CMDP = "random", stay: float = 0.9, **base_params: Any) -> CMDP:
    """``base`` with the lazy kernel ``P'(s'|s,a) = stay · 1{s' = s} + (1 - stay) · P(s'|s,a)``.

    For every policy π, ``P'_π = stay · I + (1 - stay) · P_π`` has the stationary distributions of ``P_π``: the
    long-run averages, the optimum and the feasible set do not change, and the chain mixes about
    ``1 / (1 - stay)`` times more slowly (every move waits a geometric number of steps).

    Parameters
    ----------
    base : str or CMDP, default "random"
        A built-in model name (built with ``base_params``) or a model with a kernel.
    stay : float, default 0.9
        The probability ``0 <= stay < 1`` of staying put before the base kernel acts.
    **base_params
        Parameters of the named base model.

    Raises
    ------
    ModelError
        For a ``stay`` outside ``[0, 1)``, a base without a kernel, or the base errors of :func:`scaled_model`.
    """
    ok = not isinstance(stay, bool) and isinstance(stay, (int, float, np.integer, np.floating))
    if not (ok and math.isfinite(float(stay)) and 0.0 <= float(stay) < 1.0):
        raise ModelError(f"stay must be a probability in [0, 1) (the chance of staying put each step), got {stay!r}.")
    stay = float(stay)
    model = _base_model(base, base_params, "lazy")
    if model.transitions is None:
        raise ModelError(f"model {model.name!r} has no kernel to slow down.")
    S, A = model.n_states, model.n_actions
    if model.sparse:
        own = sp.csr_array((np.ones(S * A), (np.arange(S * A), np.repeat(np.arange(S), A))), shape=(S * A, S))
        kernel: Any = sp.csr_array(stay * own + (1.0 - stay) * model.transitions)
    else:
        dense = model.kernel
        assert dense is not None  # a model with transitions has its dense view
        kernel = (1.0 - stay) * dense
        kernel[np.arange(S), :, np.arange(S)] += stay
    return CMDP(
        rewards=model.rewards,
        costs=model.costs if model.n_costs else None,
        objective=model.objective,
        constraints=model.constraints,
        kernel=kernel,
        initial=model.initial,
        name=f"lazy({model.name}, stay={stay:g})",
        labels=model.labels,
    )

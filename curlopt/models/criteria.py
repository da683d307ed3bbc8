"""Another criterion on a model: a horizon (:func:`episodic`) or a discount (:func:`discounted`).

Every built-in model is stated for the long-run average criterion; ``build_model(name, horizon=H)`` and
``build_model(name, discount=γ)`` build it and put it under the other criterion with the functions here (a builder
that takes ``horizon`` itself, such as the gridworlds, builds its episodic model on its own, with its safe policy).

What carries over, and how:

* **horizon H**: the kernel, the signals and ``μ`` are the model's; the objective and constraints act on per-episode
  totals, which are H times a per-step average. The same problem on per-step averages is ``f'(x) = H f(x / H)`` and
  ``g'(y) = H g(y / H)`` (:mod:`curlopt.models.units`): a budget ``b`` per step becomes ``H b`` per episode. A
  nonlinear objective (logarithms, powers, an entropy) becomes a :class:`~curlopt.models.units.PerEpisode` utility,
  whose form is the exact lift of ``f``'s; one whose form does not lift is refused: give ``objective=``.
  ``budgets=`` replaces the constraints by per-episode budgets ``ζ_i <= τ_i`` (:func:`budget_constraints`).
* **discount γ**: values are averages of the normalised discounted occupancy, on the same scale as the long-run
  averages, so the objective and constraints carry over unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import ModelError
from ..utilities.library import LinearBound, Utility
from .cmdp import CMDP
from .discounted import DiscountedCMDP
from .episodic import EpisodicCMDP, check_episode_policy, check_horizon, episode_values
from .units import per_episode_objective, scale_constraint

__all__ = ["episodic", "discounted", "budget_constraints", "with_horizon"]


def budget_constraints(budgets: Any) -> list[Utility]:
    """One constraint ``ζ_i − τ_i <= 0`` per cost signal: ``LinearBound(e_i, τ_i)`` for each budget ``τ_i``.

    Parameters
    ----------
    budgets : float or array_like, shape (d,)
        ``τ``, one finite number per cost signal (a number for a single cost).

    Raises
    ------
    ModelError
        For an empty or non-finite budget.
    """
    try:
        tau = np.atleast_1d(np.asarray(budgets, dtype=float))
    except (TypeError, ValueError) as exc:
        raise ModelError(f"budgets must be numbers, one per cost signal ({exc}).") from None
    if tau.ndim != 1 or tau.size == 0 or not np.all(np.isfinite(tau)):
        raise ModelError(f"budgets must be finite numbers, one per cost signal, got {budgets!r}.")
    d = tau.size
    return [LinearBound(np.eye(d)[i], float(tau[i])) for i in range(d)]


def _kernel(model: CMDP) -> Any:
    if not model.has_kernel:
        raise ModelError(f"model {model.name!r} has no kernel; another criterion needs the transition kernel.")
    return model.transitions if model.sparse else model.kernel


def _episode_objective(model: CMDP, horizon: int) -> Utility:
    try:
        return per_episode_objective(model.objective, horizon) if horizon != 1 else model.objective
    except ModelError:
        raise ModelError(
            f"model {model.name!r}: its objective {model.objective!r} on per-step averages has no form on per-episode"
            " totals; give the episodic model its own objective (objective=... in Python)."
        ) from None


def _episode_constraints(model: CMDP, horizon: int, budgets: Any) -> list[Utility]:
    if budgets is not None:
        constraints = budget_constraints(budgets)
        if len(constraints) != model.n_costs:
            raise ModelError(
                f"model {model.name!r} has d = {model.n_costs} cost signals; budgets must give one per signal,"
                f" got {len(constraints)}."
            )
        return constraints
    try:
        return [scale_constraint(g, horizon) if horizon != 1 else g for g in model.constraints]
    except ModelError as exc:
        raise ModelError(f"model {model.name!r}: {exc} Or give per-episode budgets (budgets=...).") from None


def episodic(model: CMDP, horizon: Any, initial: Any = None, budgets: Any = None, objective: Utility | None = None,
             constraints: Sequence[Utility] | None = None, safe_policy: Any = None) -> EpisodicCMDP:
    """``model`` played in episodes of ``horizon`` steps (time-homogeneous kernel and signals).

    Parameters
    ----------
    model : CMDP
        A model with a kernel.
    horizon : int
        ``H >= 1``.
    initial : array_like, shape (S,), optional
        ``μ``, the law of each episode's first state; default the model's initial distribution.
    budgets : float or array_like, shape (d,), optional
        Per-episode budgets ``τ_i``: the constraints become ``ζ_i <= τ_i`` on the totals. Default: the model's own
        constraints, lifted to totals (``g'(y) = H g(y / H)``; a per-step bound ``b`` becomes ``H b``).
    objective : Utility, optional
        The objective on per-episode totals; default ``H f(x / H)`` (the per-episode total of a linear objective):
        a Linear or MinOfLinear again for those, a :class:`~curlopt.models.units.PerEpisode` utility for another
        ``f`` whose form lifts, refused otherwise.
    constraints : sequence of Utility, optional
        The constraints on per-episode totals (instead of ``budgets`` or the lifted ones).
    safe_policy : array_like, shape (H, S, A) or (S, A), optional
        A policy known to satisfy the constraints strictly (see :class:`~curlopt.models.episodic.EpisodicCMDP`).

    Returns
    -------
    EpisodicCMDP
        Named like ``model``; its repr shows H.

    Raises
    ------
    ModelError
        For a bad horizon, a model without a kernel, both ``budgets`` and ``constraints``, or an objective or
        constraint that cannot be lifted (the message says what to give instead).
    """
    if isinstance(model, (EpisodicCMDP, DiscountedCMDP)):
        raise ModelError(f"model {model.name!r} already has the {model.criterion} criterion; give a model of the"
                         " long-run average criterion.")
    H = check_horizon(horizon)
    if budgets is not None and constraints is not None:
        raise ModelError("give budgets or constraints, not both.")
    kernel = _kernel(model)
    return EpisodicCMDP(
        rewards=model.rewards, costs=model.costs if model.n_costs else None,
        objective=_episode_objective(model, H) if objective is None else objective,
        constraints=_episode_constraints(model, H, budgets) if constraints is None else constraints,
        kernel=kernel, initial=model.initial if initial is None else initial, horizon=H, safe_policy=safe_policy,
        name=model.name, labels=model.labels,
    )


def discounted(model: CMDP, discount: Any, initial: Any = None) -> DiscountedCMDP:
    """``model`` under the discounted criterion with factor ``discount`` (its utilities unchanged).

    Parameters
    ----------
    model : CMDP
        A model with a kernel, of the long-run average criterion.
    discount : float
        ``0 < γ < 1``.
    initial : array_like, shape (S,), optional
        ``μ``; default the model's initial distribution.

    Raises
    ------
    ModelError
        For γ outside (0, 1), a model without a kernel or one already episodic or discounted.
    """
    if isinstance(model, (EpisodicCMDP, DiscountedCMDP)):
        raise ModelError(f"model {model.name!r} already has the {model.criterion} criterion; give a model of the"
                         " long-run average criterion.")
    return DiscountedCMDP(
        rewards=model.rewards, costs=model.costs if model.n_costs else None, objective=model.objective,
        constraints=model.constraints, kernel=_kernel(model),
        initial=model.initial if initial is None else initial, discount=discount, name=model.name,
        labels=model.labels,
    )


def with_horizon(model: CMDP, horizon: Any, budgets: Any,
                 safe_candidate: Callable[[EpisodicCMDP], Any] | None = None) -> CMDP:
    """A builder's model as it asked: ``model`` itself without a horizon, else :func:`episodic` with a safe policy.

    ``safe_candidate(episodic_model)`` proposes a policy ((S, A) or (H, S, A), or None); it is declared the model's
    :attr:`~curlopt.models.episodic.EpisodicCMDP.safe_policy` only when its exact per-episode values (the forward
    recursion) satisfy every constraint strictly, ``g_m(ζ) < 0``: a builder's claim is checked, never trusted.

    Raises
    ------
    ModelError
        For budgets without a horizon, and whatever :func:`episodic` refuses.
    """
    if horizon is None:
        if budgets is not None:
            raise ModelError(f"model {model.name!r}: budgets are per episode and need a horizon (horizon=H).")
        return model
    lifted = episodic(model, horizon, budgets=budgets)
    candidate = None if safe_candidate is None else safe_candidate(lifted)
    if candidate is not None:
        policy = check_episode_policy(candidate, lifted.horizon, lifted.n_states, lifted.n_actions, "safe_policy")
        _, costs = episode_values(lifted, policy)
        if np.all(lifted.constraint_values(costs) < 0):
            lifted.safe_policy = policy
    return lifted

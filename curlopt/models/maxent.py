"""Maximum-entropy exploration as a utility (docs/math.md §8)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ModelError
from ..utilities.library import Entropy
from .cmdp import CMDP, check_model_size
from .registry import build_model

__all__ = ["maxent_model"]


def maxent_model(base: str | CMDP = "queue", shift: float = 0.0, **base_params: Any) -> CMDP:
    """A base model with the entropy of its state-action occupancy as the objective.

    ``K = S·A`` reward signals, ``r_k(s,a) = 1{(s,a) = k}`` with ``k = s·A + a``,
    so ``λ = ρ`` (flattened) and the objective is ``f(λ) = -Σ_k λ_k ln(λ_k + η)``
    (:class:`curlopt.Entropy`). The base model's kernel, initial distribution,
    costs and constraints are kept, so the agent explores as evenly as it can
    while respecting the base model's constraints.

    Parameters
    ----------
    base : str or CMDP, default "queue"
        A built-in model name (built with ``base_params``) or a model.
    shift : float, default 0
        ``η >= 0``; a positive shift keeps the gradient finite at ``ρ = 0``.
    **base_params
        Parameters of the named base model (e.g. ``buffer=8`` for the queue).

    Raises
    ------
    ModelError
        If ``base`` is unknown, is ``"maxent"`` itself, or is a model while
        ``base_params`` are given; :class:`curlopt.errors.UtilityError` for a bad shift.
    """
    if isinstance(base, CMDP):
        if base_params:
            raise ModelError(
                f"base is a model, so base parameters {sorted(base_params)} cannot apply; build the model with them first."
            )
        model = base
    elif isinstance(base, str):
        if base == "maxent":
            raise ModelError("base must be another model: the entropy utility of 'maxent' is already its objective.")
        model = build_model(base, **base_params)
    else:
        raise ModelError(f"base must be a built-in model name or a curlopt CMDP, got {type(base).__name__}.")
    S, A = model.n_states, model.n_actions
    check_model_size(f"maxent({model.name})", S, A, S * A + model.n_costs)  # K = S·A indicator signals
    indicators = np.eye(S * A).reshape(S * A, S, A)
    return CMDP(
        rewards=indicators,
        costs=model.costs,
        objective=Entropy(S * A, shift),
        constraints=model.constraints,
        kernel=model.kernel,
        initial=model.initial,
        name=f"maxent({model.name})",
        labels=model.labels,
    )

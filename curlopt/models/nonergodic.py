"""A non-ergodic 3-state example (docs/math.md §8).

Different deterministic policies have different recurrent classes here, so the
stationary occupancy program can misstate what a policy achieves. The model
exists to exercise :func:`curlopt.diagnostics.diagnose`, which must flag it.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ModelError
from ..utilities.library import Linear, LinearBound
from .cmdp import CMDP

__all__ = ["nonergodic_model", "STATES", "ACTIONS"]

STATES = ("left", "middle", "right")
ACTIONS = ("left", "right")


def nonergodic_model(bound: float | None = 0.5) -> CMDP:
    """Three states in a row; moves are deterministic.

    States 0 = left, 1 = middle, 2 = right; action 0 moves one step left and
    action 1 one step right, staying put at the ends. Reward 1 for playing
    "left" in the left state, cost 1 for playing "right" in the right state,
    0 otherwise. Linear objective ``f(λ) = λ``; with ``bound`` set, one
    constraint ``ζ <= bound`` (the share of time spent pushing against the right
    wall). Start in the middle state.

    The constraint is deliberately loose by default (0.5): it never binds at the
    optimum (stay left), so the model's interest is its structure. The policy
    "left in left, right elsewhere" has two recurrent classes ({left}, {right})
    and a transient state (middle); "always left" has one recurrent class
    {left} and two transient states.

    Parameters
    ----------
    bound : float or None, default 0.5
        Upper bound on the average cost, in [0, 1]; ``None`` for no constraint.

    Raises
    ------
    ModelError
        If ``bound`` is not a number in [0, 1] or None.
    """
    if bound is not None:
        # the range test first: math.isfinite overflows on a huge integer
        if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not 0 <= bound <= 1 \
                or not math.isfinite(bound):
            raise ModelError(f"bound must be a number in [0, 1] or None, got {bound!r}.")
    n_states, n_actions = 3, 2
    kernel = np.zeros((n_states, n_actions, n_states))
    for s in range(n_states):
        kernel[s, 0, max(s - 1, 0)] = 1.0
        kernel[s, 1, min(s + 1, n_states - 1)] = 1.0
    rewards = np.zeros((1, n_states, n_actions))
    rewards[0, 0, 0] = 1.0
    costs = np.zeros((1, n_states, n_actions))
    costs[0, 2, 1] = 1.0
    initial = np.zeros(n_states)
    initial[1] = 1.0
    constraints = [] if bound is None else [LinearBound([1.0], float(bound))]
    return CMDP(
        rewards=rewards,
        costs=costs,
        objective=Linear([1.0]),
        constraints=constraints,
        kernel=kernel,
        initial=initial,
        name="nonergodic",
        labels={"states": list(STATES), "actions": list(ACTIONS)},
    )

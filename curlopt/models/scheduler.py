"""Fair scheduler with a service-level agreement (docs/math.md §8)."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ModelError
from .cmdp import CMDP
from ..utilities.library import LinearBound, SumOfLogs

__all__ = ["scheduler_model", "CLIENT_REWARDS", "STAY_PROBABILITY"]

#: reward earned by the served client in each of its 4 states (rows: client 1, client 2)
CLIENT_REWARDS = ((0.75, 0.375, 0.5, 0.375), (0.25, 0.5, 0.75, 1.0))
STAY_PROBABILITY = 0.625


def scheduler_model(sla: float | None = 0.3) -> CMDP:
    """Two clients sharing one resource, proportional fairness, optional SLA (docs/math.md §8).

    Joint state ``s = 4 i_1 + i_2`` (client states ``i_1, i_2`` in 0..3; S = 16).
    Action 0 serves client 1, action 1 serves client 2 (A = 2). Each client stays
    in its state with probability 0.625 and moves to each other state with 0.125,
    whatever the action. Rewards ``r_k`` (K = 2): the served client earns its
    state's reward, the other 0. Objective ``ln λ_1 + ln λ_2``. One cost signal,
    ``c(s,a) = 1{a = client 2}``; with ``sla`` set, the constraint ``ζ <= sla``.

    Parameters
    ----------
    sla : float or None, default 0.3
        Largest share of time client 2 may be served; ``None`` for no constraint.
    """
    if sla is not None:
        # the range test first: math.isfinite overflows on a huge integer
        if isinstance(sla, bool) or not isinstance(sla, (int, float)) or not 0 <= sla <= 1 or not math.isfinite(sla):
            raise ModelError(f"sla must be a share in [0, 1] or None, got {sla!r}.")
    move = (1 - STAY_PROBABILITY) / 3
    client = np.full((4, 4), move) + np.eye(4) * (STAY_PROBABILITY - move)
    chain = np.kron(client, client)  # (16, 16): independent clients
    kernel = np.repeat(chain[:, None, :], 2, axis=1)
    table = np.asarray(CLIENT_REWARDS)
    i1, i2 = np.divmod(np.arange(16), 4)
    rewards = np.zeros((2, 16, 2))
    rewards[0, :, 0] = table[0, i1]
    rewards[1, :, 1] = table[1, i2]
    costs = np.zeros((1, 16, 2))
    costs[0, :, 1] = 1.0
    constraints = [] if sla is None else [LinearBound([1.0], float(sla))]
    return CMDP(
        rewards=rewards,
        costs=costs,
        objective=SumOfLogs(dim=2),
        constraints=constraints,
        kernel=kernel,
        initial=np.full(16, 1 / 16),
        name="scheduler" if sla is not None else "scheduler-unconstrained",
        labels={"actions": ["serve client 1", "serve client 2"],
                "states": [f"({a + 1},{b + 1})" for a, b in zip(i1, i2)]},
    )

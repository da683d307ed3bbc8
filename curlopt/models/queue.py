"""Single-server queue with flow and service control (docs/math.md §8)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import ModelError
from .cmdp import CMDP, check_model_size
from ..utilities.library import Linear, LinearBound

__all__ = ["queue_model", "SERVICE_GRID", "FLOW_GRID"]

SERVICE_GRID = (0.2, 0.4, 0.6, 0.8)
FLOW_GRID = (0.4, 0.5, 0.6, 0.7)


def _grid(values: Sequence[float], name: str) -> np.ndarray:
    try:
        grid = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError, OverflowError):
        grid = np.zeros(0)  # refused just below, naming the argument
    if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any((grid < 0) | (grid > 1)):
        raise ModelError(f"{name} must be a non-empty list of probabilities in [0, 1], got {list(values)!r}.")
    return grid


def queue_model(
    buffer: int = 5,
    service: Sequence[float] = SERVICE_GRID,
    flow: Sequence[float] = FLOW_GRID,
) -> CMDP:
    """The queue of docs/math.md §8 as a CMDP.

    States are the number of waiting customers ``x = 0..buffer``; actions are the
    pairs (service probability a, flow probability b), action index
    ``i_a * len(flow) + i_b``. Reward ``5 - x``; costs ``c1 = -10a + 6`` and
    ``c2 = -8(1-b)^2 + 2`` whose long-run averages must be >= 0
    (``g_i = -ζ_i``). Linear objective; start in the empty queue.

    Parameters
    ----------
    buffer : int, default 5
        Buffer size L >= 1 (S = L + 1 states).
    service : sequence of float, default (0.2, 0.4, 0.6, 0.8)
        The service probabilities a.
    flow : sequence of float, default (0.4, 0.5, 0.6, 0.7)
        The flow (arrival) probabilities b.
    """
    if not isinstance(buffer, (int, np.integer)) or isinstance(buffer, bool) or buffer < 1:
        raise ModelError(f"buffer must be an integer >= 1, got {buffer!r}.")
    a_grid, b_grid = _grid(service, "service"), _grid(flow, "flow")
    check_model_size("queue", int(buffer) + 1, a_grid.size * b_grid.size, 3)
    a = np.repeat(a_grid, b_grid.size)  # per action
    b = np.tile(b_grid, a_grid.size)
    n_states, n_actions = buffer + 1, a.size
    kernel = np.zeros((n_states, n_actions, n_states))
    for x in range(n_states):
        if x == 0:
            kernel[x, :, 1] = b * (1 - a)
            kernel[x, :, 0] = 1 - b * (1 - a)
        elif x == buffer:
            kernel[x, :, x - 1] = a
            kernel[x, :, x] = 1 - a
        else:
            kernel[x, :, x - 1] = a * (1 - b)
            kernel[x, :, x] = a * b + (1 - a) * (1 - b)
            kernel[x, :, x + 1] = (1 - a) * b
    states = np.arange(n_states, dtype=float)
    rewards = np.broadcast_to((5.0 - states)[:, None], (n_states, n_actions))[None]
    costs = np.stack([
        np.broadcast_to(-10 * a + 6, (n_states, n_actions)),
        np.broadcast_to(-8 * (1 - b) ** 2 + 2, (n_states, n_actions)),
    ])
    initial = np.zeros(n_states)
    initial[0] = 1.0
    return CMDP(
        rewards=rewards,
        costs=costs,
        objective=Linear([1.0]),
        constraints=[LinearBound([-1.0, 0.0], 0.0), LinearBound([0.0, -1.0], 0.0)],
        kernel=kernel,
        initial=initial,
        name="queue",
        labels={"actions": [f"a={ai:g},b={bi:g}" for ai, bi in zip(a, b)], "states": [f"x={x}" for x in range(n_states)]},
    )

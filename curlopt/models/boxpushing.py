"""The box-pushing gridworld of danilprov/cmdp: reach the goal without pushing the box where it gets stuck.

A state is (agent cell, box cell), both non-wall cells of the grid (every pair, the unreachable ones where they
coincide included, as in danilprov/cmdp). The agent moves up, down, left, right; moving into the box pushes it one
cell the same way; a move that would put the agent or the box into a wall stays put. With probability ``slip`` the
move is replaced by one of the four drawn uniformly.

* reward −1 per step, 0 at the goal (where any action restarts from the start state);
* cost 1 when the box ends the step in a cell with at least two wall neighbours (out of four; the grid's outside
  counts as wall): a box pushed there can no longer be moved freely (danilprov/cmdp's side effect);
* constraint: average cost per step at most ``budget`` (their value 0.6); with ``horizon=H``, ``H · budget`` per
  episode (or ``budgets=``).

Layout (their ``6x6_box`` without its border walls): ``.S##/.X../#.../##.G`` (``X`` the box).

Safe policy (episodic models): a shortest path to the goal through cost-free moves (a breadth-first search over
(agent, box) states, moves without slip): it pushes the box right, away from the walls, and walks around it; with
``slip = 0`` its cost is 0 < any positive budget, with a slip it is declared only if its exact cost is below every
budget (:func:`~curlopt.models.criteria.with_horizon`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ModelError
from ..utilities.library import Linear, LinearBound
from .cmdp import CMDP, check_model_size
from .criteria import with_horizon
from .gridworld import ACTION_NAMES, MOVES, grid_cells, path_policy, shortest_safe_moves

__all__ = ["BOX_LAYOUT", "boxpushing_model"]

BOX_LAYOUT = ".S##/.X../#.../##.G"


def _parse(layout: str) -> np.ndarray:
    rows = [row for row in layout.replace("\n", "/").split("/") if row]
    if not rows or len({len(row) for row in rows}) != 1 or set("".join(rows)) - set(".#SXG"):
        raise ModelError(f"layout {layout!r}: rows of equal length of the cells . # S X G.")
    grid = np.array([list(row) for row in rows])
    if [int(np.sum(grid == ch)) for ch in "SXG"] != [1, 1, 1]:
        raise ModelError(f"layout {layout!r} needs exactly one start S, one box X and one goal G.")
    return grid


def _free(grid: np.ndarray, cell: tuple[int, int]) -> bool:
    return 0 <= cell[0] < grid.shape[0] and 0 <= cell[1] < grid.shape[1] and grid[cell] != "#"


def _stuck(grid: np.ndarray, cell: tuple[int, int]) -> float:
    walls = sum(not _free(grid, (cell[0] + dr, cell[1] + dc)) for dr, dc in MOVES)
    return 1.0 if walls >= 2 else 0.0


def _moves(grid: np.ndarray) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
    """(states, successor (S, A), cost (S, A) of the state reached, goal mask) without slip; the goal restarts."""
    cells = grid_cells(grid, grid != "#")
    states = [(agent, box) for agent in cells for box in cells]
    index = {state: i for i, state in enumerate(states)}
    start = index[(grid_cells(grid, grid == "S")[0], grid_cells(grid, grid == "X")[0])]
    S, A = len(states), len(MOVES)
    successor, cost = np.zeros((S, A), dtype=int), np.zeros((S, A))
    goal = np.array([grid[agent] == "G" for agent, _ in states])
    for s, (agent, box) in enumerate(states):
        for a, (dr, dc) in enumerate(MOVES):
            if goal[s]:
                target = start
            else:
                moved = (agent[0] + dr, agent[1] + dc)
                pushed = (box[0] + dr, box[1] + dc) if moved == box else box
                target = index[(moved, pushed)] if _free(grid, moved) and _free(grid, pushed) else s
            successor[s, a] = target
            cost[s, a] = _stuck(grid, states[target][1])
    return states, successor, cost, goal


def boxpushing_model(slip: float = 0.0, budget: float = 0.6, horizon: int | None = None, budgets: Any = None,
                     layout: str = BOX_LAYOUT) -> CMDP:
    """The box-pushing gridworld (module docstring).

    Parameters
    ----------
    slip : float, default 0
        Probability that a move is replaced by a uniformly drawn one.
    budget : float, default 0.6
        Average cost allowed per step.
    horizon : int, optional
        Play in episodes of H steps (with the cost-free path policy as the safe policy when strictly safe).
    budgets : float, optional
        Per-episode budget (with ``horizon``); default ``H · budget``.
    layout : str
        Rows of cells ``. # S X G`` (one start, one box, one goal).

    Raises
    ------
    ModelError
        For a bad layout, slip or budget.
    """
    if isinstance(slip, bool) or not isinstance(slip, (int, float)) or not 0.0 <= float(slip) <= 1.0:
        raise ModelError(f"slip must be a probability in [0, 1], got {slip!r}.")
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not np.isfinite(budget):
        raise ModelError(f"budget must be a finite number, got {budget!r}.")
    grid = _parse(layout)
    cells = int(np.sum(grid != "#"))  # states are (agent cell, box cell) pairs: cells² of them, before any is listed
    check_model_size(f"boxpushing({grid.shape[0]}x{grid.shape[1]} layout)", cells * cells, len(MOVES), 2)
    states, successor, cost, goal = _moves(grid)
    S, A = successor.shape
    slip = float(slip)
    weights = (1.0 - slip) * np.eye(A) + slip / A  # weights[a, b]: the chance that action a moves as b
    kernel = np.zeros((S, A, S))
    costs = np.zeros((S, A))
    for a in range(A):
        for b in range(A):
            np.add.at(kernel, (np.arange(S), np.full(S, a), successor[:, b]), weights[a, b])
            costs[:, a] += weights[a, b] * cost[:, b]
    rewards = np.where(goal[:, None], 0.0, -1.0) * np.ones((S, A))
    start = np.zeros(S)
    start[successor[np.flatnonzero(goal)[0], 0]] = 1.0  # the restart state is the start state
    labels = {"states": [f"agent {a[0]},{a[1]} box {b[0]},{b[1]}" for a, b in states], "actions": list(ACTION_NAMES)}
    model = CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], float(budget))], kernel, initial=start,
                 name=f"boxpushing(slip={slip:g})", labels=labels)
    return with_horizon(model, horizon, budgets, lambda _: path_policy(shortest_safe_moves(successor, cost, goal), A))

"""Gridworlds with hazard cells and a goal, the safe-exploration literature's test grids.

A grid of cells, written as rows of characters: ``.`` free, ``H`` hazard, ``G`` goal, ``S`` start, ``#`` wall (the
border is a wall). The agent moves ``up``, ``down``, ``left``, ``right`` (in that order); with probability ``slip``
the move is replaced by one of the four drawn uniformly. A move into a wall or off the grid stays put (a bump).

* reward: ``step_reward`` per step (default −1: the time spent), ``goal_reward`` for any action at the goal;
* cost: ``hazard_cost`` times the probability that the move *enters* a hazard cell (a bump enters nothing);
* at the goal any action restarts: the next cell is drawn from the start cells (``μ``, uniform over the ``S`` cells),
  so the long-run average criterion is the rate of reaching the goal safely and every policy's chain keeps moving;
* the constraint: average hazard cost per step at most ``budget``; with ``horizon=H`` a per-episode budget ``H ·
  budget`` (or ``budgets=``), each episode starting from ``μ``.

These are the rules of the grids of danilprov/cmdp (Provodin et al.'s public code), whose 4×4 grid (``layout="4x4"``,
budget 0.2) and 8×8 Mars-rover grid (``marsrover``, budget 0.1) are built here as layouts; with ``slip = 0`` the models
are theirs up to the order of the states (their code draws a random slip per cell; here it is one parameter).

Safe policy (episodic models): the shortest hazard-free path to the goal (a breadth-first search that never enters a
hazard), any action at the goal. With ``slip = 0`` it never enters a hazard, so its cost is 0 < any positive budget;
with a slip it is declared only if its exact per-episode cost is below every budget (:func:`~.criteria.with_horizon`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ModelError
from ..utilities.library import Linear, LinearBound
from .cmdp import CMDP, check_model_size
from .criteria import with_horizon

__all__ = ["LAYOUTS", "gridworld_model", "marsrover_model", "parse_layout", "MOVES", "shortest_safe_moves", "path_policy", "grid_cells"]

#: (row, column) steps of up, down, left, right (row 0 is the top)
MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))
ACTION_NAMES = ("up", "down", "left", "right")

#: Named layouts (rows separated by "/"): the grids of danilprov/cmdp, their border walls left out.
LAYOUTS = {
    "4x4": "..G./.H.H/.HHH/..S.",
    "marsrover": "GHH...../.HH.HHH./....HH../HHHH.H.H/HHHHH.../HHHHHH../....H.../.....S..",
    "corridor": "S.HG/....",
}
_CELLS = set(".HGS#")


def parse_layout(layout: str) -> np.ndarray:
    """A layout string (rows separated by ``/`` or newlines) as a 2-D array of cell characters.

    Raises
    ------
    ModelError
        For rows of unequal length, unknown characters, or a grid without a start or a goal.
    """
    text = LAYOUTS.get(layout, layout) if isinstance(layout, str) else None
    if text is None:
        raise ModelError(f"layout must be a string (a name in {sorted(LAYOUTS)} or rows of cells), got {layout!r}.")
    rows = [row.strip() for row in text.replace("\n", "/").split("/") if row.strip()]
    if not rows or len({len(row) for row in rows}) != 1:
        raise ModelError(f"layout {layout!r}: rows must be non-empty and of equal length.")
    unknown = set("".join(rows)) - _CELLS
    if unknown:
        raise ModelError(f"layout {layout!r}: unknown cells {sorted(unknown)}; use . H G S #.")
    grid = np.array([list(row) for row in rows])
    if not np.any(grid == "S") or not np.any(grid == "G"):
        raise ModelError(f"layout {layout!r} needs at least one start cell S and one goal cell G.")
    return grid


def _check_side(size: Any) -> None:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 2 <= size <= 100:
        raise ModelError(f"size must be an integer in [2, 100], got {size!r}.")


def _random_layout(size: int, hazards: float, seed: int) -> np.ndarray:
    """A ``size``×``size`` grid, start at the bottom left, goal at the top right, each other cell a hazard with
    probability ``hazards``; redrawn (up to 1000 times) until a hazard-free path joins start and goal."""
    _check_side(size)
    if not (isinstance(hazards, (int, float)) and 0.0 <= float(hazards) < 1.0):
        raise ModelError(f"hazards must be a fraction of cells in [0, 1), got {hazards!r}.")
    rng = np.random.default_rng(seed)
    for _ in range(1000):
        grid = np.where(rng.random((size, size)) < hazards, "H", ".")
        grid[-1, 0], grid[0, -1] = "S", "G"
        if _has_safe_path(grid):
            return grid
    raise ModelError(f"no {size}×{size} grid with hazard fraction {hazards} and a hazard-free path was drawn in 1000"
                     " tries; lower hazards.")


def grid_cells(grid: np.ndarray, mask: np.ndarray) -> list[tuple[int, int]]:
    """The (row, column) cells where ``mask`` holds, in row-major order."""
    return [(int(r), int(c)) for r, c in np.argwhere(mask)]


def _neighbour(grid: np.ndarray, cell: tuple[int, int], move: tuple[int, int]) -> tuple[int, int]:
    r, c = cell[0] + move[0], cell[1] + move[1]
    if 0 <= r < grid.shape[0] and 0 <= c < grid.shape[1] and grid[r, c] != "#":
        return r, c
    return cell  # a bump: stays put


def _has_safe_path(grid: np.ndarray) -> bool:
    """Whether every start cell reaches a goal through non-hazard cells (moves as without slip)."""
    successor, entered_cost, goal, cells = _deterministic_moves(grid)
    first = shortest_safe_moves(successor, entered_cost, goal)
    return all(first[s] >= 0 or goal[s] for s, cell in enumerate(cells) if grid[cell] == "S")


def _deterministic_moves(grid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """(successor (S, A), hazard entered (S, A), goal mask (S,), cells) of the grid without slip."""
    cells = grid_cells(grid, grid != "#")
    index = {cell: i for i, cell in enumerate(cells)}
    successor = np.zeros((len(cells), len(MOVES)), dtype=int)
    entered = np.zeros((len(cells), len(MOVES)))
    for s, cell in enumerate(cells):
        for a, move in enumerate(MOVES):
            target = _neighbour(grid, cell, move)
            successor[s, a] = index[target]
            entered[s, a] = float(target != cell and grid[target] == "H")
    return successor, entered, np.array([grid[cell] == "G" for cell in cells]), cells


def shortest_safe_moves(successor: np.ndarray, cost: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """The first action of a shortest cost-free path to a goal state, per state (−1 where there is none).

    ``successor[s, a]`` is the state action ``a`` leads to (moves without slip), ``cost[s, a]`` its cost: a
    breadth-first search backwards from the goal states through cost-free moves. Goal states get −1 (any action).
    """
    S, A = successor.shape
    first = np.full(S, -1)
    reached = goal.astype(bool).copy()
    frontier = list(np.flatnonzero(reached))
    while frontier:
        targets = np.zeros(S, dtype=bool)
        targets[frontier] = True
        frontier = []
        for s in np.flatnonzero(~reached):
            for a in range(A):
                if cost[s, a] == 0 and targets[successor[s, a]]:
                    first[s], reached[s] = a, True
                    frontier.append(s)
                    break
    return first


def path_policy(first_moves: np.ndarray, n_actions: int) -> np.ndarray:
    """The (S, A) policy playing ``first_moves[s]`` where it is >= 0, uniform elsewhere."""
    policy = np.full((first_moves.size, n_actions), 1.0 / n_actions)
    known = first_moves >= 0
    policy[known] = np.eye(n_actions)[first_moves[known]]
    return policy


def _grid_arrays(grid: np.ndarray, slip: float, hazard_cost: float, step_reward: float,
                 goal_reward: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list]:
    """(kernel, rewards, costs, μ, cells) of a grid: states are the non-wall cells in row-major order."""
    cells = grid_cells(grid, grid != "#")
    index = {cell: i for i, cell in enumerate(cells)}
    S, A = len(cells), len(MOVES)
    mu = np.array([1.0 if grid[cell] == "S" else 0.0 for cell in cells])
    mu /= mu.sum()
    kernel, rewards, costs = np.zeros((S, A, S)), np.full((S, A), float(step_reward)), np.zeros((S, A))
    for cell in cells:
        s = index[cell]
        if grid[cell] == "G":
            kernel[s, :, :] = mu  # restart
            rewards[s, :] = goal_reward
            continue
        for a in range(A):
            outcomes = [(1.0 - slip + slip / A if b == a else slip / A, b) for b in range(A)]
            for probability, b in outcomes:
                if probability == 0.0:
                    continue
                target = _neighbour(grid, cell, MOVES[b])
                kernel[s, a, index[target]] += probability
                if target != cell and grid[target] == "H":
                    costs[s, a] += probability * hazard_cost
    return kernel, rewards, costs, mu, cells


def _check_probability(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(value) <= 1.0:
        raise ModelError(f"{name} must be a probability in [0, 1], got {value!r}.")
    return float(value)


def _finite(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(float(value)):
        raise ModelError(f"{name} must be a finite number, got {value!r}.")
    return float(value)


def gridworld_model(layout: str = "4x4", size: int = 5, hazards: float = 0.2, seed: int = 0, slip: float = 0.0,
                    hazard_cost: float = 1.0, step_reward: float = -1.0, goal_reward: float = 0.0,
                    budget: float = 0.2, horizon: int | None = None, budgets: Any = None) -> CMDP:
    """A gridworld with hazard cells and a goal (module docstring).

    Parameters
    ----------
    layout : str, default "4x4"
        A name in :data:`LAYOUTS`, a grid written as rows (``"S.HG/...."``), or ``"random"``: a ``size``×``size``
        grid with a fraction ``hazards`` of hazard cells drawn with ``seed`` (start bottom left, goal top right, a
        hazard-free path guaranteed).
    size, hazards, seed
        The random layout's side, hazard fraction and seed (used only with ``layout="random"``).
    slip : float, default 0
        Probability that a move is replaced by a uniformly drawn one.
    hazard_cost : float, default 1
        The cost of entering a hazard cell.
    step_reward, goal_reward : float, default −1 and 0
        Reward of an action away from the goal, and at the goal.
    budget : float, default 0.2
        Average hazard cost allowed per step (danilprov/cmdp's 4×4 value).
    horizon : int, optional
        Play in episodes of H steps (an :class:`~curlopt.models.episodic.EpisodicCMDP` with the safe path policy
        when it is strictly safe); default the long-run average criterion.
    budgets : float, optional
        Per-episode budget (with ``horizon``); default ``H · budget``.

    Raises
    ------
    ModelError
        For a bad layout or parameter.
    """
    if layout == "random":
        _check_side(size)
        check_model_size(f"gridworld(random {size}x{size})", int(size) ** 2, len(MOVES), 2)  # before any drawing
        grid = _random_layout(size, hazards, seed)
    else:
        grid = parse_layout(layout)
        check_model_size(f"gridworld({grid.shape[0]}x{grid.shape[1]} layout)", int(np.sum(grid != "#")), len(MOVES), 2)
    slip = _check_probability(slip, "slip")
    kernel, rewards, costs, mu, cells = _grid_arrays(grid, slip, _finite(hazard_cost, "hazard_cost"),
                                                     _finite(step_reward, "step_reward"),
                                                     _finite(goal_reward, "goal_reward"))
    name = f"gridworld({layout if layout != 'random' else f'random {size}x{size}, seed={seed}'}, slip={slip:g})"
    labels = {"states": [f"{r},{c}" for r, c in cells], "actions": list(ACTION_NAMES),
              "grid": ["".join(row) for row in grid]}
    model = CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], _finite(budget, "budget"))], kernel,
                 initial=mu, name=name, labels=labels)
    return with_horizon(model, horizon, budgets, lambda episodic: _path_policy(grid))


def _path_policy(grid: np.ndarray) -> np.ndarray:
    """The shortest hazard-free path policy (uniform at the goal and where no such path starts)."""
    successor, entered, goal, _ = _deterministic_moves(grid)
    return path_policy(shortest_safe_moves(successor, entered, goal), len(MOVES))


def marsrover_model(slip: float = 0.0, budget: float = 0.1, horizon: int | None = None, budgets: Any = None) -> CMDP:
    """The 8×8 Mars-rover grid of danilprov/cmdp (budget 0.1 per step): :func:`gridworld_model` with
    ``layout="marsrover"``; see it for the parameters."""
    return gridworld_model(layout="marsrover", slip=slip, budget=budget, horizon=horizon, budgets=budgets)

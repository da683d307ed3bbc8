"""Single-server queue with flow and service control (docs/math.md §8)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from ..utilities.library import Linear, LinearBound
from .cmdp import CMDP, check_model_size, choose_storage

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
    storage: str = "auto",
) -> CMDP:
    """The queue of docs/math.md §8 as a CMDP, for any buffer size.

    States are the number of waiting customers ``x = 0..buffer``; actions are the
    pairs (service probability a, flow probability b), action index
    ``i_a * len(flow) + i_b``. Reward ``5 - x``; costs ``c1 = -10a + 6`` and
    ``c2 = -8(1-b)^2 + 2`` whose long-run averages must be >= 0
    (``g_i = -ζ_i``). Linear objective; start in the empty queue.

    Every row ``P(·|x, (a, b))`` has at most three successors (x − 1, x, x + 1), so a long buffer is built
    directly as a sparse kernel: ``buffer=10000`` (S·A = 160,016 rows, 480,000 nonzeros) takes a fraction of a
    second and a few MiB.

    Parameters
    ----------
    buffer : int, default 5
        Buffer size L >= 1 (S = L + 1 states).
    service : sequence of float, default (0.2, 0.4, 0.6, 0.8)
        The service probabilities a.
    flow : sequence of float, default (0.4, 0.5, 0.6, 0.7)
        The flow (arrival) probabilities b.
    storage : {"auto", "dense", "sparse"}, default "auto"
        How the kernel is stored (:func:`curlopt.models.cmdp.choose_storage`): ``auto`` keeps it dense up to
        2**20 entries S·A·S (buffer <= 255 with the default grids, so every result on those sizes is as it was)
        and sparse above; ``dense`` and ``sparse`` force the choice. Both give the same probabilities.

    Raises
    ------
    ModelError
        For a bad argument, or a size whose model would not fit in memory (checked before anything is built).
    """
    if not isinstance(buffer, (int, np.integer)) or isinstance(buffer, bool) or buffer < 1:
        raise ModelError(f"buffer must be an integer >= 1, got {buffer!r}.")
    a_grid, b_grid = _grid(service, "service"), _grid(flow, "flow")
    n_states, n_actions = int(buffer) + 1, a_grid.size * b_grid.size
    nonzeros = n_actions * (3 * n_states - 2)  # two successors at each end of the buffer, three in between
    stored = choose_storage(storage, n_states, n_actions, nonzeros)
    check_model_size("queue", n_states, n_actions, 3, nonzeros if stored == "sparse" else None)
    a = np.repeat(a_grid, b_grid.size)  # per action
    b = np.tile(b_grid, a_grid.size)
    band = _band(n_states, a, b)
    kernel = _sparse_kernel(band) if stored == "sparse" else _dense_kernel(band)
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
        labels={"actions": [f"a={ai:g},b={bi:g}" for ai, bi in zip(a, b, strict=True)],
                "states": [f"x={x}" for x in range(n_states)]},
    )


def _band(n_states: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``band[x, i, j] = P(x − 1 + j | x, action i)`` for j = 0, 1, 2 (the kernel's three diagonals), shape (S, A, 3).

    Entries that would leave 0..L are 0. Each probability is the same floating-point expression of (a, b) at
    every state of its kind, so the dense and the sparse kernel hold the same numbers.
    """
    band = np.zeros((n_states, a.size, 3))
    band[0, :, 1] = 1 - b * (1 - a)
    band[0, :, 2] = b * (1 - a)
    band[1:-1, :, 0] = a * (1 - b)
    band[1:-1, :, 1] = a * b + (1 - a) * (1 - b)
    band[1:-1, :, 2] = (1 - a) * b
    band[-1, :, 0] = a
    band[-1, :, 1] = 1 - a
    return band


def _dense_kernel(band: np.ndarray) -> np.ndarray:
    n_states, n_actions = band.shape[:2]
    kernel = np.zeros((n_states, n_actions, n_states))
    for j in range(3):
        states = np.arange(max(0, 1 - j), min(n_states, n_states + 1 - j))  # x with 0 <= x - 1 + j <= L
        kernel[states, :, states - 1 + j] = band[states, :, j]
    return kernel


def _sparse_kernel(band: np.ndarray) -> sp.csr_array:
    """The band as a CSR matrix (S·A, S), built directly (sorted columns, 32-bit indices, zeros left out)."""
    n_states, n_actions = band.shape[:2]
    successors = np.arange(-1, n_states - 1, dtype=np.int32)[:, None, None] + np.arange(3, dtype=np.int32)
    stored = band != 0  # the band's entries outside 0..L are 0 too
    data = band[stored]
    indices = np.broadcast_to(successors, band.shape)[stored]
    indptr = np.zeros(n_states * n_actions + 1, dtype=np.int32 if band.size < 2 ** 31 else np.int64)
    np.cumsum(stored.reshape(-1, 3).sum(axis=1), out=indptr[1:])
    return sp.csr_array((data, indices, indptr), shape=(n_states * n_actions, n_states))

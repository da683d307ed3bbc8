"""Fair scheduler with a service-level agreement, for two or more clients (docs/math.md §8)."""

from __future__ import annotations

import math
from itertools import product
from typing import Any

import numpy as np

from ..errors import ModelError
from ..utilities.library import LinearBound, SumOfLogs
from .cmdp import CMDP, check_model_size, choose_storage

__all__ = ["scheduler_model", "default_sla", "CLIENT_REWARDS", "STAY_PROBABILITY", "CLIENT_STATES"]

#: reward earned by the served client in each of its 4 states (rows: client 1, client 2; client k uses row
#: (k − 1) mod 2 when there are more clients)
CLIENT_REWARDS = ((0.75, 0.375, 0.5, 0.375), (0.25, 0.5, 0.75, 1.0))
STAY_PROBABILITY = 0.625
#: states of one client
CLIENT_STATES = 4


def default_sla(clients: int) -> float:
    """``1 − 1.4/N``: client 1 served at least 1.4 times its equal share ``1/N`` (0.3 for two clients).

    Computed as the rational ``(5N − 7) / (5N)``, correctly rounded, so that two clients give exactly ``0.3``.
    """
    return (5 * clients - 7) / (5 * clients)


def _clients(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 2:
        raise ModelError(f"clients must be an integer >= 2, got {value!r}.")
    return int(value)


def _sla(value: Any, clients: int) -> float | None:
    if isinstance(value, str) and value == "default":
        return default_sla(clients)
    if value is None:
        return None
    # the range test first: math.isfinite overflows on a huge integer
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1 \
            or not math.isfinite(value):
        raise ModelError(f"sla must be a share in [0, 1], None (no constraint) or 'default', got {value!r}.")
    return float(value)


def scheduler_model(sla: float | str | None = "default", clients: int = 2, storage: str = "auto") -> CMDP:
    """N clients sharing one resource, proportional fairness, optional SLA for client 1 (docs/math.md §8).

    Each client is in one of 4 states ``i_k`` in 0..3; the joint state is ``s = Σ_k i_k 4^(N−k)`` (client 1 the
    most significant digit; S = 4^N). Action ``k − 1`` serves client k (A = N). Each client stays in its state
    with probability 0.625 and moves to each other state with 0.125, whatever the action, independently of the
    others: the kernel is the Kronecker product of the N client chains, the same for every action. Rewards
    ``r_k`` (K = N): the served client earns its state's reward from :data:`CLIENT_REWARDS` (client k uses row
    ``(k − 1) mod 2``), the others 0. Objective ``Σ_k ln λ_k``. One cost signal, ``c(s,a) = 1{client 1 not
    served}``; with ``sla`` set, the constraint ``ζ <= sla``. Start: uniform. Two clients with the default SLA
    are the paper's scheduler (``1{a = client 2}``, ``ζ <= 0.3``).

    Parameters
    ----------
    sla : float, None or "default", default "default"
        Largest share of time client 1 may go unserved; ``None`` for no constraint; ``"default"`` for
        :func:`default_sla` ``= 1 − 1.4/N`` (0.3 for two clients).
    clients : int, default 2
        N >= 2.
    storage : {"auto", "dense", "sparse"}, default "auto"
        How the kernel is stored (:func:`curlopt.models.cmdp.choose_storage`). Every entry of this kernel is
        positive (4^N successors per row), so ``auto`` keeps it dense at every size; ``sparse`` forces a CSR
        matrix (which then needs more memory than the dense array).

    Raises
    ------
    ModelError
        For a bad argument, or a number of clients whose model would not fit in memory (checked before anything
        is built: 7 clients would need about 15 GiB).
    """
    n = _clients(clients)
    bound = _sla(sla, n)
    n_states, n_actions = CLIENT_STATES ** n, n
    stored = choose_storage(storage, n_states, n_actions, n_states * n_actions * n_states)
    check_model_size(f"scheduler(clients={n})", n_states, n_actions, n + 1,
                     n_states * n_actions * n_states if stored == "sparse" else None)
    move = (1 - STAY_PROBABILITY) / (CLIENT_STATES - 1)
    client = np.full((CLIENT_STATES, CLIENT_STATES), move) + np.eye(CLIENT_STATES) * (STAY_PROBABILITY - move)
    chain: np.ndarray = client
    for _ in range(n - 1):
        chain = np.kron(chain, client)  # (S, S): independent clients, client 1 the most significant
    kernel = np.repeat(chain[:, None, :], n_actions, axis=1)
    del chain
    digits = _client_states(n)  # (N, S): i_k of each joint state
    table = np.asarray(CLIENT_REWARDS)
    rewards = np.zeros((n, n_states, n_actions))
    for k in range(n):
        rewards[k, :, k] = table[k % 2, digits[k]]
    costs = np.zeros((1, n_states, n_actions))
    costs[0, :, 1:] = 1.0
    constraints = [] if bound is None else [LinearBound([1.0], bound)]
    name = "scheduler" if bound is not None else "scheduler-unconstrained"
    return CMDP(
        rewards=rewards,
        costs=costs,
        objective=SumOfLogs(dim=n),
        constraints=constraints,
        kernel=kernel,
        initial=np.full(n_states, 1 / n_states),
        name=name if n == 2 else f"{name}(clients={n})",
        labels={"actions": [f"serve client {k + 1}" for k in range(n)],
                "states": ["(" + ",".join(str(i + 1) for i in joint) + ")"
                           for joint in product(range(CLIENT_STATES), repeat=n)]},
        storage=stored,
    )


def _client_states(clients: int) -> np.ndarray:
    """``(N, S)``: the state ``i_k`` of client k in each joint state ``s = Σ_k i_k 4^(N−k)``."""
    joint = np.arange(CLIENT_STATES ** clients)
    powers = CLIENT_STATES ** np.arange(clients - 1, -1, -1)
    return (joint[None, :] // powers[:, None]) % CLIENT_STATES

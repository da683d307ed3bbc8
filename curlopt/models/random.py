"""Random ergodic CMDPs from a seed (docs/math.md §8), for tests and benchmarks."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ModelError
from .cmdp import CMDP, check_model_size, stationary_occupancy
from ..utilities.library import Linear, LinearBound, SumOfLogs

__all__ = ["random_model", "OBJECTIVES", "SUPPORT_FLOOR"]

OBJECTIVES = ("linear", "log")
#: Every transition probability is at least this (before renormalising), so that a Dirichlet
#: draw that underflows to 0 (possible for concentrations well below 1) cannot break ergodicity.
SUPPORT_FLOOR = 1e-12


def _count(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ModelError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def _positive(value, name: str, allow_zero: bool = False) -> float:
    ok = not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
    try:
        ok = ok and math.isfinite(value)
    except OverflowError:  # an integer beyond the float range
        ok = False
    if not ok or value < 0 or (value == 0 and not allow_zero):
        raise ModelError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}.")
    return float(value)


def random_model(
    n_states: int = 5,
    n_actions: int = 3,
    n_rewards: int = 1,
    n_costs: int = 1,
    seed: int = 0,
    objective: str = "linear",
    margin: float = 0.05,
    concentration: float = 1.0,
) -> CMDP:
    """A random CMDP whose every policy is ergodic and whose constraints are strictly feasible.

    Construction (all from ``numpy.random.default_rng(seed)``, in this order):

    1. kernel rows ``P(·|s,a) ~ Dirichlet(concentration · 1_S)``, floored at
       ``SUPPORT_FLOOR`` and renormalised: every row has full support, so every
       policy's chain is irreducible and aperiodic (ergodic by construction);
    2. rewards ``r_k(s,a) ~ Uniform[0, 1)``, shape (K, S, A);
    3. costs ``c_i(s,a) ~ Uniform[0, 1)``, shape (d, S, A);
    4. a reference policy ``π_ref(·|s) ~ Dirichlet(1_A)``;
    5. one constraint per cost signal, ``ζ_i <= b_i`` with
       ``b_i = ζ_i(π_ref) + margin``.

    ``π_ref`` satisfies every constraint with slack ``margin``, so the Slater
    margin ``δ = max_π min_i (b_i - ζ_i(π))`` is at least ``margin`` (> 0 unless
    ``margin = 0``). Since ``π_ref`` is a typical random policy, the bounds are
    usually tight enough that the unconstrained optimum violates some of them.

    Parameters
    ----------
    n_states, n_actions : int, default 5 and 3
        S >= 1 and A >= 1.
    n_rewards : int, default 1
        K >= 1 reward signals.
    n_costs : int, default 1
        d >= 0 cost signals (and as many constraints); 0 for an unconstrained model.
    seed : int, default 0
        Seed of the generator; the same seed gives the same model.
    objective : {"linear", "log"}, default "linear"
        ``"linear"``: ``f(λ) = Σ_k λ_k``; ``"log"``: ``f(λ) = Σ_k ln λ_k``
        (proportional fairness; every λ_k > 0 because rewards are positive a.s.).
    margin : float, default 0.05
        Slack ``>= 0`` of the reference policy in every constraint.
    concentration : float, default 1
        Dirichlet concentration ``> 0`` of the kernel rows (small: peaked rows).

    Raises
    ------
    ModelError
        When an argument is out of range; the message names it.
    """
    S, A, K, d = _sizes(n_states, n_actions, n_rewards, n_costs)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ModelError(f"seed must be an integer >= 0, got {seed!r}.")
    if objective not in OBJECTIVES:
        raise ModelError(f"objective must be one of {OBJECTIVES}, got {objective!r}.")
    margin = _positive(margin, "margin", allow_zero=True)
    concentration = _positive(concentration, "concentration")
    check_model_size("random", S, A, K + d)

    rng = np.random.default_rng(int(seed))
    kernel = _ergodic_kernel(rng, S, A, concentration)
    rewards = rng.random((K, S, A))
    costs = rng.random((d, S, A))
    utility = Linear(np.ones(K)) if objective == "linear" else SumOfLogs(dim=K)
    return CMDP(
        rewards=rewards,
        costs=costs if d else None,
        objective=utility,
        constraints=_reference_constraints(rng, kernel, costs, margin),
        kernel=kernel,
        initial=None,
        name=f"random(S={S},A={A},K={K},d={d},seed={int(seed)})",
    )


def _sizes(n_states, n_actions, n_rewards, n_costs) -> tuple[int, int, int, int]:
    """``(S, A, K, d)``, each checked to be an integer in range."""
    S = _count(n_states, "n_states", 1)
    A = _count(n_actions, "n_actions", 1)
    K = _count(n_rewards, "n_rewards", 1)
    d = _count(n_costs, "n_costs", 0)
    return S, A, K, d


def _ergodic_kernel(rng: np.random.Generator, S: int, A: int, concentration: float) -> np.ndarray:
    """Kernel rows ``Dirichlet(concentration · 1_S)``, floored at :data:`SUPPORT_FLOOR` and renormalised."""
    kernel = rng.dirichlet(np.full(S, concentration), size=(S, A))
    kernel = np.maximum(kernel, SUPPORT_FLOOR)
    kernel /= kernel.sum(axis=2, keepdims=True)
    return kernel


def _reference_constraints(rng: np.random.Generator, kernel: np.ndarray, costs: np.ndarray,
                           margin: float) -> list[LinearBound]:
    """The constraints ``ζ_i <= ζ_i(π_ref) + margin``, one per cost signal, with ``π_ref(·|s) ~ Dirichlet(1_A)``.

    The reference policy is drawn from ``rng`` after the kernel, rewards and costs (the draw order is the model).
    """
    d, A = costs.shape[0], kernel.shape[1]
    reference = rng.dirichlet(np.ones(A), size=kernel.shape[0])
    reference_costs = np.einsum("ksa,sa->k", costs, stationary_occupancy(kernel, reference))
    constraints = []
    for i in range(d):
        weights = np.zeros(d)
        weights[i] = 1.0
        constraints.append(LinearBound(weights, float(reference_costs[i] + margin)))
    return constraints

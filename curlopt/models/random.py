"""Random ergodic CMDPs from a seed (docs/math.md §8), for tests and benchmarks."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from ..utilities.library import Linear, LinearBound, SumOfLogs
from .cmdp import CMDP, check_model_size, choose_storage, policy_kernel, stationary_occupancy

__all__ = ["random_model", "sparse_ergodic_kernel", "OBJECTIVES", "SUPPORT_FLOOR"]

OBJECTIVES = ("linear", "log")
#: Every transition probability is at least this (before renormalising), so that a Dirichlet
#: draw that underflows to 0 (possible for concentrations well below 1) cannot break ergodicity.
SUPPORT_FLOOR = 1e-12


def _count(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ModelError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def _positive(value: Any, name: str, allow_zero: bool = False) -> float:
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
    successors: int | None = None,
    storage: str = "auto",
) -> CMDP:
    """A random CMDP whose every policy is ergodic and whose constraints are strictly feasible.

    Construction (all from ``numpy.random.default_rng(seed)``, in this order):

    1. kernel rows ``P(·|s,a) ~ Dirichlet(concentration · 1_S)``, floored at
       ``SUPPORT_FLOOR`` and renormalised: every row has full support, so every
       policy's chain is irreducible and aperiodic (ergodic by construction).
       With ``successors=k`` instead, each row has exactly k nonzeros (see
       :func:`sparse_ergodic_kernel`): s itself, ``(s + 1) mod S`` and ``k − 2``
       others drawn without replacement, weighted by
       ``Dirichlet(concentration · 1_k)`` floored and renormalised the same way;
       the self-loop makes every chain aperiodic and the ring irreducible;
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
    successors : int, optional
        ``2 <= k <= S`` nonzeros per kernel row (needs S >= 2); default: every state (the model, and every draw
        from the seed, as without this parameter).
    storage : {"auto", "dense", "sparse"}, default "auto"
        How the kernel is stored (:func:`curlopt.models.cmdp.choose_storage`): ``auto`` keeps it dense up to
        2**20 entries S·A·S, or when more than half of its entries are nonzero (every full-support kernel), and
        sparse otherwise; ``dense`` and ``sparse`` force the choice. The numbers are the same either way.

    Raises
    ------
    ModelError
        When an argument is out of range; the message names it.
    """
    S, A, K, d = _sizes(n_states, n_actions, n_rewards, n_costs)
    _check_seed_and_objective(seed, objective)
    margin = _positive(margin, "margin", allow_zero=True)
    concentration = _positive(concentration, "concentration")
    width = _successors(successors, S)
    stored = choose_storage(storage, S, A, S * A * width)
    check_model_size("random", S, A, K + d, S * A * width if stored == "sparse" else None)

    rng = np.random.default_rng(int(seed))
    if successors is None:
        kernel = _ergodic_kernel(rng, S, A, concentration)
    else:
        kernel = sparse_ergodic_kernel(rng, S, A, width, concentration)
    shape = f"S={S},A={A},K={K},d={d}" + ("" if successors is None else f",successors={width}")
    return _signals_and_model(rng, kernel, (S, A, K, d), objective, margin, stored, f"random({shape},seed={int(seed)})")


def _signals_and_model(rng: np.random.Generator, kernel: Any, sizes: tuple[int, int, int, int], objective: str,
                       margin: float, stored: str, name: str) -> CMDP:
    """Steps 2 to 5 of :func:`random_model`'s construction, after the kernel, and the model."""
    S, A, K, d = sizes
    rewards = rng.random((K, S, A))
    costs = rng.random((d, S, A))
    # the bounds come from the kernel as drawn, so that both storages give the same model
    constraints = _reference_constraints(rng, kernel, costs, margin, A)
    if sp.issparse(kernel) and stored == "dense":
        kernel = kernel.toarray().reshape(S, A, S)
    return CMDP(
        rewards=rewards,
        costs=costs if d else None,
        objective=Linear(np.ones(K)) if objective == "linear" else SumOfLogs(dim=K),
        constraints=constraints,
        kernel=kernel,
        initial=None,
        name=name,
        storage=stored,
    )


def _check_seed_and_objective(seed: Any, objective: Any) -> None:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ModelError(f"seed must be an integer >= 0, got {seed!r}.")
    if objective not in OBJECTIVES:
        raise ModelError(f"objective must be one of {OBJECTIVES}, got {objective!r}.")


def _successors(value: Any, n_states: int) -> int:
    """Nonzeros per kernel row: ``value`` checked to be in ``[2, S]``, or ``S`` for ``None`` (full support)."""
    if value is None:
        return n_states
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 2 <= value <= n_states:
        raise ModelError(f"successors must be an integer with 2 <= successors <= n_states (= {n_states}), or None"
                         f" for full support, got {value!r}.")
    return int(value)


def _sizes(n_states: Any, n_actions: Any, n_rewards: Any, n_costs: Any) -> tuple[int, int, int, int]:
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


def sparse_ergodic_kernel(rng: np.random.Generator, S: int, A: int, successors: int,
                          concentration: float) -> sp.csr_array:
    """A CSR kernel (S·A, S) with exactly ``successors`` = k nonzeros in each row ``s·A + a``.

    Draws, in this order: for each of the k − 2 extra successors in turn, one integer per row (all rows at once),
    picking uniformly among the states not yet chosen for that row — s itself and ``(s + 1) mod S`` are chosen
    from the start, so the extra ones are distinct and drawn without replacement; then the rows' weights
    ``Dirichlet(concentration · 1_k)`` (weight 0 on s, 1 on ``(s + 1) mod S``, then the extra successors in draw
    order), floored at :data:`SUPPORT_FLOOR` and renormalised.
    """
    rows = S * A
    state = np.repeat(np.arange(S), A)
    # The j-th extra successor is (s + 2 + v) mod S for an offset v in [0, S − 2) not yet taken: draw v among the
    # S − 2 − j free offsets, then step it over the taken ones in increasing order (uniform without replacement).
    taken = np.empty((rows, 0), dtype=np.int64)
    for j in range(successors - 2):
        offset = rng.integers(0, S - 2 - j, size=rows)
        for earlier in np.sort(taken, axis=1).T:
            offset += offset >= earlier
        taken = np.column_stack([taken, offset])
    columns = np.column_stack([state, (state + 1) % S, (state[:, None] + 2 + taken) % S])
    weights = rng.dirichlet(np.full(successors, concentration), size=rows)
    weights = np.maximum(weights, SUPPORT_FLOOR)
    weights /= weights.sum(axis=1, keepdims=True)
    order = np.argsort(columns, axis=1, kind="stable")
    index_type = np.int32 if rows * successors < 2 ** 31 else np.int64
    return sp.csr_array((np.take_along_axis(weights, order, axis=1).ravel(),
                         np.take_along_axis(columns, order, axis=1).ravel().astype(index_type),
                         np.arange(0, rows * successors + 1, successors, dtype=index_type)), shape=(rows, S))


def _reference_constraints(rng: np.random.Generator, kernel: Any, costs: np.ndarray, margin: float,
                           n_actions: int) -> list[LinearBound]:
    """The constraints ``ζ_i <= ζ_i(π_ref) + margin``, one per cost signal, with ``π_ref(·|s) ~ Dirichlet(1_A)``.

    The reference policy is drawn from ``rng`` after the kernel, rewards and costs (the draw order is the model).
    ``kernel`` is a dense (S, A, S) array or a CSR (S·A, S) matrix.
    """
    d = costs.shape[0]
    n_states = costs.shape[1] if sp.issparse(kernel) else kernel.shape[0]
    reference = rng.dirichlet(np.ones(n_actions), size=n_states)
    occupancy = _sparse_occupancy(kernel, reference) if sp.issparse(kernel) else \
        stationary_occupancy(kernel, reference)
    reference_costs = np.einsum("ksa,sa->k", costs, occupancy)
    constraints = []
    for i in range(d):
        weights = np.zeros(d)
        weights[i] = 1.0
        constraints.append(LinearBound(weights, float(reference_costs[i] + margin)))
    return constraints


#: Power iteration for the reference policy's stationary law on a sparse kernel stops when two successive iterates
#: differ by at most this much (L1), after at most :data:`STATIONARY_SWEEPS` sweeps.
STATIONARY_TOLERANCE = 1e-15
STATIONARY_SWEEPS = 100_000


def _sparse_occupancy(kernel: sp.csr_array, policy: np.ndarray) -> np.ndarray:
    """The stationary occupancy of ``policy`` on a sparse random kernel, by power iteration from the uniform law.

    The self-loop and the ring make the chain irreducible and aperiodic and the random successors make it mix in a
    few dozen sweeps (each a sparse product), where a sparse LU of a random graph fills in to nearly dense (5,000
    states: 0.02 s against 25 s). A chain still moving after :data:`STATIONARY_SWEEPS` sweeps (very peaked rows)
    is solved exactly instead (:func:`curlopt.models.cmdp.stationary_occupancy`).
    """
    chain_transposed = sp.csr_array(policy_kernel(kernel, policy).T)
    n_states = policy.shape[0]
    law = np.full(n_states, 1.0 / n_states)
    for _ in range(STATIONARY_SWEEPS):
        following = chain_transposed @ law
        change = float(np.abs(following - law).sum())
        law = following
        if change <= STATIONARY_TOLERANCE:
            return (law / law.sum())[:, None] * policy
    return stationary_occupancy(kernel, policy)

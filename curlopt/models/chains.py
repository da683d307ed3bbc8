"""Properties of a model's Markov chains: ergodicity (one recurrent class under every deterministic policy), hitting times, diameter and relaxation time."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from ..errors import ModelError
from .cmdp import CMDP, DENSE_VIEW_LIMIT, policy_kernel
from .ergodicity import EXACT_CHECK, MAX_EXACT_ROUNDS, SUFFICIENT_CHECK, UNDECIDED_CHECK, ErgodicityCheck

__all__ = ['ErgodicityCheck', 'strongly_connected', 'check_ergodicity', 'ergodicity_warning', 'diameter', 'max_hitting_time', 'relaxation_time', 'MAX_HITTING_TIME_STATES', 'MAX_EXACT_ROUNDS', 'SUFFICIENT_CHECK', 'EXACT_CHECK', 'UNDECIDED_CHECK', 'EIGENVALUE_DENSE_STATES', 'model_kernel']


#: The exact hitting time (policy iteration per target, O(S^3) per step) is computed up to this many states.
MAX_HITTING_TIME_STATES = 200

#: Up to this many states the relaxation time comes from every eigenvalue of the policy's chain (a dense
#: eigensolver); above, only a reversible chain's, by shift-invert Lanczos (see :mod:`curlopt.models.spectrum`).
EIGENVALUE_DENSE_STATES = 1024


def model_kernel(model: CMDP) -> Any:
    """The model's kernel as stored: the CSR matrix (S·A, S) of a sparse model, else the dense (S, A, S) array."""
    return model.transitions if model.sparse else model.kernel


# ----------------------------------------------------------------------------
# Ergodicity
# ----------------------------------------------------------------------------


def _reached(adjacency: np.ndarray, start: int) -> np.ndarray:
    """The states reachable from ``start`` along the edges of ``adjacency`` (S, S), breadth first."""
    seen = np.zeros(adjacency.shape[0], dtype=bool)
    seen[start] = True
    frontier = seen.copy()
    while frontier.any():
        frontier = adjacency[frontier].any(axis=0) & ~seen
        seen |= frontier
    return seen


def strongly_connected(adjacency: npt.ArrayLike) -> bool:
    """Every state reaches state 0 and is reached from it.

    Plain numpy rather than scipy's ``connected_components``: every run checks its model's
    ergodicity, and importing ``scipy.sparse.csgraph`` costs about 0.3 s per process.
    """
    adjacency = np.asarray(adjacency, dtype=bool)
    return bool(_reached(adjacency, 0).all() and _reached(adjacency.T, 0).all())


def _kernel(kernel: Any, name: str = "kernel") -> np.ndarray:
    """A dense (S, A, S) kernel; a sparse (S·A, S) one is densified up to :data:`DENSE_VIEW_LIMIT` entries."""
    if sp.issparse(kernel):
        n_states, n_actions = _sparse_sizes(kernel, name)
        if n_states * n_actions * n_states > DENSE_VIEW_LIMIT:
            raise ModelError(f"this computation needs {name} dense, and S={n_states}, A={n_actions} gives more than"
                             f" {DENSE_VIEW_LIMIT:,} entries; it is limited to smaller models.")
        return kernel.toarray().reshape(n_states, n_actions, n_states)
    array = np.asarray(kernel, dtype=float)
    if array.ndim != 3 or array.shape[0] != array.shape[2] or array.shape[0] < 1 or array.shape[1] < 1:
        raise ModelError(f"{name} must have shape (S, A, S), got {array.shape}.")
    return array


def _sparse_sizes(kernel: Any, name: str = "kernel") -> tuple[int, int]:
    """``(S, A)`` of a sparse kernel of shape (S·A, S)."""
    rows, n_states = kernel.shape
    if n_states < 1 or rows < n_states or rows % n_states:
        raise ModelError(f"a sparse {name} must have shape (S·A, S) with S, A >= 1, got {kernel.shape}.")
    return n_states, rows // n_states


def check_ergodicity(kernel: Any) -> ErgodicityCheck:
    """Decide whether every deterministic stationary policy's chain is irreducible.

    Exact for every dense kernel (see :mod:`curlopt.diagnostics` for the two checks used). A sparse kernel is
    checked on its nonzeros (graph searches of scipy.sparse.csgraph); its exact search, needed only when the
    sufficient check fails, is limited to :data:`MAX_EXACT_ROUNDS` deletion rounds, past which the answer is
    ``ergodic=None`` with the method :data:`UNDECIDED_CHECK`.

    Parameters
    ----------
    kernel : array_like of shape (S, A, S), or scipy sparse matrix of shape (S·A, S)
        Transition probabilities; an entry counts as a transition when ``> 0``.

    Returns
    -------
    ErgodicityCheck
        With a counterexample policy when the answer is no.
    """
    if sp.issparse(kernel):
        from .sparse_chains import sparse_ergodicity  # scipy.sparse.csgraph only for sparse models

        n_states, n_actions = _sparse_sizes(kernel)
        return sparse_ergodicity(kernel, n_states, n_actions, MAX_EXACT_ROUNDS)
    support = np.asarray(_kernel(kernel) > 0)
    n_states, n_actions = support.shape[:2]
    communicating = strongly_connected(support.any(axis=1))
    if strongly_connected(support.all(axis=1)):
        return ErgodicityCheck(True, communicating, SUFFICIENT_CHECK)
    for target in range(n_states):
        inside = np.ones(n_states, dtype=bool)
        inside[target] = False
        while True:
            # stays[s, a]: every successor of (s, a) is inside the candidate closed set.
            stays = ~support[:, :, ~inside].any(axis=2)
            keep = inside & np.any(stays, axis=1)
            if np.array_equal(keep, inside):
                break
            inside = keep
        if inside.any():
            # Inside the closed set, play an action that stays inside; elsewhere, action 0.
            policy = np.where(inside, np.argmax(stays, axis=1), 0)
            from .sparse_chains import chain_classes  # imported here: a non-ergodic model is rare

            chain = support[np.arange(n_states), policy]
            recurrent, transient = chain_classes(chain)
            return ErgodicityCheck(False, communicating, EXACT_CHECK, tuple(int(a) for a in policy), recurrent, transient)
    return ErgodicityCheck(True, communicating, EXACT_CHECK)


def _names(model: CMDP, key: str, count: int) -> list[str]:
    labels = model.labels.get(key)
    if labels is not None and len(labels) == count:
        return [str(label) for label in labels]
    return [str(i) for i in range(count)]


def _describe_policy(model: CMDP, policy: Sequence[int], limit: int = 12) -> str:
    states = _names(model, "states", model.n_states)
    actions = _names(model, "actions", model.n_actions)
    pairs = [f"{states[s]}→{actions[a]}" for s, a in enumerate(policy)]
    if len(pairs) > limit:
        pairs = pairs[:limit] + [f"… ({len(policy) - limit} more states)"]
    return "(" + ", ".join(pairs) + ")"


def _describe_states(model: CMDP, states: Sequence[int]) -> str:
    names = _names(model, "states", model.n_states)
    return "{" + ", ".join(names[s] for s in states) + "}"


def ergodicity_warning_text(model: CMDP, check: ErgodicityCheck) -> str | None:
    if check.ergodic:
        return None
    if check.ergodic is None:
        return (f"model {model.name!r}: ergodicity {check.method}. The occupancy programs assume every policy's"
                " chain is irreducible; on this model that assumption is not checked.")
    classes = check.recurrent_classes or []
    assert check.policy is not None  # a check that finds the model not ergodic names a policy showing it
    text = (
        f"model {model.name!r} is not ergodic: under the deterministic policy {_describe_policy(model, check.policy)}"
        f" the chain has {len(classes)} recurrent class{'es' if len(classes) != 1 else ''}"
        f" {', '.join(_describe_states(model, c) for c in classes)}"
    )
    if check.transient_states:
        text += f" and transient states {_describe_states(model, check.transient_states)}"
    return text + (
        ". The occupancy programs assume every policy's chain is irreducible; on this model their optimum and"
        " policies can misstate what a policy achieves (long-run averages depend on the start state)."
    )


def ergodicity_warning(model: CMDP) -> str | None:
    """A warning naming a policy whose chain is reducible, or ``None`` for an ergodic model.

    ``None`` too when the model has no kernel (nothing to check). Cheap: no
    program is solved. Used by ``curlopt optimum`` and the agents.
    """
    if not isinstance(model, CMDP) or (not model.sparse and model.kernel is None):
        return None
    return ergodicity_warning_text(model, check_ergodicity(model_kernel(model)))


# ----------------------------------------------------------------------------
# Hitting and relaxation times
# ----------------------------------------------------------------------------


def _expected_hitting(kernel: np.ndarray, target: int, worst: bool, max_iterations: int) -> float:
    """``max_s max_π E_s[τ_t]`` (``worst``) or ``max_s min_π E_s[τ_t]`` by policy iteration.

    Every policy must reach ``target`` with probability 1 (an ergodic model), so
    the iteration is well defined and ends after finitely many improvements.
    """
    n_states = kernel.shape[0]
    if n_states == 1:
        return 0.0
    others = np.delete(np.arange(n_states), target)
    inner = kernel[others][:, :, others]  # transitions that have not hit the target yet
    rows = np.arange(others.size)
    policy = np.zeros(others.size, dtype=int)
    identity = np.eye(others.size)
    sign = 1.0 if worst else -1.0
    for _ in range(max_iterations):
        try:
            times = np.linalg.solve(identity - inner[rows, policy], np.ones(others.size))
        except np.linalg.LinAlgError:
            # Singular in floating point: some transition probability is below the precision of 1 - p
            # (about 1e-16), so the expected time (~1/p) is beyond what double precision resolves.
            return math.inf
        if not np.all(np.isfinite(times)) or np.any(times < 0):
            return math.inf  # the same, when the solve does not detect it
        values = sign * (1.0 + inner @ times)  # (S-1, A): play a once, then follow the policy
        best = values.max(axis=1)
        # Switch only on a clear improvement, so round-off cannot make the iteration cycle.
        improve = values[rows, policy] < best - 1e-10 * np.maximum(1.0, np.abs(best))
        if not improve.any():
            return float(times.max())
        policy = np.where(improve, values.argmax(axis=1), policy)
    raise ModelError(f"policy iteration for the hitting time to state {target} did not converge.")


def max_hitting_time(kernel: Any, max_iterations: int = 1000) -> float:
    """``T_M = max_π max_{s≠t} E[τ_t | s_0 = s]``, the worst expected hitting time.

    Parameters
    ----------
    kernel : array_like, shape (S, A, S)
    max_iterations : int, default 1000
        Cap on policy-iteration steps per target (it converges in a handful).

    Returns
    -------
    float
        ``inf`` when the model is not ergodic (some policy never reaches some state), or when the time
        exceeds what double precision resolves (a transition probability below about 1e-16).
    """
    array = _kernel(kernel)
    if not check_ergodicity(array).ergodic:
        return math.inf
    return max(_expected_hitting(array, t, True, max_iterations) for t in range(array.shape[0]))


def diameter(kernel: Any, max_iterations: int = 1000) -> float:
    """``D = max_{s≠t} min_π E[τ_t | s_0 = s]``: how long the best policy needs to reach any state.

    Computed for ergodic models only (by policy iteration from an arbitrary,
    necessarily proper, policy); ``inf`` only when it exceeds what double precision
    resolves (a transition probability below about 1e-16 makes some expected time ~1/p).

    Raises
    ------
    ModelError
        When the model is not ergodic (use :func:`check_ergodicity` first).
    """
    array = _kernel(kernel)
    if not check_ergodicity(array).ergodic:
        raise ModelError("the diameter is computed for ergodic models only; this kernel is not ergodic.")
    return max(_expected_hitting(array, t, False, max_iterations) for t in range(array.shape[0]))


def relaxation_time(kernel: Any, policy: Any = None) -> float:
    """``1 / (1 - |λ_2|)`` of a policy's chain (default: the uniformly random policy).

    ``λ_2`` is the eigenvalue of second-largest modulus; ``inf`` when it has
    modulus 1 (a reducible or periodic chain). For one state the time is 1.
    ``kernel`` is a dense (S, A, S) array or a sparse (S·A, S) matrix. A reversible chain's eigenvalues come
    from its symmetric form (well conditioned even for a chain far from normal), at any size; any other chain's
    from a dense eigensolver, up to :data:`EIGENVALUE_DENSE_STATES` states (:mod:`curlopt.models.spectrum`).

    Raises
    ------
    ModelError
        For a chain that is not reversible and has more than :data:`EIGENVALUE_DENSE_STATES` states, or when the
        Lanczos iteration does not converge; the message says which.
    """
    from .spectrum import second_modulus

    if sp.issparse(kernel):
        n_states, n_actions = _sparse_sizes(kernel)
    else:
        kernel = _kernel(kernel)
        n_states, n_actions = kernel.shape[:2]
    if policy is None:
        policy = np.full((n_states, n_actions), 1.0 / n_actions)
    second = second_modulus(policy_kernel(kernel, np.asarray(policy, dtype=float)), EIGENVALUE_DENSE_STATES)
    if second >= 1.0 - 1e-12:
        return math.inf
    return 1.0 / (1.0 - second)

"""Policy extraction from an occupancy: π(a|s) = ρ(s,a) / Σ_b ρ(s,b), and the fills for states the occupancy never visits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph
from scipy.sparse.linalg import spsolve

from ..models.cmdp import KERNEL_TOLERANCE

__all__ = ['policy_from_occupancy', 'policy_and_unreached', 'extract_policy', 'unreached_states', 'per_step_feasible', 'reach_fill', 'ReachFill',
           'UNREACHED_FILLS', 'VISIT_TOLERANCE', 'REACH_TOLERANCE', 'REACH_MAX_ITERATIONS', 'PER_STEP_TOLERANCE']


#: A state whose total occupancy is at most this (per action) is treated as unvisited: uniform policy there.
#: It sits just above the feasibility tolerance of the solvers (~1e-9): interior-point solvers leave
#: round-off of that size on entries that are exactly 0 at the optimum, and a policy made of that
#: round-off would differ between backends for a state the optimum never visits.
VISIT_TOLERANCE = 1e-8


def policy_from_occupancy(occupancy: np.ndarray, tolerance: float = VISIT_TOLERANCE) -> np.ndarray:
    """``π(a|s) = ρ(s,a) / Σ_b ρ(s,b)``; uniform where ``Σ_b ρ(s,b) <= tolerance · A``.

    Tiny negative entries (solver round-off) are clipped to zero first, so the
    result is always a proper distribution per state and never contains NaN.
    """
    return policy_and_unreached(occupancy, tolerance)[0]


def policy_and_unreached(occupancy: np.ndarray, tolerance: float = VISIT_TOLERANCE) -> tuple[np.ndarray, np.ndarray]:
    """``(policy_from_occupancy(occupancy, tolerance), unreached_states(occupancy, tolerance))`` from one pass over
    the masses: a solve's result carries both (the second for :func:`extract_policy`, every epoch)."""
    return _policy_of_masses(_proper_masses(occupancy), tolerance)


def policy_of_clipped(rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`policy_and_unreached` of ``rho = np.maximum(occupancy, 0.0)``, a program's reading of its solution:
    when ``rho`` is finite it is its own proper masses (the maximum with 0 again changes no bit), so they are not
    made again."""
    if np.logical_and.reduce(np.isfinite(rho), axis=None):
        return _policy_of_masses(rho, VISIT_TOLERANCE)
    return policy_and_unreached(rho)


def _policy_of_masses(rho: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`policy_and_unreached` of finite masses ``rho >= 0`` (what :func:`_proper_masses` returns)."""
    totals = np.add.reduce(rho, axis=1, keepdims=True)  # what rho.sum(axis=1, keepdims=True) calls, one call
    visited = totals > tolerance * rho.shape[1]
    divisor = np.where(visited, totals, 1.0)
    if tolerance >= 0:  # a visited state's total is then > 0: no 0/0 to silence (entering errstate costs more)
        policy = rho / divisor
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            policy = rho / divisor
    unreached = ~visited
    np.copyto(policy, 1.0 / rho.shape[1], where=unreached)  # uniform in the states without mass
    return policy, unreached.reshape(-1)


def _proper_masses(occupancy: Any) -> np.ndarray:
    """``occupancy`` as a new float array with NaN read as 0, infinities as the largest floats, and negative
    round-off clipped to 0. Occupancies pass here at every solve, so the ufuncs are called directly
    (``np.clip(a, 0.0, None)`` is ``np.maximum(a, 0.0)``), and ``nan_to_num``, which costs more than the rest, only
    when some entry is not finite (the result is the same either way)."""
    rho = np.asarray(occupancy, dtype=float)
    if not np.logical_and.reduce(np.isfinite(rho), axis=None):
        rho = np.nan_to_num(rho, nan=0.0)
    return np.maximum(rho, 0.0)


#: the rules for the policy in states the plan does not reach (see :func:`extract_policy`)
UNREACHED_FILLS = ("uniform", "safe", "reach", "reach-any")

#: relative tolerance on expected hitting times in the ``reach`` fill: an action replaces the current one only when it
#: shortens the expected time by more than this fraction, and actions within it of the minimum count as ties (the
#: sparse solves are accurate far beyond it on well-conditioned chains; it keeps round-off from making policy
#: iteration cycle or ties come out differently on equal kernels stored dense and sparse)
REACH_TOLERANCE = 1e-9
#: the most policy-iteration steps of the ``reach`` fill (it converges in a handful on the chains measured; hitting the
#: cap is reported in :attr:`ReachFill.converged`, with the last, proper, policy kept)
REACH_MAX_ITERATIONS = 1000
#: a pair is per-step feasible for the ``reach`` fill when ``g_m(c(s,a))`` is at most this for every constraint m
#: (absolute, the solvers' feasibility tolerance: a cost vector on a constraint's boundary, such as the queue's
#: service 0.6 with ``c1 = -10a + 6 = 0``, must not be lost to the round-off of evaluating g there)
PER_STEP_TOLERANCE = 1e-9


def unreached_states(occupancy: np.ndarray, tolerance: float = VISIT_TOLERANCE) -> np.ndarray:
    """Boolean mask (S,) of the states with ``Σ_b ρ(s,b) <= tolerance · A`` (as :func:`policy_from_occupancy` decides;
    :func:`policy_and_unreached` gives both)."""
    rho = _proper_masses(occupancy)
    return ~(np.add.reduce(rho, axis=1) > tolerance * rho.shape[1])


def check_unreached(unreached: Any, error: type[Exception] | None = None) -> str:
    """``unreached`` if it names a fill in :data:`UNREACHED_FILLS`, else ``error`` (default CurloptError)."""
    if not isinstance(unreached, str) or unreached not in UNREACHED_FILLS:
        from ..errors import CurloptError

        raise (error or CurloptError)(
            f"unreached must be one of {', '.join(map(repr, UNREACHED_FILLS))}, got {unreached!r}."
        )
    return unreached


def per_step_feasible(model: Any, tolerance: float = PER_STEP_TOLERANCE) -> np.ndarray:
    """Which pairs are feasible *per step*: ``g_m(c(s,a)) <= tolerance`` for every constraint m.

    A chain that plays only such pairs keeps every long-run average feasible: its average cost ``ζ`` is a convex
    combination ``Σ ρ(s,a) c(s,a)`` of their cost vectors, and ``g_m`` is convex, so by Jensen's inequality
    ``g_m(ζ) <= Σ ρ(s,a) g_m(c(s,a)) <= 0``. The ``reach`` fill (:func:`reach_fill`) restricts itself to them.

    Parameters
    ----------
    model : CMDP
        Supplies the costs ``c`` (d, S, A) and the constraints ``g_m`` (a model without constraints has every
        pair feasible).
    tolerance : float, default PER_STEP_TOLERANCE

    Returns
    -------
    ndarray of bool, shape (S, A)
        True for a per-step feasible pair.
    """
    costs = np.asarray(model.costs, dtype=float)                        # (d, S, A)
    d, S, A = costs.shape
    points = costs.reshape(d, S * A).T                                   # one cost vector c(s,a) per row
    feasible = np.ones(S * A, dtype=bool)
    for constraint in tuple(getattr(model, "constraints", ()) or ()):
        pieces = constraint.affine_pieces()
        if pieces is not None:
            # a convex piecewise-affine g is max_j (W_j·y + c_j): every pair at once
            matrix, offset = (np.asarray(part, dtype=float) for part in pieces)
            values = (points @ matrix.T + offset).max(axis=1)
        else:
            # any other convex g through its own value, once per distinct cost vector (models repeat them)
            distinct, inverse = np.unique(points, axis=0, return_inverse=True)
            values = np.array([float(constraint.value(point)) for point in distinct])[inverse.reshape(-1)]
        # NaN (a g undefined at some cost vector) counts as infeasible
        feasible &= values <= tolerance
    return feasible.reshape(S, A)


@dataclass(frozen=True)
class ReachFill:
    """What the ``reach`` fill computed (:func:`reach_fill`).

    Attributes
    ----------
    greedy : ndarray of bool, shape (S, A)
        The candidate action(s) minimising the expected number of steps to the support, in every unreached
        state from which the support is reached with certainty; all False in the other rows (the support's
        states and the stranded ones).
    steps : ndarray, shape (S,)
        The minimal expected number of steps to the support by candidate actions: 0 on the support, ``inf``
        in the stranded states (when not ``converged``: those of the last policy solved, an upper bound,
        ``inf`` if they overflowed).
    stranded : ndarray of bool, shape (S,)
        The unreached states from which no policy, even over all actions, reaches the support with
        probability 1 (every action risks, at some point, a state from which the support cannot be reached
        at all): the fill leaves them to the caller (:func:`extract_policy` plays uniform there and counts
        them).
    no_feasible : ndarray of bool, shape (S,)
        The unreached states without a per-step feasible action: all their actions were candidates.
    widened : ndarray of bool, shape (S,)
        The unreached states where the way back needs an action that is not per-step feasible: none of their
        feasible actions keeps the support reachable with certainty and moves closer to it with positive
        probability, closeness counted first in the infeasible actions still to play, then in steps (see
        :func:`reach_fill`). All their actions were candidates.
    iterations : int
        Policy-iteration steps (sparse solves) taken.
    converged : bool
        False when policy iteration stopped before no action improved: after :data:`REACH_MAX_ITERATIONS`
        steps, or because a solve's hitting times overflowed (a chain where some state needs more than
        ~10^308 steps on average). ``greedy`` then holds one action per state, the last policy of the
        iteration, which still reaches the support with certainty (every policy the iteration visits does).
    """

    greedy: np.ndarray
    steps: np.ndarray
    stranded: np.ndarray
    no_feasible: np.ndarray
    widened: np.ndarray
    iterations: int
    converged: bool


def _unreached_rows(kernel: Any, unreached: np.ndarray, n_actions: int | None) -> tuple[sp.csr_array, int, int]:
    """The kernel's rows ``(s, a)`` of the unreached states, as a CSR (U·A, S) matrix (zeros dropped), with S and A.

    Only those rows are read (and checked: finite, in [0, 1], summing to 1), so a dense (S, A, S) kernel is
    never converted whole.
    """
    from ..errors import CurloptError

    states = np.flatnonzero(unreached)
    if sp.issparse(kernel):
        rows_total, S = kernel.shape
        A = rows_total // S if S else 0
        if S != unreached.size or A < 1 or A * S != rows_total or (n_actions is not None and A != n_actions):
            raise CurloptError(f"the reach fill's kernel must be a sparse (S·A, S) matrix with S = {unreached.size}"
                               f"{'' if n_actions is None else f' and A = {n_actions}'}, got shape {kernel.shape}.")
        picked = (states[:, None] * A + np.arange(A)).ravel()
        rows = sp.csr_array(sp.csr_array(kernel)[picked], dtype=float)   # row slicing copies: the caller's matrix is untouched
    else:
        dense = np.asarray(kernel, dtype=float)
        if dense.ndim != 3 or dense.shape[0] != unreached.size or dense.shape[2] != unreached.size or (
                n_actions is not None and dense.shape[1] != n_actions):
            raise CurloptError(f"the reach fill's kernel must be a dense (S, A, S) array with S = {unreached.size}"
                               f"{'' if n_actions is None else f' and A = {n_actions}'}, got shape {dense.shape}.")
        S, A = dense.shape[0], dense.shape[1]
        rows = sp.csr_array(dense[states].reshape(states.size * A, S))
    rows.sum_duplicates()
    if rows.data.size and not (np.all(np.isfinite(rows.data)) and rows.data.min() >= 0 and rows.data.max() <= 1):
        raise CurloptError("the reach fill's kernel has entries outside [0, 1] (or not finite) in an unreached state.")
    rows.eliminate_zeros()
    sums = np.asarray(rows.sum(axis=1)).ravel()
    off = np.abs(sums - 1.0) > KERNEL_TOLERANCE
    if np.any(off):
        first = int(np.argmax(off))
        raise CurloptError(f"the reach fill's kernel is not a transition kernel: row (s, a) = ({int(states[first // A])},"
                           f" {first % A}) sums to {float(sums[first])!r}.")
    return rows, S, A


@dataclass(frozen=True)
class _Graph:
    """The unreached states' rows as the edges of a graph: nodes 0..n-1 the unreached states, n the whole support
    (one target node, h = 0 there). Entry i of the CSR rows is the edge ``entry_state[i] -> entry_next[i]`` of
    the pair (row) ``entry_row[i]``, with probability ``values[i]``."""

    n: int
    A: int
    indptr: np.ndarray
    entry_row: np.ndarray
    entry_state: np.ndarray
    entry_next: np.ndarray
    values: np.ndarray
    row_state: np.ndarray
    nonempty: np.ndarray

    @classmethod
    def of(cls, rows: sp.csr_array, states: np.ndarray, S: int, A: int) -> _Graph:
        n = states.size
        node = np.full(S, n, dtype=np.int64)
        node[states] = np.arange(n)
        entry_row = np.repeat(np.arange(n * A, dtype=np.int64), np.diff(rows.indptr))
        return cls(n, A, rows.indptr, entry_row, entry_row // A, node[rows.indices], rows.data,
                   np.arange(n * A) // A, np.diff(rows.indptr) > 0)


def _almost_sure(graph: _Graph, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The nodes that reach the support with probability 1 by candidate pairs (``candidates``, (n·A,) bool).

    A backward search from the support over the positive-probability edges of the allowed pairs, repeated without
    the pairs that can lead to a node it did not find, until nothing changes (at most n rounds; one or two in
    practice). Returns ``alive`` (n+1,), the search's edge ``distance`` to the support per node, the ``allowed``
    pairs (n·A,) (candidates that cannot leave the alive nodes) and the entries ``used`` by them.
    """
    n, A = graph.n, graph.A
    alive = np.ones(n + 1, dtype=bool)
    while True:
        leaves = ~alive[graph.entry_next]
        allowed = (graph.nonempty & candidates & alive[graph.row_state]
                   & ~(np.bincount(graph.entry_row[leaves], minlength=n * A) > 0))
        used = allowed[graph.entry_row]
        backward = sp.csr_array((np.ones(int(used.sum())), (graph.entry_next[used], graph.entry_state[used])),
                                shape=(n + 1, n + 1))
        distance = csgraph.dijkstra(backward, directed=True, indices=n, unweighted=True)
        found = np.isfinite(distance)
        if np.array_equal(found, alive):
            return alive, distance, allowed, used
        alive = found


def _policy_iteration(graph: _Graph, alive_states: np.ndarray, allowed: np.ndarray,
                      action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]:
    """Policy iteration on the alive nodes from the proper policy ``action`` (n,), changed in place.

    Solves ``(I - P_π) h = 1`` (``scipy.sparse.linalg.spsolve``) and switches each state to an allowed action
    whose ``1 + P(·|s,a) h`` is smaller by more than :data:`REACH_TOLERANCE` (relative), until none is. Returns
    the table ``q`` (n·A,) of the last solve (inf for pairs not allowed), the hitting times per node (n+1,), the
    policy, the number of solves and whether it converged.
    """
    n, A, k = graph.n, graph.A, alive_states.size
    # The rows again, with each successor as its index among the alive states (0..k-1) or k for the support (a
    # disallowed row's successor outside both also lands there, and that row's q is set to inf after), so the
    # chosen rows, columns :k, are P_π and the whole matrix times (h, 0) is P h for every pair.
    compact = np.full(n + 1, k, dtype=np.int64)
    compact[alive_states] = np.arange(k)
    # (copies: sum_duplicates sorts in place, and the graph's arrays serve a second pass)
    pairs = sp.csr_array((graph.values.copy(), compact[graph.entry_next], graph.indptr.copy()), shape=(n * A, k + 1))
    pairs.sum_duplicates()
    identity = sp.identity(k, format="csc")
    first_rows = alive_states * A
    h_node = np.zeros(n + 1)
    h_node[alive_states] = np.inf   # until a solve gives them
    q = np.full(n * A, np.inf)
    iterations = 0
    while iterations < REACH_MAX_ITERATIONS:
        chain = pairs[first_rows + action[alive_states]][:, :k]
        h = np.atleast_1d(spsolve((identity - chain).tocsc(), np.ones(k)))
        iterations += 1
        if not np.all(np.isfinite(h)):
            # Hitting times beyond floating point (only the first policy can have them: each step shortens them):
            # keep that proper policy, reported by converged=False, with steps inf.
            return q, h_node, action, iterations, False
        h_node[alive_states] = h
        q = np.where(allowed, 1.0 + pairs @ np.append(h, 0.0), np.inf)
        table = q.reshape(n, A)[alive_states]
        best = table.min(axis=1)
        improve = table[np.arange(k), action[alive_states]] > best * (1.0 + REACH_TOLERANCE)
        if not improve.any():
            return q, h_node, action, iterations, True
        action[alive_states[improve]] = table[improve].argmin(axis=1)
    return q, h_node, action, iterations, False


def _shortest_paths(graph: _Graph, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]:
    """The stochastic shortest path to the support by candidate pairs: ``(greedy (n, A), steps (n,), stranded (n,),
    iterations, converged)`` on the graph's nodes (see :func:`reach_fill`)."""
    n, A = graph.n, graph.A
    alive, distance, allowed, used = _almost_sure(graph, candidates)
    greedy = np.zeros((n, A), dtype=bool)
    stranded = ~alive[:n]
    steps = np.where(stranded, np.inf, 0.0)
    alive_states = np.flatnonzero(alive[:n])
    if alive_states.size == 0:
        return greedy, steps, stranded, 0, True
    # a proper first policy: the allowed action with the most probability of moving closer to the support
    closer = used & (distance[graph.entry_next] < distance[graph.entry_state])
    progress = np.where(allowed, np.bincount(graph.entry_row[closer], weights=graph.values[closer], minlength=n * A),
                        -1.0)
    action = progress.reshape(n, A).argmax(axis=1)
    q, h_node, action, iterations, converged = _policy_iteration(graph, alive_states, allowed, action)
    if converged:
        table = q.reshape(n, A)[alive_states]
        best = table.min(axis=1)
        greedy[alive_states] = table <= (best * (1.0 + REACH_TOLERANCE))[:, None]
        steps[alive_states] = best
    else:
        greedy[alive_states, action[alive_states]] = True
        steps[alive_states] = h_node[alive_states]
    return greedy, steps, stranded, iterations, converged


def _widened(graph: _Graph, candidates: np.ndarray) -> np.ndarray:
    """The nodes (n,) whose way back needs an action outside ``candidates`` (n·A,): all their actions are then
    candidates.

    Over all actions, the almost-sure search gives the alive states and the allowed pairs (those that keep the
    support reachable with certainty). ``D`` is the shortest distance to the support over the allowed pairs'
    edges, an edge of a candidate pair weighing 1 and one of another pair ``n + 2`` (more than any path of
    candidate edges): the fewest non-candidate actions on a way back first, then its length. A state is
    widened when it is alive and none of its candidate pairs is allowed with a successor of smaller ``D``.
    Then every alive state has a candidate (after widening) allowed pair that moves to a smaller ``D`` with
    positive probability, so playing those reaches the support with certainty: the widened candidates strand
    no state that all actions bring back, and the shortest path over them has the same stranded states as
    over all actions.
    """
    n, A = graph.n, graph.A
    alive, _, _, used = _almost_sure(graph, np.ones(n * A, dtype=bool))
    weight = np.where(candidates[graph.entry_row], 1.0, n + 2.0)[used]
    source, target = graph.entry_next[used], graph.entry_state[used]
    # one edge per (successor, state): the lightest (a CSR matrix would add up duplicate entries)
    order = np.lexsort((weight, target, source))
    source, target, weight = source[order], target[order], weight[order]
    first = np.ones(source.size, dtype=bool)
    first[1:] = (source[1:] != source[:-1]) | (target[1:] != target[:-1])
    backward = sp.csr_array((weight[first], (source[first], target[first])), shape=(n + 1, n + 1))
    distance = csgraph.dijkstra(backward, directed=True, indices=n)
    progress = used & candidates[graph.entry_row] & (distance[graph.entry_next] < distance[graph.entry_state])
    moves = np.bincount(graph.entry_state[progress], minlength=n) > 0
    return alive[:n] & ~candidates.reshape(n, A).all(axis=1) & ~moves


def reach_fill(kernel: Any, reached: np.ndarray, n_actions: int | None = None,
               feasible: np.ndarray | None = None) -> ReachFill:
    """The per-step feasible actions that reach the support ``reached`` in the fewest expected steps.

    A stochastic shortest path with unit step costs, target the support: ``h(s) = 0`` on it and elsewhere
    ``h(s) = min_a [1 + Σ_{s'} P(s'|s,a) h(s')]`` over the state's *candidate* actions, its per-step feasible
    ones (``feasible``: ``g_m(c(s,a)) <= 0`` for every m, :func:`per_step_feasible`). Since each ``g_m`` is
    convex, a chain that plays only such actions keeps every long-run average feasible (Jensen:
    ``g_m(Σ ρ c) <= Σ ρ g_m(c) <= 0``), so the way back to the plan does not spend the constraints' budget.
    All actions are candidates in a state without a feasible action (``no_feasible``), and in a state where
    the way back needs an infeasible one (``widened``): none of its feasible actions keeps the support
    reachable with certainty and moves closer to it with positive probability, closeness counted first in
    the infeasible actions still to play, then in steps. So a state whose feasible actions only stay put is
    widened, but not the states whose way back runs through it. Solved on the sparse rows of the unreached
    states only:

    1. the states that reach the support with probability 1 by candidate actions: a backward search from the
       support over the positive-probability edges, repeated without the actions that can lead to a state
       it did not find, until nothing changes (those it never finds, even over all actions, are *stranded*);
    2. a proper first policy: in each such state, of the actions with a successor closer to the support
       (in edges, from the search), the one with the most probability of moving closer;
    3. policy iteration: solve ``(I - P_π) h = 1`` on those states (``scipy.sparse.linalg.spsolve``), switch
       each state to an action whose ``1 + P(·|s,a) h`` is smaller by more than :data:`REACH_TOLERANCE`
       (relative), until none is. Every policy it visits reaches the support with certainty, so each solve
       is non-singular. A banded kernel of 10,000 states and 16 actions takes about a tenth of a second.

    Parameters
    ----------
    kernel : scipy sparse matrix, shape (S·A, S), or ndarray, shape (S, A, S)
        Row ``s·A + a`` (or ``kernel[s, a]``) is ``P(·|s,a)``. Only the rows of the unreached states are
        read; they must be distributions.
    reached : array_like of bool, shape (S,)
        The support: the states with planned mass.
    n_actions : int, optional
        A, checked against the kernel's shape when given.
    feasible : array_like of bool, shape (S, A), optional
        The per-step feasible pairs; default every pair (the shortest path over all actions).

    Returns
    -------
    ReachFill

    Raises
    ------
    CurloptError
        For a kernel or ``feasible`` of the wrong shape, or a kernel whose rows in an unreached state are
        not distributions.
    """
    reached = np.asarray(reached, dtype=bool).reshape(-1)
    rows, S, A = _unreached_rows(kernel, ~reached, n_actions)
    states = np.flatnonzero(~reached)
    candidates = _candidates(feasible, states, S, A)
    no_feasible = ~candidates.any(axis=1)
    candidates[no_feasible] = True
    graph = _Graph.of(rows, states, S, A)
    widened = np.zeros(states.size, dtype=bool) if candidates.all() else _widened(graph, candidates.reshape(-1))
    candidates[widened] = True
    greedy, steps, stranded, iterations, converged = _shortest_paths(graph, candidates.reshape(-1))
    out = {"greedy": np.zeros((S, A), dtype=bool), "steps": np.zeros(S)}
    out["greedy"][states], out["steps"][states] = greedy, steps
    for name, flag in (("stranded", stranded), ("no_feasible", no_feasible), ("widened", widened)):
        out[name] = np.zeros(S, dtype=bool)
        out[name][states] = flag
    return ReachFill(**out, iterations=iterations, converged=converged)


def _candidates(feasible: Any, states: np.ndarray, S: int, A: int) -> np.ndarray:
    """The rows of ``feasible`` (S, A) for ``states``, as bool (all True when ``feasible`` is None)."""
    if feasible is None:
        return np.ones((states.size, A), dtype=bool)
    table = np.asarray(feasible)
    if table.shape != (S, A) or table.dtype != bool:
        from ..errors import CurloptError

        raise CurloptError(f"the reach fill's feasible pairs must be a boolean (S, A) = ({S}, {A}) array, got"
                           f" {table.dtype} of shape {table.shape}.")
    return table[states].copy()


def _safe_rows(policy: np.ndarray, mask: np.ndarray, model: Any, occupancy: np.ndarray, costs: Any) -> None:
    """The ``safe`` fill, in place: uniform over the actions with the least ``max_m ∇g_m(ζ_plan)·c(s,a)`` in the
    rows of ``mask`` (scores within ``1e-12`` times the largest absolute score of the minimum tie)."""
    constraints = tuple(getattr(model, "constraints", ()) or ())
    cost_table = np.asarray(model.costs, dtype=float)                     # (d, S, A)
    if costs is None:
        rho = np.clip(np.nan_to_num(np.asarray(occupancy, dtype=float), nan=0.0), 0.0, None)
        costs = np.einsum("isa,sa->i", cost_table, rho)
    zeta = np.asarray(costs, dtype=float).reshape(-1)
    gradients = np.array([np.asarray(g.gradient(zeta), dtype=float).reshape(-1) for g in constraints])  # (M, d)
    scores = np.einsum("mi,isa->msa", gradients, cost_table[:, mask, :]).max(axis=0)  # (unreached, A)
    finite = np.isfinite(scores)
    scale = float(np.abs(scores[finite]).max()) if finite.any() else 0.0
    best = np.where(finite, scores, np.inf).min(axis=1, keepdims=True)
    tied = finite & (scores <= best + 1e-12 * scale)
    # A row without any finite score (a gradient that is not finite) falls back to uniform.
    tied[~tied.any(axis=1)] = True
    policy[mask] = tied / tied.sum(axis=1, keepdims=True)


def _reach_rows(policy: np.ndarray, mask: np.ndarray, model: Any, kernel: Any, feasible: np.ndarray | None,
                unreached: str) -> ReachFill | None:
    """The ``reach`` or ``reach-any`` fill, in place in the rows of ``mask`` (uniform in the stranded ones); its
    :class:`ReachFill`."""
    if kernel is None:
        from ..errors import CurloptError

        raise CurloptError(f"unreached={unreached!r} needs the kernel the plan was made on (kernel=, a sparse (S·A, S)"
                           " matrix or a dense (S, A, S) array).")
    if not mask.any():
        return None
    if unreached == "reach-any":
        feasible = None      # every action a candidate, whatever it costs
    elif feasible is None and model is not None and tuple(getattr(model, "constraints", ()) or ()):
        feasible = per_step_feasible(model)
    fill = reach_fill(kernel, ~mask, policy.shape[1], feasible)
    targets = mask & ~fill.stranded
    policy[targets] = fill.greedy[targets] / fill.greedy[targets].sum(axis=1, keepdims=True)
    policy[fill.stranded] = 1.0 / policy.shape[1]
    return fill


def _uniform_rule(occupancy: np.ndarray, tolerance: float, policy: np.ndarray | None,
                  mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``policy_and_unreached(occupancy, tolerance)`` as new arrays, from the caller's ``policy`` and ``mask`` when it
    has them (:func:`extract_policy`)."""
    if policy is None:
        return policy_and_unreached(occupancy, tolerance)
    return np.array(policy), unreached_states(occupancy, tolerance) if mask is None else np.array(mask)


def extract_policy(occupancy: np.ndarray, model: Any, unreached: str = "uniform", costs: Any = None,
                   tolerance: float = VISIT_TOLERANCE, uniform_policy: np.ndarray | None = None,
                   kernel: Any = None, full_output: bool = False, feasible: np.ndarray | None = None,
                   unreached_mask: np.ndarray | None = None) -> Any:
    """The policy of an occupancy, with a chosen rule for the states it does not reach.

    Where a state has planned mass (``Σ_b ρ(s,b) > tolerance · A``) the policy is ``π(a|s) = ρ(s,a) / Σ_b ρ(s,b)``.
    Elsewhere the ratio is 0/0 and the paper says nothing; ``unreached`` chooses:

    ``uniform``
        the uniform distribution over actions (exactly :func:`policy_from_occupancy`);
    ``safe``
        uniform over the action(s) that least increase the constraints, to first order at the plan: the
        smallest score ``max_m ∇g_m(ζ_plan)·c(s,a)``, with ``ζ_plan`` the plan's average costs (for a linear
        ``g_m(ζ) = w_m·ζ - b_m``, ``max_m w_m·c(s,a)``); scores within ``1e-12`` times the largest absolute
        score of the minimum tie. A model without constraints: uniform.
    ``reach``
        uniform over the per-step feasible action(s) (``g_m(c(s,a)) <= 0`` for every m) that minimise the
        expected number of steps back to the plan's support under ``kernel``, the kernel the plan was made on
        (:func:`reach_fill`). The average-reward program is indifferent to what happens outside its support,
        so on a chain that drifts away from it under the uniform fill (a long queue filling up) nothing brings
        the agent back; this fill does, as fast as the kernel allows without spending the constraints (by
        convexity, a chain playing only per-step feasible actions has feasible long-run averages). All
        actions are candidates in a state without a feasible one, or where the way back needs an infeasible
        one; states no policy brings back are played uniform (each counted in the :class:`ReachFill`). A
        model without constraints (or ``model=None``): every action is a candidate.
    ``reach-any``
        ``reach`` with every action a candidate whatever it costs: the fastest way back, which may break a
        constraint the plan keeps (the more so the fewer states the plan reaches).

    Parameters
    ----------
    occupancy : ndarray, shape (S, A)
        The plan's ρ (tiny negative round-off is clipped to 0).
    model : CMDP or None
        Supplies the costs ``c`` (d, S, A) and the constraints ``g_m`` (``None`` only for ``uniform``,
        ``reach`` and ``reach-any``: no constraints).
    unreached : {"uniform", "safe", "reach", "reach-any"}, default "uniform"
    costs : array_like, shape (d,), optional
        ``ζ_plan`` for ``safe``; default ``Σ_{s,a} ρ(s,a) c(s,a)`` from ``occupancy``.
    tolerance : float, default VISIT_TOLERANCE
        A state is unreached when its total mass is at most ``tolerance · A``.
    uniform_policy : ndarray, shape (S, A), optional
        ``policy_from_occupancy(occupancy, tolerance)`` when the caller has it (a solve result's ``policy``).
    kernel : scipy sparse matrix (S·A, S) or ndarray (S, A, S), optional
        The kernel the plan was made on; required by ``reach`` and ``reach-any`` (a learning agent's
        estimate, never the model's true kernel unless the plan was made on it), ignored by the other fills.
    full_output : bool, default False
        Also return the :class:`ReachFill` (None for the other fills, or when no state is unreached).
    feasible : ndarray of bool, shape (S, A), optional
        For ``reach``: :func:`per_step_feasible` of ``model`` when the caller has it (the agents keep it).
    unreached_mask : ndarray of bool, shape (S,), optional
        ``unreached_states(occupancy, tolerance)`` when the caller has it (a solve result's ``unreached``, from
        :func:`policy_and_unreached`); used with ``uniform_policy`` only.

    Returns
    -------
    policy : ndarray, shape (S, A)
        Rows sum to 1.
    unreached_mask : ndarray of bool, shape (S,)
        The states filled by the rule.
    reach : ReachFill or None
        Only with ``full_output``.

    Raises
    ------
    CurloptError
        For an unknown ``unreached``, ``reach`` or ``reach-any`` without a ``kernel``, or a kernel
        :func:`reach_fill` refuses.
    """
    check_unreached(unreached)
    policy, mask = _uniform_rule(occupancy, tolerance, uniform_policy, unreached_mask)
    fill = None
    if unreached in ("reach", "reach-any"):
        fill = _reach_rows(policy, mask, model, kernel, feasible, unreached)
    elif unreached == "safe" and tuple(getattr(model, "constraints", ()) or ()) and mask.any():
        _safe_rows(policy, mask, model, occupancy, costs)
    return (policy, mask, fill) if full_output else (policy, mask)

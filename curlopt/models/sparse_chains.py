"""Graph searches on chains with scipy.sparse.csgraph: recurrent classes, and the ergodicity of a sparse kernel.

Imported by :mod:`curlopt.models.chains` only when needed — a sparse kernel or a non-ergodic model
(``scipy.sparse.csgraph`` costs about 0.3 s to import, which every run on a small dense model would otherwise pay).

Ergodicity follows the same two steps as the dense check (:mod:`curlopt.diagnostics` explains them), on sparse
graphs. The exact search needs fewer targets here: a set C closed under some policy is closed under the edges
possible under *every* action, so C is a union of strongly connected components of that graph with no edge
leaving it; its complement then holds a whole *source* component (one no edge enters). So the model is ergodic iff,
for one state t of each source component, no non-empty set avoiding t is closed under some policy. That largest
set is found by deleting, round after round, the states all of whose actions may reach a deleted state — each
round touching only the rows that lead into the states deleted in the round before.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .ergodicity import EXACT_CHECK, SUFFICIENT_CHECK, UNDECIDED_CHECK, ErgodicityCheck

__all__ = ["chain_classes", "sparse_ergodicity"]


def chain_classes(adjacency: np.ndarray | sp.sparray | sp.spmatrix) -> tuple[list[list[int]], list[int]]:
    """Recurrent classes and transient states of a chain given by its (S, S) support (dense or scipy sparse).

    A strongly connected component is a recurrent class iff no edge leaves it.
    """
    count, labels = connected_components(sp.csr_array(adjacency), directed=True, connection="strong")
    sources, targets = sp.coo_array(adjacency).coords if sp.issparse(adjacency) else np.nonzero(adjacency)
    leaving = np.zeros(count, dtype=bool)
    leaving[labels[sources][labels[sources] != labels[targets]]] = True
    recurrent = [np.flatnonzero(labels == c).tolist() for c in range(count) if not leaving[c]]
    recurrent.sort()
    transient = np.flatnonzero(leaving[labels]).tolist()
    return recurrent, transient


def _strongly_connected(graph: sp.csr_array) -> bool:
    count, _ = connected_components(graph, directed=True, connection="strong")
    return count == 1


def sparse_ergodicity(kernel: sp.sparray, n_states: int, n_actions: int, max_rounds: int) -> ErgodicityCheck:
    """:func:`curlopt.models.chains.check_ergodicity` for a sparse kernel (S·A, S), at most ``max_rounds`` rounds."""
    matrix = sp.csr_array(kernel)
    # 1 for each transition (> 0), in fresh arrays: the model's own are read-only
    support = sp.csr_array(((matrix.data > 0).astype(np.int64), matrix.indices.copy(), matrix.indptr.copy()),
                           shape=matrix.shape)
    support.eliminate_zeros()
    by_state = sp.csr_array((np.ones(n_states * n_actions, dtype=np.int64),
                             (np.repeat(np.arange(n_states), n_actions), np.arange(n_states * n_actions))),
                            shape=(n_states, n_states * n_actions))
    actions_per_edge = sp.csr_array(by_state @ support)  # (S, S): how many actions allow the move s -> s'
    communicating = _strongly_connected(actions_per_edge)
    every = sp.csr_array(actions_per_edge == n_actions)
    if _strongly_connected(every):
        return ErgodicityCheck(True, communicating, SUFFICIENT_CHECK)
    predecessors = sp.csc_array(support)  # column s' lists the rows (s, a) that may move to s'
    rounds = 0
    for target in _source_representatives(every):
        inside, stays, used = _closed_set_avoiding(support, predecessors, target, n_states, n_actions,
                                                   max_rounds - rounds)
        if inside is None or stays is None:  # both or neither
            return ErgodicityCheck(None, communicating, UNDECIDED_CHECK)
        rounds += used
        if inside.any():
            policy = np.where(inside, np.argmax(stays, axis=1), 0)
            chain = support[np.arange(n_states) * n_actions + policy]
            recurrent, transient = chain_classes(sp.csr_array(chain))
            return ErgodicityCheck(False, communicating, EXACT_CHECK, tuple(int(a) for a in policy), recurrent,
                                   transient)
    return ErgodicityCheck(True, communicating, EXACT_CHECK)


def _source_representatives(graph: sp.csr_array) -> list[int]:
    """The smallest state of each strongly connected component of ``graph`` that no edge from outside enters."""
    count, labels = connected_components(graph, directed=True, connection="strong")
    coords = sp.coo_array(graph).coords
    entered = np.zeros(count, dtype=bool)
    crossing = labels[coords[0]] != labels[coords[1]]
    entered[labels[coords[1]][crossing]] = True
    first = np.full(count, -1)
    first[labels[::-1]] = np.arange(labels.size)[::-1]  # the last write wins: the smallest state of each
    return sorted(int(first[c]) for c in range(count) if not entered[c])


def _closed_set_avoiding(support: sp.csr_array, predecessors: sp.csc_array, target: int, n_states: int,
                         n_actions: int, max_rounds: int) -> tuple[np.ndarray | None, np.ndarray | None, int]:
    """The largest set avoiding ``target`` closed under some policy: ``(inside, stays, rounds)``.

    ``inside`` (S,) marks the set, ``stays`` (S, A) the actions whose successors all lie in it; ``(None, None,
    rounds)`` when ``max_rounds`` rounds did not finish the deletion.
    """
    inside = np.ones(n_states, dtype=bool)
    leaves = np.zeros(n_states * n_actions, dtype=bool)  # the row (s, a) may reach a deleted state
    staying = np.full(n_states, n_actions)  # actions of each state that still stay inside
    deleted = np.array([target])
    rounds = 0
    while deleted.size:
        if rounds >= max_rounds:
            return None, None, rounds
        rounds += 1
        inside[deleted] = False
        rows = np.unique(np.concatenate([predecessors.indices[predecessors.indptr[t]:predecessors.indptr[t + 1]]
                                         for t in deleted]))
        rows = rows[~leaves[rows]]
        leaves[rows] = True
        states, counts = np.unique(rows // n_actions, return_counts=True)
        staying[states] -= counts
        deleted = states[(staying[states] == 0) & inside[states]]
    return inside, ~leaves.reshape(n_states, n_actions), rounds

"""Hypothesis strategies: random ergodic CMDPs, counts, epoch times and tightness.

Importing this module imports Hypothesis (``pip install hypothesis``); nothing else
in curlopt does. Sizes, the objective family, the number of constraints and ε are
drawn by Hypothesis (so they shrink); the arrays are drawn by numpy from a
Hypothesis-drawn seed (so an example is reproducible from its printed seed and
stays cheap to generate) by :func:`curlopt.testing.cases.random_case`.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from .cases import UPDATE_FIELDS, Case, next_data, random_case, random_counts, random_kernel

__all__ = ["Case", "cases", "data_updates", "random_kernel", "random_counts", "epsilons", "UPDATE_FIELDS",
           "MAX_STATES", "MAX_ACTIONS"]

MAX_STATES = 6
MAX_ACTIONS = 4


def epsilons(max_value: float = 0.3) -> st.SearchStrategy[float]:
    """ε >= 0: exactly 0 sometimes, otherwise a float up to ``max_value``."""
    return st.one_of(st.just(0.0), st.floats(0.0, max_value, allow_nan=False, allow_infinity=False))


@st.composite
def cases(
    draw: st.DrawFn,
    objective: str = "linear",
    max_states: int = MAX_STATES,
    max_actions: int = MAX_ACTIONS,
    min_constraints: int = 0,
    max_constraints: int = 3,
    max_epsilon: float = 0.3,
    max_pieces: int = 1,
    sparse: bool = False,
) -> Case:
    """A random :class:`~curlopt.testing.cases.Case`.

    Parameters
    ----------
    objective : {"linear", "piecewise", "log"}
        Log cases have positive rewards (so ``λ_k > 0``: the log is finite on the whole polytope).
    max_states, max_actions : int
    min_constraints, max_constraints : int
    max_epsilon : float
    max_pieces : int, default 1
        Affine pieces per constraint (1..max_pieces) and of a piecewise objective (2..max(2, max_pieces)).
    sparse : bool, default False
        Draw a sparse case (2 to 4 successors per pair, see :func:`~curlopt.testing.cases.random_support`).
    """
    S = draw(st.integers(1, max_states), label="S")
    A = draw(st.integers(1, max_actions), label="A")
    K = draw(st.integers(1, 3), label="K")
    d = draw(st.integers(1, 3), label="d")
    M = draw(st.integers(min_constraints, max_constraints), label="M")
    epsilon = draw(epsilons(max_epsilon), label="epsilon")
    successors = draw(st.integers(2, 4), label="successors") if sparse else None
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    return random_case(np.random.default_rng(seed), S, A, K, d, M, epsilon, objective, max_pieces, seed, successors)


@st.composite
def data_updates(draw: st.DrawFn, case: Case, kind: str, steps: int = 3) -> list[tuple[frozenset[str], Case]]:
    """A sequence of ``steps`` new data sets for ``case``'s model, for the ``kind`` program's ``update``.

    Each step changes a random non-empty subset of the program's fields (occupancy:
    kernel, ε; optimistic and box-optimistic: counts, t_e, ε); unchanged fields keep their
    previous value, as ``program.update`` does. Returns a list of ``(changed fields, Case)``.
    """
    seed = draw(st.integers(0, 2**32 - 1), label="update seed")
    rng = np.random.default_rng(seed)
    out = []
    current = case
    for _ in range(steps):
        fields = draw(st.sets(st.sampled_from(UPDATE_FIELDS[kind]), min_size=1), label="changed fields")
        epsilon = draw(epsilons(0.5), label="new epsilon") if "epsilon" in fields else None
        current = next_data(rng, current, fields, epsilon)
        out.append((frozenset(fields), current))
    return out


"""Hypothesis strategies: random ergodic CMDPs, counts, epoch times and tightness.

Sizes, the objective family, the number of constraints and ε are drawn by
Hypothesis (so they shrink); the arrays are drawn by numpy from a Hypothesis-drawn
seed (so an example is reproducible from its printed seed and stays cheap to
generate).

A :class:`Case` holds the raw data (arrays and utility parameters) and builds
both the curlopt model (:meth:`Case.model`) and the reference descriptions
(:meth:`Case.reference_objective`, :attr:`Case.constraint_pieces`) from them, so
the reference never reads anything back from curlopt.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from hypothesis import strategies as st

from reference import LinearObjective, LogObjective

__all__ = ["Case", "cases", "data_updates", "random_kernel", "random_counts", "epsilons", "UPDATE_FIELDS"]

MAX_STATES = 6
MAX_ACTIONS = 4


@dataclass(frozen=True)
class Case:
    """One random problem instance.

    Attributes
    ----------
    kernel : (S, A, S)
        The transition kernel of the occupancy program (Dirichlet rows, full support).
    rewards : (K, S, A)
    costs : (d, S, A)
    objective_kind : "linear" or "log"
    objective_weights : (K,)
    objective_shift : float
        ``offset`` of a linear objective, ``shift`` of a log one.
    constraint_pieces : list of (W (J, d), b (J,))
        ``g_m(ζ) = max_j (W_j·ζ - b_j)``; here always J = 1 (linear constraints).
    counts : (S, A, S)
        Transition counts for the optimistic program (non-negative integers).
    time : int
        Epoch start ``t_e >= 1``.
    epsilon : float
        Tightness ε >= 0.
    seed : int
        The numpy seed the arrays came from (shown in failure reports).
    """

    kernel: np.ndarray
    rewards: np.ndarray
    costs: np.ndarray
    objective_kind: str
    objective_weights: np.ndarray
    objective_shift: float
    constraint_pieces: list = field(default_factory=list)
    counts: np.ndarray | None = None
    time: int = 1
    epsilon: float = 0.0
    seed: int = 0

    @property
    def n_states(self) -> int:
        return self.kernel.shape[0]

    @property
    def n_actions(self) -> int:
        return self.kernel.shape[1]

    def model(self):
        """The curlopt CMDP of this case (with the kernel; the optimistic program ignores it)."""
        from curlopt import CMDP, Linear, LinearBound, SumOfLogs

        if self.objective_kind == "linear":
            objective = Linear(self.objective_weights, offset=self.objective_shift)
        else:
            objective = SumOfLogs(weights=self.objective_weights, shift=self.objective_shift)
        constraints = [LinearBound(W[0], float(b[0])) for W, b in self.constraint_pieces]
        return CMDP(self.rewards, self.costs, objective, constraints, kernel=self.kernel, name=f"case-{self.seed}")

    def reference_objective(self):
        if self.objective_kind == "linear":
            return LinearObjective(np.asarray(self.objective_weights), float(self.objective_shift))
        return LogObjective(np.asarray(self.objective_weights), float(self.objective_shift))

    def with_data(self, **changes) -> "Case":
        return replace(self, **changes)

    def __repr__(self) -> str:  # short, so Hypothesis's falsifying-example line stays readable
        return (
            f"Case(seed={self.seed}, S={self.n_states}, A={self.n_actions}, K={self.rewards.shape[0]},"
            f" d={self.costs.shape[0]}, M={len(self.constraint_pieces)}, objective={self.objective_kind},"
            f" time={self.time}, epsilon={self.epsilon!r}, visits={None if self.counts is None else int(self.counts.sum())})"
        )


def random_kernel(rng: np.random.Generator, S: int, A: int) -> np.ndarray:
    """Dirichlet rows mixed with a little uniform mass: every entry >= 0.02/S, so every policy is ergodic."""
    concentration = rng.choice([0.3, 1.0, 5.0])
    rows = rng.dirichlet(np.full(S, concentration), size=(S, A))
    mix = rng.uniform(0.02, 0.3)
    kernel = (1.0 - mix) * rows + mix / S
    return kernel / kernel.sum(axis=2, keepdims=True)


def random_counts(rng: np.random.Generator, kernel: np.ndarray) -> np.ndarray:
    """Counts ``n(s,a,s')`` drawn from the kernel: some pairs unvisited, some few, some many visits.

    Many visits (hundreds to thousands) make ``β(s,a) < 2`` so that the L1 rows bind.
    """
    S, A, _ = kernel.shape
    counts = np.zeros((S, A, S), dtype=np.int64)
    for s in range(S):
        for a in range(A):
            kind = rng.choice(4, p=[0.2, 0.2, 0.3, 0.3])
            visits = (0, int(rng.integers(1, 10)), int(rng.integers(10, 300)), int(rng.integers(300, 20000)))[kind]
            counts[s, a] = rng.multinomial(visits, kernel[s, a])
    return counts


def epsilons(max_value: float = 0.3):
    """ε >= 0: exactly 0 sometimes, otherwise a float up to ``max_value``."""
    return st.one_of(st.just(0.0), st.floats(0.0, max_value, allow_nan=False, allow_infinity=False))


def _linear_constraints(rng, costs, M):
    """M random linear constraints ``w·ζ <= b``, with b spread over (and a bit beyond) the range of w·c(s,a).

    Bounds below the smallest per-pair cost make a constraint infeasible whatever
    the kernel; bounds inside the range are feasible or not depending on the kernel
    and ε — the tests read feasibility from the reference, never from here.
    """
    d = costs.shape[0]
    pieces = []
    for _ in range(M):
        w = rng.normal(size=d)
        signal = np.tensordot(w, costs, axes=1)  # (S, A)
        low, high = float(signal.min()), float(signal.max())
        width = max(high - low, 0.1)  # a constant signal (e.g. S = A = 1) still gets bounds on both sides
        u = rng.uniform(-0.1, 1.1)
        pieces.append((w.reshape(1, d), np.array([low + u * width])))
    return pieces


@st.composite
def cases(
    draw,
    objective: str = "linear",
    max_states: int = MAX_STATES,
    max_actions: int = MAX_ACTIONS,
    min_constraints: int = 0,
    max_constraints: int = 3,
    max_epsilon: float = 0.3,
):
    """A random :class:`Case` with ``objective`` "linear" or "log".

    Log cases have positive rewards (so ``λ_k > 0``: the log is finite on the whole polytope).
    """
    S = draw(st.integers(1, max_states), label="S")
    A = draw(st.integers(1, max_actions), label="A")
    K = draw(st.integers(1, 3), label="K")
    d = draw(st.integers(1, 3), label="d")
    M = draw(st.integers(min_constraints, max_constraints), label="M")
    epsilon = draw(epsilons(max_epsilon), label="epsilon")
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)

    kernel = random_kernel(rng, S, A)
    if objective == "linear":
        rewards = rng.uniform(-1.0, 1.0, size=(K, S, A))
        weights = rng.normal(size=K)
        shift = float(rng.uniform(-1.0, 1.0))
    elif objective == "log":
        rewards = rng.uniform(0.05, 1.0, size=(K, S, A))
        weights = rng.uniform(0.2, 2.0, size=K)
        shift = float(rng.choice([0.0, rng.uniform(0.0, 0.5)]))
    else:
        raise ValueError(objective)
    costs = rng.uniform(-1.0, 1.0, size=(d, S, A))
    pieces = _linear_constraints(rng, costs, M)
    counts = random_counts(rng, kernel)
    total = int(counts.sum())
    time = 1 if (total == 0 and rng.uniform() < 0.5) else total + 1 + int(rng.integers(0, 1000))
    return Case(kernel, rewards, costs, objective, weights, shift, pieces, counts, time, epsilon, seed)


#: the data each program's ``update`` takes
UPDATE_FIELDS = {"occupancy": ("kernel", "epsilon"), "optimistic": ("counts", "time", "epsilon")}


@st.composite
def data_updates(draw, case: Case, kind: str, steps: int = 3):
    """A sequence of ``steps`` new data sets for ``case``'s model, for the ``kind`` program's ``update``.

    Each step changes a random non-empty subset of the program's fields (occupancy:
    kernel, ε; optimistic: counts, t_e, ε); unchanged fields keep their previous
    value, as ``program.update`` does. Returns a list of ``(changed fields, Case)``.
    """
    seed = draw(st.integers(0, 2**32 - 1), label="update seed")
    rng = np.random.default_rng(seed)
    out = []
    current = case
    for _ in range(steps):
        fields = draw(st.sets(st.sampled_from(UPDATE_FIELDS[kind]), min_size=1), label="changed fields")
        changes = {}
        if "kernel" in fields:
            changes["kernel"] = random_kernel(rng, case.n_states, case.n_actions)
        if "counts" in fields:
            changes["counts"] = random_counts(rng, current.kernel)
        if "time" in fields:
            total = int(changes.get("counts", current.counts).sum())
            changes["time"] = total + 1 + int(rng.integers(0, 5000))
        if "epsilon" in fields:
            changes["epsilon"] = draw(epsilons(0.5), label="new epsilon")
        current = current.with_data(**changes)
        out.append((frozenset(fields), current))
    return out

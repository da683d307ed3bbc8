"""Random problem instances for the conformance suite and the property tests (numpy only).

A :class:`Case` holds raw data (arrays and utility parameters). It builds both the
curlopt side (:meth:`Case.model`, :meth:`Case.program`) and the reference side
(:meth:`Case.reference_objective`, :meth:`Case.polytope`, :meth:`Case.reference`)
from that data, so the reference never reads anything back from curlopt.

:func:`random_case` draws a case from a numpy generator; the Hypothesis strategies
of :mod:`curlopt.testing.strategies` draw the sizes (so they shrink) and a seed, and
call it. Nothing here imports Hypothesis.

A *sparse* case (``successors=k``) draws a support first: every pair (s, a) may move to s itself, to
(s + 1) mod S and to k - 2 other states (the supports of ``random_model(..., successors=k)``); its kernel
and counts are zero elsewhere, its model stores the kernel sparse, so every program is built on that support,
and its reference polytopes hold ``p = 0`` outside it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from . import reference as ref

if TYPE_CHECKING:  # curlopt is imported where a case builds its side, so that this module needs numpy only
    from ..models.cmdp import CMDP
    from ..programs.occupancy import OccupancyProgram
    from ..programs.optimistic import JointProgram
    from ..utilities.library import Utility

__all__ = [
    "Case", "random_case", "draw_case", "next_data", "random_kernel", "random_counts", "random_support", "PROGRAM_KINDS",
    "OBJECTIVE_KINDS", "UPDATE_FIELDS",
]

#: the programs a case builds: docs/math.md sections 2, 3 and 9 (UCRL-CMDP's box program)
PROGRAM_KINDS = ("occupancy", "optimistic", "box-optimistic")
#: ``linear`` f = w·λ + c; ``piecewise`` f = min_j (W_j·λ + c_j) (an epigraph); ``log`` f = Σ w_k ln(λ_k + shift)
OBJECTIVE_KINDS = ("linear", "piecewise", "log")
#: the data each program's ``update`` takes
UPDATE_FIELDS = {
    "occupancy": ("kernel", "epsilon"),
    "optimistic": ("counts", "time", "epsilon"),
    "box-optimistic": ("counts", "time", "epsilon"),
}


@dataclass(frozen=True)
class Case:
    """One random problem instance.

    Attributes
    ----------
    kernel : (S, A, S)
        The transition kernel of the occupancy program (Dirichlet rows, full support).
    rewards : (K, S, A)
    costs : (d, S, A)
    objective_kind : {"linear", "piecewise", "log"}
    objective_weights : (K,)
        Weights of a linear or log objective (unused by a piecewise one).
    objective_shift : float
        ``offset`` of a linear objective, ``shift`` of a log one.
    constraint_pieces : list of (W (J, d), b (J,))
        ``g_m(ζ) = max_j (W_j·ζ - b_j)``; J = 1 is a linear constraint.
    counts : (S, A, S)
        Transition counts for the optimistic programs (non-negative integers).
    time : int
        Epoch start ``t_e >= 1``.
    epsilon : float
        Tightness ε >= 0.
    seed : int
        The numpy seed the arrays came from (shown in failure reports).
    horizon : float
        The horizon T of the box program (>= 2, so an unvisited pair's box is the whole simplex).
    objective_pieces : (W (J, K), c (J,)), optional
        The pieces of a piecewise objective ``f(λ) = min_j (W_j·λ + c_j)``.
    support : (S, A, S) bool, optional
        A sparse case's support: the kernel is positive exactly there, the counts are zero elsewhere, and the
        model stores its kernel sparse (so every program is built on this support).
    """

    kernel: np.ndarray
    rewards: np.ndarray
    costs: np.ndarray
    objective_kind: str
    objective_weights: np.ndarray
    objective_shift: float
    constraint_pieces: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    counts: np.ndarray | None = None
    time: int = 1
    epsilon: float = 0.0
    seed: int = 0
    horizon: float = 1e4
    objective_pieces: tuple[np.ndarray, np.ndarray] | None = None
    support: np.ndarray | None = None

    @property
    def n_states(self) -> int:
        return self.kernel.shape[0]

    @property
    def n_actions(self) -> int:
        return self.kernel.shape[1]

    # -- the curlopt side ------------------------------------------------------
    def model(self) -> CMDP:
        """The curlopt CMDP of this case (with the kernel; the optimistic programs ignore it)."""
        from ..models.cmdp import CMDP
        from ..utilities.library import Linear, LinearBound, MaxOfLinear, MinOfLinear, SumOfLogs

        objective: Utility
        if self.objective_kind == "linear":
            objective = Linear(self.objective_weights, offset=self.objective_shift)
        elif self.objective_kind == "piecewise":
            objective = MinOfLinear(*self._pieces())
        else:
            objective = SumOfLogs(weights=self.objective_weights, shift=self.objective_shift)
        constraints = [LinearBound(W[0], float(b[0])) if W.shape[0] == 1 else MaxOfLinear(W, b)
                       for W, b in self.constraint_pieces]
        if self.support is not None:
            return CMDP(self.rewards, self.costs, objective, constraints, kernel=self._sparse(self.kernel),
                        name=f"case-{self.seed}", storage="sparse")
        return CMDP(self.rewards, self.costs, objective, constraints, kernel=self.kernel, name=f"case-{self.seed}")

    def _sparse(self, array: np.ndarray) -> Any:
        """``array`` (S, A, S) as a scipy CSR (S·A, S) matrix (the form a sparse case hands to curlopt)."""
        import scipy.sparse as sp

        S, A = self.n_states, self.n_actions
        return sp.csr_array(np.asarray(array, dtype=float).reshape(S * A, S))

    def program(self, kind: str) -> OccupancyProgram | JointProgram:
        """The curlopt program of ``kind`` (one of :data:`PROGRAM_KINDS`) on this case's data."""
        from ..programs.occupancy import OccupancyProgram
        from ..programs.optimistic import BoxOptimisticProgram, OptimisticProgram

        model = self.model()
        kernel, counts = self.kernel, self.counts
        if self.support is not None:
            kernel, counts = self._sparse(kernel), None if counts is None else self._sparse(counts)
        if kind == "occupancy":
            return OccupancyProgram(model, kernel=kernel, epsilon=self.epsilon)
        if kind == "optimistic":
            return OptimisticProgram(model, counts=counts, time=self.time, epsilon=self.epsilon)
        if kind == "box-optimistic":
            return BoxOptimisticProgram(model, self.horizon, counts=counts, time=self.time, epsilon=self.epsilon)
        raise ValueError(f"unknown program kind {kind!r}; one of {PROGRAM_KINDS}")

    def update_data(self, kind: str, fields: Iterable[str]) -> dict[str, Any]:
        """The keyword arguments of ``program.update`` that set ``fields`` to this case's values (a sparse case
        passes its kernel and counts as sparse matrices)."""
        out = {name: getattr(self, name) for name in fields if name in UPDATE_FIELDS[kind]}
        if self.support is not None:
            out.update({name: self._sparse(out[name]) for name in ("kernel", "counts") if name in out})
        return out

    # -- the reference side ----------------------------------------------------
    def reference_objective(self) -> ref.Objective:
        if self.objective_kind == "linear":
            return ref.LinearObjective(np.asarray(self.objective_weights), float(self.objective_shift))
        if self.objective_kind == "piecewise":
            return ref.PiecewiseObjective(*self._pieces())
        return ref.LogObjective(np.asarray(self.objective_weights), float(self.objective_shift))

    def polytope(self, kind: str) -> ref.Polytope:
        """The reference polytope of ``kind``, written independently of curlopt."""
        if kind == "occupancy":
            return ref.occupancy_polytope(self.kernel)
        if kind == "optimistic":
            return ref.optimistic_polytope(self.require_counts(), self.time, self.support)
        if kind == "box-optimistic":
            return ref.box_polytope(self.require_counts(), self.horizon, self.support)
        raise ValueError(f"unknown program kind {kind!r}; one of {PROGRAM_KINDS}")

    def reference(self, kind: str, with_constraints: bool = True) -> ref.Reference:
        """The reference optimum of the ``kind`` program (or of it without g rows)."""
        return ref.solve_reference(self.polytope(kind), self.rewards, self.costs, self.reference_objective(),
                                   self.constraint_pieces, self.epsilon, with_constraints=with_constraints)

    def tightness_margin(self, kind: str) -> float:
        """``ε_max - ε``: positive when the ε-tight program is feasible, negative when not (``inf`` if M = 0)."""
        return ref.max_tightness(self.polytope(kind), self.costs, self.constraint_pieces) - self.epsilon

    def _pieces(self) -> tuple[np.ndarray, np.ndarray]:
        if self.objective_pieces is None:
            raise ValueError(f"{self!r} has a piecewise objective but no objective_pieces.")
        return self.objective_pieces

    def require_counts(self) -> np.ndarray:
        """The counts, or a ValueError for a case without them (the optimistic programs' data)."""
        if self.counts is None:
            raise ValueError(f"{self!r} has no counts; the optimistic programs' references need them.")
        return self.counts

    def with_data(self, **changes: Any) -> Case:
        return replace(self, **changes)

    def __repr__(self) -> str:  # short, so a failure line (or Hypothesis's falsifying example) stays readable
        pieces = [W.shape[0] for W, _ in self.constraint_pieces]
        return (
            f"Case(seed={self.seed}, S={self.n_states}, A={self.n_actions}, K={self.rewards.shape[0]},"
            f" d={self.costs.shape[0]}, M={len(self.constraint_pieces)}, pieces={pieces},"
            f" objective={self.objective_kind}, time={self.time}, horizon={self.horizon:g}, epsilon={self.epsilon!r},"
            f" visits={None if self.counts is None else int(self.counts.sum())}"
            + ("" if self.support is None else f", support={int(self.support.sum())} of {self.support.size}") + ")"
        )


def random_kernel(rng: np.random.Generator, S: int, A: int, support: np.ndarray | None = None) -> np.ndarray:
    """Dirichlet rows mixed with a little uniform mass: every entry >= 0.02/S, so every policy is ergodic.

    With a ``support`` (boolean (S, A, S)), each row is drawn over its allowed successors only (the same
    mixture over them) and is zero elsewhere.
    """
    concentration = rng.choice([0.3, 1.0, 5.0])
    if support is not None:
        return _kernel_on_support(rng, concentration, support)
    rows = rng.dirichlet(np.full(S, concentration), size=(S, A))
    mix = rng.uniform(0.02, 0.3)
    kernel = (1.0 - mix) * rows + mix / S
    return kernel / kernel.sum(axis=2, keepdims=True)


def _kernel_on_support(rng: np.random.Generator, concentration: float, support: np.ndarray) -> np.ndarray:
    S, A, _ = support.shape
    kernel = np.zeros(support.shape)
    mix = rng.uniform(0.02, 0.3)
    for s in range(S):
        for a in range(A):
            allowed = np.flatnonzero(support[s, a])
            row = (1.0 - mix) * rng.dirichlet(np.full(allowed.size, concentration)) + mix / allowed.size
            kernel[s, a, allowed] = row / row.sum()
    return kernel


def random_support(rng: np.random.Generator, S: int, A: int, successors: int) -> np.ndarray:
    """A support (boolean (S, A, S)): every pair reaches s, (s + 1) mod S and ``successors - 2`` other states
    drawn without replacement (fewer when S is small); every policy's chain is then irreducible and aperiodic."""
    support = np.zeros((S, A, S), dtype=bool)
    for s in range(S):
        fixed = {s, (s + 1) % S}
        others = np.array([t for t in range(S) if t not in fixed], dtype=np.int64)
        for a in range(A):
            support[s, a, list(fixed)] = True
            extra = min(max(successors - 2, 0), others.size)
            support[s, a, rng.choice(others, size=extra, replace=False)] = True
    return support


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


def _constraints(rng: np.random.Generator, costs: np.ndarray, M: int,
                 max_pieces: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """M random constraints ``max_j (W_j·ζ - b_j) <= 0``, each b_j spread over (and a bit beyond) the range
    of ``W_j·c(s,a)``.

    Bounds below the smallest per-pair cost make a piece infeasible whatever the kernel; bounds inside
    the range are feasible or not depending on the kernel and ε — the reference decides, never this.
    With ``max_pieces = 1`` the draws are those of a plain linear constraint.
    """
    d = costs.shape[0]
    out = []
    for _ in range(M):
        J = 1 if max_pieces <= 1 else int(rng.integers(1, max_pieces + 1))
        W, b = np.empty((J, d)), np.empty(J)
        for j in range(J):
            W[j] = rng.normal(size=d)
            signal = np.tensordot(W[j], costs, axes=1)  # (S, A)
            low, high = float(signal.min()), float(signal.max())
            width = max(high - low, 0.1)  # a constant signal (e.g. S = A = 1) still gets bounds on both sides
            b[j] = low + rng.uniform(-0.1, 1.1) * width
        out.append((W, b))
    return out


def _objective(rng: np.random.Generator, objective: str, K: int, S: int, A: int,
               max_pieces: int) -> tuple[np.ndarray, np.ndarray, float, tuple[np.ndarray, np.ndarray] | None]:
    """``(rewards, weights, shift, pieces)`` of an ``objective`` family."""
    if objective == "linear":
        return rng.uniform(-1.0, 1.0, size=(K, S, A)), rng.normal(size=K), float(rng.uniform(-1.0, 1.0)), None
    if objective == "log":
        # positive rewards: λ_k > 0 on the whole polytope, so the log is finite everywhere
        rewards = rng.uniform(0.05, 1.0, size=(K, S, A))
        return rewards, rng.uniform(0.2, 2.0, size=K), float(rng.choice([0.0, rng.uniform(0.0, 0.5)])), None
    if objective == "piecewise":
        rewards = rng.uniform(-1.0, 1.0, size=(K, S, A))
        J = int(rng.integers(2, max(2, max_pieces) + 1))
        # offsets of the size of W·λ, so that several pieces compete for the minimum
        pieces = (rng.normal(size=(J, K)), rng.uniform(-0.5, 0.5, size=J))
        return rewards, np.zeros(K), 0.0, pieces
    raise ValueError(f"unknown objective kind {objective!r}; one of {OBJECTIVE_KINDS}")


def random_case(rng: np.random.Generator, S: int, A: int, K: int, d: int, M: int, epsilon: float,
                objective: str = "linear", max_pieces: int = 1, seed: int = 0, successors: int | None = None) -> Case:
    """A :class:`Case` of the given sizes with arrays drawn from ``rng``.

    Parameters
    ----------
    rng : numpy.random.Generator
    S, A, K, d, M : int
        States, actions, reward signals, cost signals and constraints.
    epsilon : float
        The tightness ε >= 0.
    objective : {"linear", "piecewise", "log"}
    max_pieces : int, default 1
        Constraints get 1..max_pieces affine pieces; a piecewise objective 2..max(2, max_pieces).
    seed : int
        Recorded in the case (for reports); ``rng`` should come from it.
    successors : int, optional
        Draw a sparse case: a support with this many successors per pair (see :func:`random_support`).
    """
    support = None if successors is None else random_support(rng, S, A, successors)
    kernel = random_kernel(rng, S, A, support)
    rewards, weights, shift, pieces = _objective(rng, objective, K, S, A, max_pieces)
    costs = rng.uniform(-1.0, 1.0, size=(d, S, A))
    constraints = _constraints(rng, costs, M, max_pieces)
    counts = random_counts(rng, kernel)
    total = int(counts.sum())
    time = 1 if (total == 0 and rng.uniform() < 0.5) else total + 1 + int(rng.integers(0, 1000))
    # T >= 2 makes ln(2 S² A T²) / 2 >= 1: an unvisited pair's box is the whole simplex, so the box
    # program without g rows is always feasible
    horizon = float(max(time, 2) + int(rng.integers(0, 10**5)))
    return Case(kernel, rewards, costs, objective, weights, shift, constraints, counts, time, float(epsilon), seed,
                horizon, pieces, support)


def draw_case(seed: int, objective: str = "linear", max_states: int = 4, max_actions: int = 3,
              min_constraints: int = 0, max_constraints: int = 3, max_pieces: int = 3,
              max_epsilon: float = 0.3, sparse: bool = False) -> Case:
    """A :class:`Case` with sizes and ε drawn from ``seed`` too (the conformance suite's draw, no Hypothesis).

    ``sparse`` draws a sparse case with 2 or 3 successors per pair (the dense draws are unchanged).
    """
    rng = np.random.default_rng(seed)
    S, A = int(rng.integers(1, max_states + 1)), int(rng.integers(1, max_actions + 1))
    K, d = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    M = int(rng.integers(min_constraints, max_constraints + 1))
    epsilon = 0.0 if rng.uniform() < 0.25 else float(rng.uniform(0.0, max_epsilon))
    successors = int(rng.integers(2, 4)) if sparse else None
    return random_case(rng, S, A, K, d, M, epsilon, objective, max_pieces, seed, successors)


def next_data(rng: np.random.Generator, case: Case, fields: Collection[str], epsilon: float | None = None) -> Case:
    """``case`` with new values of ``fields`` (kernel, counts, time, epsilon) drawn from ``rng``."""
    changes: dict = {}
    if "kernel" in fields:
        changes["kernel"] = random_kernel(rng, case.n_states, case.n_actions, case.support)
    if "counts" in fields:
        changes["counts"] = random_counts(rng, case.kernel)
    if "time" in fields:
        total = int((changes["counts"] if "counts" in changes else case.require_counts()).sum())
        changes["time"] = total + 1 + int(rng.integers(0, 5000))
    if "epsilon" in fields:
        changes["epsilon"] = float(rng.uniform(0.0, 0.5)) if epsilon is None else epsilon
    return case.with_data(**changes)

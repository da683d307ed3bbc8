"""The tabular constrained MDP with concave utility (docs/math.md §1)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from ..utilities.library import Utility
from .long_run import DENSE_LONG_RUN_STATES, NEARLY_DECOMPOSABLE, long_run_law

__all__ = ["CMDP", "KERNEL_TOLERANCE", "MAX_MODEL_BYTES", "DENSE_VIEW_LIMIT", "AUTO_DENSE_ENTRIES", "STORAGES",
           "check_model_size", "choose_storage", "MAX_PROGRAM_BYTES", "BYTES_PER_VARIABLE", "BYTES_PER_NONZERO",
           "stationary_occupancy", "policy_kernel"]

#: Largest deviation from 1 allowed for a probability vector's sum.
KERNEL_TOLERANCE = 1e-9

#: The built-in models refuse sizes whose arrays (kernel S·A·S plus signals (K+d)·S·A, 8 bytes each) exceed this
#: (2 GiB), before allocating anything: the programs built on a model need several times its size again.
MAX_MODEL_BYTES = 2 * 1024 ** 3


#: A sparse model builds its dense view ``CMDP.kernel`` (S, A, S) only up to this many entries (32 MiB); above it
#: the view is refused, so that nothing densifies a large kernel by accident.
DENSE_VIEW_LIMIT = 2 ** 22

#: How a CMDP stores its kernel: ``auto`` keeps the form it was given (a scipy sparse matrix stays sparse, an array
#: stays dense), ``dense`` and ``sparse`` convert.
STORAGES = ("auto", "dense", "sparse")


#: The built-in builders' ``storage="auto"`` keeps a kernel of at most this many entries S·A·S (8 MiB) dense; above
#: it, a kernel whose nonzeros are at most half its entries is stored sparse (see :func:`choose_storage`).
AUTO_DENSE_ENTRIES = 2 ** 20

#: Bytes a sparse kernel needs per nonzero (an 8-byte value and a column index of up to 8 bytes) and per row.
_SPARSE_BYTES_PER_NONZERO = 16
_SPARSE_BYTES_PER_ROW = 8


def choose_storage(storage: str, n_states: int, n_actions: int, nonzeros: int) -> str:
    """How a built-in builder stores its kernel: ``"dense"`` or ``"sparse"``.

    ``storage="auto"`` chooses dense when the kernel has at most :data:`AUTO_DENSE_ENTRIES` entries S·A·S (so the
    paper's sizes stay dense and every result on them stays as it was) or when its ``nonzeros`` exceed half of its
    entries (a sparse matrix would then need more memory than the dense array); sparse otherwise.
    ``"dense"`` and ``"sparse"`` force the choice.

    Raises
    ------
    ModelError
        For a ``storage`` that is not one of :data:`STORAGES`.
    """
    if storage not in STORAGES:
        raise ModelError(f"storage must be one of {', '.join(STORAGES)}, got {storage!r}.")
    if storage != "auto":
        return storage
    entries = int(n_states) * int(n_actions) * int(n_states)
    return "dense" if entries <= AUTO_DENSE_ENTRIES or 2 * int(nonzeros) > entries else "sparse"


#: The largest program curlopt builds: its own arrays (rows, parameter entries, bounds; estimated from its counts of
#: variables and nonzeros with :data:`BYTES_PER_VARIABLE` and :data:`BYTES_PER_NONZERO`) may take at most this
#: (2 GiB). A solver needs a few times the program's size again, so a program above it would not fit on an
#: ordinary machine; it is refused before anything is built (:func:`check_program_size`).
MAX_PROGRAM_BYTES = 2 * 1024 ** 3
#: bytes a program holds per variable at the peak of building it (bounds, the block layout, the support's and the
#: flow rows' index arrays, the stored kernel or counts; rounded up from the measurement below)
BYTES_PER_VARIABLE = 128
#: bytes a program holds per nonzero of its rows at the peak of building them: the coordinate lists (row, column,
#: value), their concatenation, the CSR matrix and the parameter arrays. Measured with tracemalloc on every program
#: kind, dense (S, A) = (150, 10) and the sparse queue at buffer 3000: peak 72-100 bytes per nonzero counting the
#: variables' share, which ``BYTES_PER_VARIABLE · variables + BYTES_PER_NONZERO · nonzeros`` bounds in every case.
BYTES_PER_NONZERO = 80


def check_model_size(name: str, n_states: int, n_actions: int, n_signals: int = 0,
                     nonzeros: int | None = None) -> None:
    """Raise ModelError when a model of this size would need more than :data:`MAX_MODEL_BYTES`.

    ``n_signals`` counts the reward and cost signals (K + d). The kernel counts S·A·S entries of 8 bytes when
    stored dense (``nonzeros=None``), and 16 bytes per nonzero plus 8 per row (S·A) when stored sparse with
    ``nonzeros`` entries. Called by the built-in model builders before they build any array.
    """
    S, A, signals = int(n_states), int(n_actions), 8 * int(n_signals) * int(n_states) * int(n_actions)
    if nonzeros is None:
        kernel, what = 8 * S * A * S, "kernel"
    else:
        kernel = _SPARSE_BYTES_PER_NONZERO * int(nonzeros) + _SPARSE_BYTES_PER_ROW * (S * A + 1)
        what = f"sparse kernel ({int(nonzeros):,} nonzeros)"
    size = kernel + signals
    if size > MAX_MODEL_BYTES:
        raise ModelError(
            f"model {name!r} with S={S:,} states and A={A:,} actions would need {size / 2 ** 30:.3g} GiB for its"
            f" {what} and signals, more than the limit of {MAX_MODEL_BYTES / 2 ** 30:g} GiB; use a smaller size."
        )
    # Every use of a model (its optimum, every agent) builds at least its occupancy program: S·A variables, a mass
    # row, and flow rows with one entry per kernel nonzero and per pair. Refused here, before the model is built,
    # rather than after gigabytes of kernel (the queue with buffer 10^6 peaked at 5.7 GB before its program's refusal).
    flow = (S - 1) * S * A if nonzeros is None else int(nonzeros) + S * A
    program = BYTES_PER_VARIABLE * S * A + BYTES_PER_NONZERO * (S * A + flow)
    if program > MAX_PROGRAM_BYTES:
        raise ModelError(
            f"model {name!r} with S={S:,} states and A={A:,} actions is refused before it is built: its occupancy"
            f" program (needed by the optimum and every agent) would take about {program / 2 ** 30:.3g} GiB for its"
            f" arrays alone, more than the limit of {MAX_PROGRAM_BYTES / 2 ** 30:g} GiB; use a smaller size."
        )


def _finite_array(value: Any, name: str) -> np.ndarray:
    if value is None:
        raise ModelError(f"{name} is missing (got None): give an array of numbers.")
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise ModelError(f"{name} must be an array of numbers ({exc}).") from None
    if not np.all(np.isfinite(array)):
        bad = np.argwhere(~np.isfinite(array))[0]
        raise ModelError(f"{name} contains NaN or infinite entries (first at index {tuple(bad.tolist())}).")
    return array


def _signals(value: Any, name: str, n_states: int | None, n_actions: int | None) -> np.ndarray:
    """Signals of shape (K, S, A); a 2-D (S, A) array is a single signal."""
    array = _finite_array(value, name)
    if array.ndim == 2:
        array = array[None]
    if array.ndim != 3:
        raise ModelError(f"{name} must have shape (count, S, A) or (S, A), got shape {array.shape}.")
    if n_states is not None and array.shape[1:] != (n_states, n_actions):
        raise ModelError(
            f"{name} has shape {array.shape}, but the model has S={n_states} states and A={n_actions} actions:"
            f" expected ({array.shape[0]}, {n_states}, {n_actions})."
        )
    return array


def check_distribution(vector: np.ndarray, name: str) -> None:
    """Raise ModelError unless ``vector`` (last axis) holds probability distributions."""
    if np.any(vector < 0) or np.any(vector > 1):
        bad = np.argwhere((vector < 0) | (vector > 1))[0]
        raise ModelError(
            f"{name} has an entry outside [0, 1] at index {tuple(bad.tolist())}: {vector[tuple(bad)]!r}."
        )
    sums = vector.sum(axis=-1)
    deviation = np.abs(sums - 1.0)
    if np.any(deviation > KERNEL_TOLERANCE):
        bad = np.unravel_index(int(np.argmax(deviation)), np.shape(sums))
        raise ModelError(
            f"{name} does not sum to 1 (tolerance {KERNEL_TOLERANCE:g}): the row at index {tuple(int(i) for i in bad)}"
            f" sums to {float(np.asarray(sums)[bad]):.12g}."
        )


def _check_structure(value: Any, n_actions: int) -> None:
    """Refuse a compressed sparse matrix (CSR, CSC, BSR) whose index arrays are inconsistent.

    scipy checks them only on request, and reading a matrix with a column index outside it reads out of bounds.
    COO checks its indices when it is built; DIA, LIL and DOK cannot hold inconsistent ones.
    """
    if value.format not in ("csr", "csc", "bsr"):
        return
    if value.format == "csr":
        indptr, indices = np.asarray(value.indptr), np.asarray(value.indices)
        if indptr.size == value.shape[0] + 1 and indptr[0] == 0 and np.all(np.diff(indptr) >= 0) \
                and indptr[-1] <= indices.size:
            stored = indices[: indptr[-1]]
            outside = (stored < 0) | (stored >= value.shape[1])
            if np.any(outside):
                position = int(np.argmax(outside))
                row = int(np.searchsorted(indptr, position, side="right") - 1)
                raise ModelError(
                    f"kernel has a successor index {int(stored[position])} outside 0..{value.shape[1] - 1} in the"
                    f" row of (s, a) = {divmod(row, n_actions)}."
                )
    try:
        value.check_format(full_check=True)
    except (ValueError, TypeError) as exc:
        raise ModelError(f"kernel is not a well-formed {value.format.upper()} matrix ({exc}).") from None


def _sparse_kernel(value: Any, n_states: int, n_actions: int, owned: bool = False) -> sp.csr_array:
    """Check a sparse kernel of shape (S·A, S) (row ``s·A + a`` holds ``P(·|s,a)``) and return it as CSR.

    ``owned``: ``value`` was built here from a dense kernel, so it need not be copied."""
    expected = (n_states * n_actions, n_states)
    if value.shape != expected:
        raise ModelError(
            f"a sparse kernel must have shape (S·A, S) = {expected} (row s·A + a holds P(·|s,a)), got {value.shape}."
        )
    _check_structure(value, n_actions)
    # a copy: the model's arrays are read-only and must not share memory with the caller's matrix
    matrix = sp.csr_array(value, dtype=float, copy=not owned)
    matrix.sum_duplicates()
    data = matrix.data
    if not np.all(np.isfinite(data)):
        row = int(np.searchsorted(matrix.indptr, int(np.argmax(~np.isfinite(data))), side="right") - 1)
        raise ModelError(f"kernel contains NaN or infinite entries (first in the row of (s, a) = {divmod(row, n_actions)}).")
    outside = (data < 0) | (data > 1)
    if np.any(outside):
        position = int(np.argmax(outside))
        row = int(np.searchsorted(matrix.indptr, position, side="right") - 1)
        raise ModelError(
            f"kernel has an entry outside [0, 1] in the row of (s, a) = {divmod(row, n_actions)}, successor"
            f" {int(matrix.indices[position])}: {float(data[position])!r}."
        )
    matrix.eliminate_zeros()
    sums = np.asarray(matrix.sum(axis=1)).ravel()
    deviation = np.abs(sums - 1.0)
    if np.any(deviation > KERNEL_TOLERANCE):
        row = int(np.argmax(deviation))
        raise ModelError(
            f"kernel does not sum to 1 (tolerance {KERNEL_TOLERANCE:g}): the row of (s, a) = {divmod(row, n_actions)}"
            f" sums to {float(sums[row]):.12g}."
        )
    matrix.sort_indices()
    for array in (matrix.data, matrix.indices, matrix.indptr):
        array.setflags(write=False)
    return matrix


def _stored_kernel(kernel: Any, storage: str, n_states: int, n_actions: int) -> tuple[Any, Any]:
    """Check ``kernel`` and store it as asked: ``(dense (S, A, S) or None, CSR (S·A, S) or None)``."""
    p = None
    transitions = None
    if kernel is not None and sp.issparse(kernel):
        transitions = _sparse_kernel(kernel, n_states, n_actions)
        if storage == "dense":  # asked for: no view limit (check_model_size bounds the built-in models)
            p = transitions.toarray().reshape(n_states, n_actions, n_states)
            transitions = None
    elif kernel is not None:
        p = _finite_array(kernel, "kernel")
        if p.shape != (n_states, n_actions, n_states):
            raise ModelError(
                f"kernel must have shape (S, A, S) = ({n_states}, {n_actions}, {n_states}), got {p.shape}."
            )
        check_distribution(p, "kernel")
        if storage == "sparse":
            transitions = _sparse_kernel(sp.csr_array(p.reshape(n_states * n_actions, n_states)), n_states,
                                         n_actions, owned=True)
            p = None
    return p, transitions


class CMDP:
    """A tabular constrained MDP with a concave objective and convex constraints.

    The agent maximises ``objective(λ)`` where ``λ_k = Σ ρ(s,a) r_k(s,a)`` and keeps
    ``g_m(ζ) <= 0`` for each constraint, ``ζ_i = Σ ρ(s,a) c_i(s,a)``.

    Parameters
    ----------
    rewards : array_like, shape (K, S, A) or (S, A)
        Reward signals, known to the agent.
    costs : array_like, shape (d, S, A) or (S, A), optional
        Cost signals; ``None`` (or shape (0, S, A)) for a model without costs.
    objective : Utility
        Concave ``f`` with ``dim == K``.
    constraints : sequence of Utility, optional
        Convex ``g_m`` with ``dim == d`` each.
    kernel : array_like of shape (S, A, S), or scipy sparse matrix of shape (S·A, S), optional
        ``P(s'|s,a)``; rows sum to 1 within 1e-9. ``None`` when unknown. A sparse matrix holds ``P(·|s,a)`` in
        row ``s·A + a``; its stored nonzeros are the kernel's support.
    initial : array_like, shape (S,), optional
        Initial state distribution; default uniform.
    name : str, optional
        A label used in messages and results.
    storage : {"auto", "dense", "sparse"}
        How the kernel is stored (see :data:`STORAGES`); ``auto`` (the default) keeps the form it was given.
        A sparse model's memory grows with the kernel's nonzeros; :attr:`transitions` is its CSR matrix and
        :attr:`kernel` a dense view built only up to :data:`DENSE_VIEW_LIMIT` entries.

    Raises
    ------
    ModelError
        When an argument has the wrong shape, NaN/inf entries, probabilities
        outside [0, 1], rows not summing to 1, or a utility of the wrong size.
    """

    #: the criterion the model's values are stated for: the long-run average here (an episodic or a discounted model
    #: says ``"episodic"`` or ``"discounted"``); agents and outputs read it instead of assuming one
    criterion: str = "average"

    def __init__(
        self,
        rewards: Any,
        costs: Any = None,
        objective: Utility | None = None,
        constraints: Sequence[Utility] = (),
        kernel: Any = None,
        initial: Any = None,
        name: str = "cmdp",
        labels: dict | None = None,
        storage: str = "auto",
    ):
        if storage not in STORAGES:
            raise ModelError(f"storage must be one of {', '.join(STORAGES)}, got {storage!r}.")
        r = _signals(rewards, "rewards", None, None)
        n_states, n_actions = r.shape[1:]
        if n_states < 1 or n_actions < 1:
            raise ModelError(f"rewards must have at least one state and one action, got shape {r.shape}.")
        if r.shape[0] < 1:
            raise ModelError("rewards must hold at least one reward signal.")
        if costs is None:
            c = np.zeros((0, n_states, n_actions))
        else:
            c = _signals(costs, "costs", n_states, n_actions)

        if objective is None:
            raise ModelError("objective is required: a concave Utility of the K average rewards, e.g. Linear([1.0]).")
        if not isinstance(objective, Utility):
            raise ModelError(f"objective must be a curlopt Utility, got {type(objective).__name__}.")
        if objective.curvature == "convex":
            raise ModelError(f"objective {objective!r} is convex; the objective is maximised and must be concave.")
        if objective.dim != r.shape[0]:
            raise ModelError(
                f"objective {objective!r} takes {objective.dim} inputs but the model has K={r.shape[0]} reward signals."
            )
        if isinstance(constraints, Utility):
            constraints = (constraints,)
        if constraints is None or isinstance(constraints, (str, bytes, dict)) or not hasattr(constraints, "__iter__"):
            raise ModelError(
                f"constraints must be a sequence of curlopt Utility objects (() for none), got {type(constraints).__name__}."
            )
        constraints = tuple(constraints)
        for m, g in enumerate(constraints):
            if not isinstance(g, Utility):
                raise ModelError(f"constraints[{m}] must be a curlopt Utility, got {type(g).__name__}.")
            if g.curvature == "concave":
                raise ModelError(f"constraints[{m}] {g!r} is concave; constraints g(ζ) <= 0 must be convex.")
            if g.dim != c.shape[0]:
                raise ModelError(
                    f"constraints[{m}] {g!r} takes {g.dim} inputs but the model has d={c.shape[0]} cost signals."
                )

        p, transitions = _stored_kernel(kernel, storage, n_states, n_actions)
        if initial is None:
            phi = np.full(n_states, 1.0 / n_states)
        else:
            phi = _finite_array(initial, "initial")
            if phi.shape != (n_states,):
                raise ModelError(f"initial must have shape (S,) = ({n_states},), got {phi.shape}.")
            check_distribution(phi, "initial")
        if labels is not None and not isinstance(labels, dict):
            raise ModelError(f"labels must be a dict or None, got {type(labels).__name__}.")
        for array in (r, c, p, phi):
            if array is not None:
                array.setflags(write=False)
        # Arrays are read-only: programs and agents share them without copying.
        self.rewards: np.ndarray = r
        self.costs: np.ndarray = c
        self.objective: Utility = objective
        self.constraints: tuple[Utility, ...] = constraints
        self._kernel: np.ndarray | None = p
        self._transitions: sp.csr_array | None = transitions
        # fixed at construction: reading the dense view of a sparse kernel must not change how it is stored
        self._sparse = transitions is not None and p is None
        self.initial: np.ndarray = phi
        self.name = str(name)
        self.labels = dict(labels or {})

    # -- the kernel -----------------------------------------------------------
    @property
    def sparse(self) -> bool:
        """True when the kernel is stored sparse (see ``storage``)."""
        return self._sparse

    @property
    def has_kernel(self) -> bool:
        """True when the kernel is known (checked without building a dense view or a CSR copy)."""
        return self._kernel is not None or self._transitions is not None

    @property
    def kernel(self) -> np.ndarray | None:
        """``P(s'|s,a)`` as a dense read-only array (S, A, S), or None when unknown.

        For a sparse model this is a view built on first use, refused above :data:`DENSE_VIEW_LIMIT` entries
        (use :attr:`transitions`)."""
        if self._kernel is None and self._transitions is not None:
            self._kernel = self._densify(self._transitions, self.n_states, self.n_actions, self.name)
        return self._kernel

    @property
    def transitions(self) -> sp.csr_array | None:
        """``P`` as a CSR matrix of shape (S·A, S), row ``s·A + a`` holding ``P(·|s,a)`` (None when unknown).

        For a dense model it is built from :attr:`kernel` on first use (its stored entries are the nonzeros)."""
        if self._transitions is None and self._kernel is not None:
            S, A = self.n_states, self.n_actions
            self._transitions = _sparse_kernel(sp.csr_array(self._kernel.reshape(S * A, S)), S, A, owned=True)
        return self._transitions

    @property
    def nnz(self) -> int:
        """Nonzero entries of the kernel (0 when unknown)."""
        return 0 if self.transitions is None else int(self.transitions.nnz)

    @staticmethod
    def _densify(transitions: sp.csr_array, n_states: int, n_actions: int, name: str = "cmdp") -> np.ndarray:
        entries = n_states * n_actions * n_states
        if entries > DENSE_VIEW_LIMIT:
            raise ModelError(
                f"model {name!r} stores its kernel sparse (S={n_states}, A={n_actions}, {transitions.nnz} nonzeros);"
                f" its dense view would hold {entries:,} entries, more than the limit of {DENSE_VIEW_LIMIT:,}: use"
                " model.transitions (CSR, shape (S·A, S)) or a code path that takes sparse kernels."
            )
        dense = transitions.toarray().reshape(n_states, n_actions, n_states)
        dense.setflags(write=False)
        return dense

    # -- sizes ----------------------------------------------------------------
    @property
    def n_states(self) -> int:
        """S."""
        return self.rewards.shape[1]

    @property
    def n_actions(self) -> int:
        """A."""
        return self.rewards.shape[2]

    @property
    def n_rewards(self) -> int:
        """K."""
        return self.rewards.shape[0]

    @property
    def n_costs(self) -> int:
        """d."""
        return self.costs.shape[0]

    @property
    def n_constraints(self) -> int:
        """M."""
        return len(self.constraints)

    # -- evaluation -----------------------------------------------------------
    def average_rewards(self, occupancy: np.ndarray) -> np.ndarray:
        """``λ_k = Σ_{s,a} ρ(s,a) r_k(s,a)``."""
        return np.einsum("ksa,sa->k", self.rewards, occupancy)

    def average_costs(self, occupancy: np.ndarray) -> np.ndarray:
        """``ζ_i = Σ_{s,a} ρ(s,a) c_i(s,a)``."""
        return np.einsum("ksa,sa->k", self.costs, occupancy)

    def constraint_values(self, costs: np.ndarray) -> np.ndarray:
        """``g_m(ζ)`` for each constraint, shape (M,)."""
        return np.array([g.value(costs) for g in self.constraints], dtype=float)

    def __repr__(self) -> str:
        return (
            f"CMDP(name={self.name!r}, S={self.n_states}, A={self.n_actions}, K={self.n_rewards}, d={self.n_costs},"
            f" M={self.n_constraints}, kernel={self._kernel_text()})"
        )

    def _kernel_text(self) -> str:
        if self._kernel is None and self._transitions is None:
            return "unknown"
        return f"sparse, {self.nnz} nonzeros" if self.sparse else "known"


def policy_kernel(kernel: Any, policy: np.ndarray) -> Any:
    """State-to-state matrix ``P_π(s, s') = Σ_a π(a|s) P(s'|s,a)``.

    ``kernel`` is a dense (S, A, S) array (the result is a dense (S, S) array) or a sparse (S·A, S) matrix (the
    result is a sparse CSR (S, S) matrix)."""
    if type(kernel) is not np.ndarray and sp.issparse(kernel):  # the array's type first: issparse asks an ABC
        n_states, n_actions = policy.shape
        weights = sp.csr_array((np.asarray(policy, dtype=float).ravel(),
                                (np.repeat(np.arange(n_states), n_actions), np.arange(n_states * n_actions))),
                               shape=(n_states, n_states * n_actions))
        return sp.csr_array(weights @ kernel)
    return np.einsum("sa,sat->st", policy, kernel)


def stationary_occupancy(kernel: np.ndarray, policy: np.ndarray, initial: np.ndarray | None = None) -> np.ndarray:
    """Long-run state-action occupancy ``ρ(s,a) = μ(s) π(a|s)`` of ``policy`` on ``kernel``.

    ``μ`` solves ``μ P_π = μ``, ``Σ μ = 1`` (least squares, exact for a unichain policy). For a sparse kernel
    (S·A, S) see :func:`_sparse_stationary`: power iteration where the chain mixes fast, a sparse LU with one
    balance row replaced by ``μ(j) = 1`` otherwise.

    Two chains take another route (:mod:`curlopt.models.long_run`): a chain with several recurrent classes, whose
    long-run average depends on the start — it is the absorption-weighted mix of the classes' laws from ``initial``
    (without ``initial``, ModelError says so) — and a nearly decomposable dense chain (the balance system's singular
    values spread beyond :data:`~curlopt.models.long_run.NEARLY_DECOMPOSABLE`), solved by GTH elimination, where least
    squares can be wrong in the first digit with a tiny residual.

    Parameters
    ----------
    kernel : ndarray (S, A, S) or scipy sparse (S·A, S)
    policy : ndarray (S, A)
    initial : ndarray (S,), optional
        The law of the first state (a model's ``initial``); used only when the chain has several recurrent classes.
    """
    if type(kernel) is not np.ndarray and sp.issparse(kernel):  # the array's type first: issparse asks an ABC
        return _sparse_stationary(kernel, policy, initial)
    chain = policy_kernel(kernel, policy)
    n = chain.shape[0]
    # the balance system [P_π^T - I; 1 ... 1] μ = (0, ..., 0, 1), written into a new array (the runs' exact
    # evaluations solve one per epoch: the identity and the right-hand side are made once per size)
    identity, rhs = _balance_parts(n)
    system = np.empty((n + 1, n))
    np.subtract(chain.T, identity, out=system[:n])
    system[n] = 1.0
    mu, _, rank, singular = np.linalg.lstsq(system, rhs, rcond=None)
    if rank < n or singular[-1] < NEARLY_DECOMPOSABLE * singular[0]:
        # several recurrent classes (rank < n), or blocks joined by round-off-sized probabilities
        mu, _ = long_run_law(chain, initial)
        return mu[:, None] * policy
    mu = np.maximum(mu, 0.0)  # what np.clip(mu, 0.0, None) calls
    mu /= mu.sum()
    return mu[:, None] * policy


@functools.lru_cache(maxsize=16)
def _balance_parts(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The identity (n, n) and the right-hand side ``(0, ..., 0, 1)`` of :func:`stationary_occupancy`'s balance
    system, read-only (shared between calls)."""
    identity = np.eye(n)
    rhs = np.zeros(n + 1)
    rhs[-1] = 1.0
    identity.flags.writeable = rhs.flags.writeable = False
    return identity, rhs


#: power-iteration sweeps tried before the sparse LU (each costs one product with the chain's nonzeros)
POWER_SWEEPS = 300
#: a stationary vector is accepted when ``‖μ P_π − μ‖₁`` is at most this
STATIONARY_RESIDUAL = 1e-12


def _sparse_stationary(kernel: Any, policy: np.ndarray, initial: np.ndarray | None = None) -> np.ndarray:
    """``μ(s) π(a|s)`` for a sparse kernel, by the cheaper of two exact routes.

    1. Power iteration on the lazy chain ``(I + P_π)/2`` (same stationary vector, aperiodic), at most
       :data:`POWER_SWEEPS` sweeps: a chain that mixes fast (random sparse graphs, the scheduler's product chains)
       converges in a few hundred products, where a sparse LU of an expander-like graph fills in (8 s at
       S = 5,000 with five successors, measured, against 0.01 s).
    2. Otherwise a sparse LU of the balance equations with the row of one state j replaced by ``μ(j) = 1``. Why not
       the normalisation row ``Σ μ = 1``: a dense row makes the factor fill in (6 s on the queue with
       buffer 10,000, 0.02 s without it). Why j matters: a slowly mixing chain's μ can span hundreds of orders
       of magnitude (the queue with an upward drift), and fixing a state of negligible mass loses the rest to
       round-off, so j is tried among the heaviest recurrent states of the iterate and states spread over the
       recurrent ones, until an answer is nonnegative and stationary (:func:`_pivoted_stationary`).
    Before either, the chain's graph is searched for its closed classes: with more than one, the long-run law from
    ``initial`` (:func:`curlopt.models.long_run.long_run_law`; ModelError without ``initial``); with one, every route works on that class alone (μ is 0 elsewhere).
    The answer must satisfy ``‖μ P_π − μ‖₁ ≤`` :data:`STATIONARY_RESIDUAL`; if neither route reaches it, the
    normalised bordered system is solved (slower), then dense least squares up to :data:`DENSE_FALLBACK_STATES`
    states, so no route returns a vector that is not stationary; if none succeeds, ModelError says so.
    """
    from .sparse_chains import chain_classes  # imported here: its graph module costs 0.3 s, only sparse models pay

    chain = sp.csr_array(policy_kernel(kernel, policy))
    chain.eliminate_zeros()  # a zero-probability action leaves stored zeros, which are not edges
    recurrent, _ = chain_classes(chain)
    if len(recurrent) > 1 or (chain.nnz and chain.data.min() < NEARLY_DECOMPOSABLE
                              and len(recurrent[0]) <= DENSE_LONG_RUN_STATES):
        # several classes; or round-off-sized entries, which may join nearly separate blocks: a power iteration or an
        # LU then passes its residual test with the wrong mass on each block, GTH elimination does not
        mu, _ = long_run_law(chain, initial)
        return mu[:, None] * policy
    # μ is 0 outside the recurrent class, exactly: every route works on the class alone, which also keeps out
    # transient states whose leak out is below round-off (1 − 1e-320 == 1: their block would be singular)
    states = np.asarray(recurrent[0], dtype=np.intp)
    block = sp.csr_array(chain[states][:, states]) if states.size < chain.shape[0] else chain
    forward = sp.csr_array(block.T)  # μ ↦ μ P_π as a matrix-vector product
    guess = _power_iteration(forward)
    part = guess if _residual(forward, guess) <= STATIONARY_RESIDUAL else _pivoted_stationary(forward, guess)
    mu = np.zeros(chain.shape[0])
    mu[states] = part if part is not None else _bordered_stationary(block)
    return mu[:, None] * policy


def _residual(forward: sp.csr_array, mu: np.ndarray) -> float:
    return float(np.abs(forward @ mu - mu).sum())


def _power_iteration(forward: sp.csr_array) -> np.ndarray:
    """At most :data:`POWER_SWEEPS` sweeps of the lazy chain from the uniform law."""
    n = forward.shape[0]
    mu = np.full(n, 1.0 / n)
    for _ in range(POWER_SWEEPS):
        step = 0.5 * (mu + forward @ mu)
        step /= step.sum()
        converged = np.abs(step - mu).sum() <= 1e-15
        mu = step
        if converged:
            break
    return mu


def _pivoted_stationary(forward: sp.csr_array, guess: np.ndarray) -> np.ndarray | None:
    """μ by sparse LUs pivoted at candidate states (see :func:`_sparse_stationary`), or None if none is stationary.

    ``forward`` is the transposed chain of one closed class (every state recurrent: a transient state's true mass is
    0, where μ(j) = 1 has no solution). Candidates: the heaviest states of ``guess``, then states spread over all. A pivot of negligible true mass gives an answer
    ruined by round-off (entries of both signs); the first answer that is nonnegative to round-off names a heavy
    state, where the solve is repeated, until the pivot is its own answer's heaviest state.
    """
    import scipy.sparse.linalg as spla  # imported here: only sparse models need it

    n = forward.shape[0]
    balance = sp.csc_array(sp.eye_array(n, format="csc") - forward)

    def pivoted(pivot: int) -> np.ndarray | None:
        keep = np.arange(n) != pivot
        try:
            rest = spla.splu(sp.csc_array(balance[keep][:, keep])).solve(
                -balance[keep][:, [pivot]].toarray().ravel())
        except RuntimeError:  # "Factor is exactly singular": round-off, the class being unique
            return None
        answer = np.empty(n)
        answer[pivot], answer[keep] = 1.0, rest
        return answer if np.all(np.isfinite(answer)) else None

    heavy = np.argsort(-guess, kind="stable")[:8]
    spread = np.linspace(0, n - 1, num=min(16, n)).astype(int)
    tried: set[int] = set()
    for candidate in dict.fromkeys([*heavy.tolist(), *spread.tolist()]):
        pivot = int(candidate)
        while pivot not in tried and len(tried) < 32:
            tried.add(pivot)
            answer = pivoted(pivot)
            if answer is None or answer.min() < -1e-9 * answer.max():
                break
            heaviest = int(np.argmax(answer))
            if heaviest != pivot:
                pivot = heaviest
                continue
            mu = np.clip(answer, 0.0, None)
            mu /= mu.sum()
            if _residual(forward, mu) <= STATIONARY_RESIDUAL:
                return mu
            break
    return None


#: up to this many states a class whose sparse factorisations all fail is solved densely (least squares)
DENSE_FALLBACK_STATES = 5_000


def _bordered_stationary(block: sp.csr_array) -> np.ndarray:
    """μ of one closed class: the balance equations with the last row replaced by ``Σ μ = 1`` by a sparse LU; if that
    is singular to round-off or not stationary, dense least squares (up to :data:`DENSE_FALLBACK_STATES` states)."""
    import scipy.sparse.linalg as spla

    n = block.shape[0]
    system = sp.lil_array((block.T - sp.eye_array(n)).tocsr())
    system[n - 1, :] = np.ones(n)
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    forward = sp.csr_array(block.T)
    try:
        mu = np.clip(spla.splu(sp.csc_array(system)).solve(rhs), 0.0, None)
        if np.all(np.isfinite(mu)) and mu.sum() > 0:
            mu /= mu.sum()
            if _residual(forward, mu) <= STATIONARY_RESIDUAL:
                return mu
    except RuntimeError:  # "Factor is exactly singular": round-off, the class being closed and unique
        pass
    if n <= DENSE_FALLBACK_STATES:
        dense = np.vstack([block.toarray().T - np.eye(n), np.ones((1, n))])
        mu, *_ = np.linalg.lstsq(dense, np.append(np.zeros(n), 1.0), rcond=None)
        mu = np.clip(mu, 0.0, None)
        mu /= mu.sum()
        if _residual(forward, mu) <= 1e-9:
            return mu
    raise ModelError(
        f"the stationary distribution of this policy's chain could not be computed: its recurrent class of {n} states"
        " is singular to round-off in every factorisation tried (a power iteration, LUs pivoted at up to 32 states,"
        " the normalised system" + (", dense least squares)." if n <= DENSE_FALLBACK_STATES else ").")
    )

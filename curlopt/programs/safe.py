"""The programs of safe mode (docs/safe-mode.md), as backend-neutral data.

Both act on a given kernel ``Q`` (the plug-in estimate, or a posterior sample)
through the occupancy rows of the occupancy program (docs/math.md §2), and carry
per-pair uncertainty weights as parameters:

:class:`SafeProgram` (the optimistic-pessimistic program)::

    maximise    f(λ(ρ)) + Σ_{s,a} b(s,a) ρ(s,a)                 (exploration bonus)
    subject to  occupancy rows on Q
                g_m(ζ(ρ)) + Σ_{s,a} q_m(s,a) ρ(s,a) <= -ε         (penalised constraint rows)

:class:`LeastViolationProgram` (what safe mode plays when the first is infeasible)::

    minimise    max_m ( g_m(ζ(ρ)) + Σ_{s,a} q_m(s,a) ρ(s,a) )
    subject to  occupancy rows on Q

The bonus and the penalties are linear in ρ. Each is carried as one scalar
variable ``z`` defined by a linear row ``z = Σ w(s,a) ρ(s,a)`` whose weights are
parameter entries, and the model's utilities are wrapped as ``f(λ) + z_bonus`` and
``g_m(ζ) + z_m`` (:class:`curlopt.utilities.augmented.AugmentedUtility`). So every backend
compiles these programs as it compiles the others, and an update pushes only the
new weights and kernel.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ProgramError
from ..models.cmdp import CMDP
from ..utilities.augmented import AugmentedUtility
from ..utilities.library import Linear, Utility
from .blocks import Program, check_kernel, check_program_size
from .flow import KernelFlowRows
from .occupancy import flow_nonzeros
from .support import Support

__all__ = ["SafeProgram", "LeastViolationProgram"]


def _weights(value: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    w = np.asarray(value, dtype=float)
    if w.shape != shape:
        raise ProgramError(f"{name} must have shape {shape}, got {w.shape}.")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ProgramError(f"{name} must be finite and non-negative.")
    return w


class _PenalisedOccupancy(Program):
    """Occupancy rows on a kernel, plus one defining row per weighted sum ``z_j = Σ w_j(s,a) ρ(s,a)``.

    ``extra`` names the scalar blocks in order; the first ``len(weighted)`` of them are the
    weighted sums (``weighted`` names their parameter groups), the rest are free variables
    the subclass uses itself.
    """

    support: Support
    # set by each subclass: the wrapped objective and constraints
    _objective: Utility
    _constraints: tuple[Utility, ...]

    def __init__(self, model: CMDP, weighted: list[str], free: list[str], support: Any = None):
        if not isinstance(model, CMDP):
            raise ProgramError(f"a program needs a curlopt CMDP model, got {type(model).__name__}.")
        S, A = model.n_states, model.n_actions
        self.support = Support.of_model(model, support)
        n_scalars = len(weighted) + len(free)
        check_program_size(self.kind, model, S * A + n_scalars,
                           S * A + flow_nonzeros(self.support) + len(weighted) * (S * A + 1))
        super().__init__(model, [("occupancy", (S, A)), *[(name, (1,)) for name in weighted + free]])
        for name in free:  # free scalars (an epigraph level) may be negative
            self.blocks[name] = replace(self.blocks[name], lower=-math.inf)
        lin = self.linear
        n = S * A
        rho = self.blocks["occupancy"].indices().ravel()
        lin.add("mass", 1, np.zeros(n), rho, 1.0, 1.0, 1.0)
        self._flow = KernelFlowRows(lin, self.support, rho)
        for name in weighted:
            # z - Σ w(s,a) ρ(s,a) = 0; the -w are parameter entries
            first = lin.add(name, 1, [0], [self.blocks[name].start], 1.0, 0.0, 0.0)
            lin.add_parameters(name, first, np.zeros(n, dtype=np.int64), rho)
        lin.finish()
        self._weighted = list(weighted)
        # The penalty weights' parameter entries, penalty_0 to penalty_{M-1}, one after the other (each S·A long).
        M = model.n_constraints
        groups = [lin.param_groups[f"penalty_{m}"] for m in range(M)]
        start = groups[0].start if groups else 0
        if any(group.start != start + m * n or group.stop != start + (m + 1) * n for m, group in enumerate(groups)):
            raise AssertionError("the penalty groups' parameter entries are not consecutive")
        self._penalty_values = slice(start, start + M * n)
        self.kernel: Any = None

    @property
    def objective(self) -> Utility:
        """The wrapped objective the backends compile (the model's f plus the subclass's linear term)."""
        return self._objective

    @property
    def constraints(self) -> tuple[Utility, ...]:
        """The wrapped constraint utilities the backends compile."""
        return self._constraints

    def _column(self, name: str) -> int:
        return self.blocks[name].start

    def _selector(self, names: list[str]) -> sp.csr_matrix:
        """Rows selecting the scalar variables ``names`` from x."""
        cols = [self._column(name) for name in names]
        return sp.csr_matrix((np.ones(len(cols)), (np.arange(len(cols)), cols)), shape=(len(cols), self.n_vars))

    def _set_kernel(self, kernel: Any) -> None:
        """Check ``kernel`` (dense (S, A, S) or sparse (S·A, S)) and push it into the flow rows (see
        :meth:`curlopt.programs.flow.KernelFlowRows.read` for the form :attr:`kernel` keeps)."""
        values, self.kernel = self._flow.read(check_kernel(self.model, kernel))
        self.linear.writable_values()[self.linear.param_groups["flow"]] = values

    def _write_kernel(self, kernel: Any) -> None:
        """Push a kernel known to be valid into the flow rows, kept without a copy
        (:meth:`curlopt.programs.flow.KernelFlowRows.write`)."""
        self.kernel = self._flow.write(kernel, self.linear.writable_values()[self.linear.param_groups["flow"]])

    def _uniform_kernel(self) -> Any:
        """The default kernel: uniform rows (over each pair's allowed successors on a sparse support)."""
        S, A = self.model.n_states, self.model.n_actions
        return np.full((S, A, S), 1.0 / S) if self.support.is_dense else self.support.uniform()

    def _set_weights(self, name: str, weights: np.ndarray) -> None:
        self.linear.writable_values()[self.linear.param_groups[name]] = -weights.ravel()

    def _set_penalty(self, penalty: Any) -> None:
        """Check and store the penalty weights ``q_m`` (M, S, A) and push them into their rows."""
        S, A, M = self.model.n_states, self.model.n_actions, self.model.n_constraints
        self._store_penalty(_weights(penalty, (M, S, A), "penalty").copy())

    def _store_penalty(self, penalty: np.ndarray) -> None:
        """Keep the penalty weights ``penalty`` (M, S, A), known to be valid, and push ``-q_m`` into row m's
        parameter entries: one write, as the groups ``penalty_0 .. penalty_{M-1}`` are consecutive."""
        self.penalty = penalty
        np.negative(penalty.reshape(-1), out=self.linear.writable_values()[self._penalty_values])


class SafeProgram(_PenalisedOccupancy):
    """The optimistic-pessimistic program of safe mode on a given kernel.

    maximise ``f(λ(ρ)) + Σ b(s,a) ρ(s,a)`` subject to the occupancy rows on ``Q`` and
    ``g_m(ζ(ρ)) + Σ q_m(s,a) ρ(s,a) <= -ε`` for every constraint m.

    Parameters
    ----------
    model : CMDP
    kernel : array_like (S, A, S) or scipy sparse (S·A, S), optional
        ``Q``; default uniform rows (uniform over each pair's allowed successors on a sparse support).
    bonus : array_like, shape (S, A), optional
        ``b >= 0``; default zeros.
    penalty : array_like, shape (M, S, A), optional
        ``q_m >= 0`` for each of the model's M constraints; default zeros.
    epsilon : float, default 0
    support : scipy sparse matrix (S·A, S), optional
        The successors the flow rows can give a kernel entry, as for
        :class:`~curlopt.programs.occupancy.OccupancyProgram` (default: the model's kernel pattern when the
        model stores its kernel sparse, else every successor).
    """

    kind = "safe"

    def __init__(self, model: CMDP, kernel: Any = None, bonus: Any = None, penalty: Any = None,
                 epsilon: float = 0.0, support: Any = None):
        S, A, M = model.n_states, model.n_actions, model.n_constraints
        self._penalty_names = [f"penalty_{m}" for m in range(M)]
        super().__init__(model, ["bonus", *self._penalty_names], [], support)
        self.reward_map = sp.vstack([self.reward_map, self._selector(["bonus"])]).tocsr()
        self.cost_map = sp.vstack([self.cost_map, self._selector(self._penalty_names)]).tocsr()
        self._objective = AugmentedUtility(model.objective, [1.0], name=f"{model.objective!r} + bonus")
        self._constraints = tuple(
            AugmentedUtility(g, np.eye(M)[m], name=f"{g!r} + penalty") for m, g in enumerate(model.constraints)
        )
        self.bonus = np.zeros((S, A))
        self.penalty = np.zeros((M, S, A))
        self.update(kernel=self._uniform_kernel() if kernel is None else kernel,
                    bonus=self.bonus if bonus is None else bonus,
                    penalty=self.penalty if penalty is None else penalty, epsilon=epsilon)

    def update(self, kernel: Any = None, bonus: Any = None, penalty: Any = None, epsilon: Any = None) -> None:
        """Set a new kernel, bonus weights, penalty weights and/or tightness; the structure is unchanged."""
        S, A = self.model.n_states, self.model.n_actions
        if kernel is not None:
            self._set_kernel(kernel)
        if bonus is not None:
            self.bonus = _weights(bonus, (S, A), "bonus").copy()
            self._set_weights("bonus", self.bonus)
        if penalty is not None:
            self._set_penalty(penalty)
        if epsilon is not None:
            self._set_epsilon(epsilon)
        self.version += 1

    def update_unchecked(self, kernel: Any, bonus: np.ndarray | None, penalty: np.ndarray, epsilon: float) -> None:
        """:meth:`update` with data the caller built valid, without its checks: an agent's epoch.

        ``kernel`` is the agent's own estimate or posterior draw on the program's support (a float (S, A, S)
        array on the dense support, else a CSR (S·A, S) matrix), ``bonus`` float (S, A) weights >= 0 (None:
        unchanged) and ``penalty`` float (M, S, A) weights >= 0, all finite. The program keeps the three
        arrays without a copy (the caller must not change them afterwards); its data are then those
        :meth:`update` sets with the same arguments, bit for bit.
        """
        self._write_kernel(kernel)
        if bonus is not None:
            self.bonus = bonus
            self._set_weights("bonus", bonus)
        self._store_penalty(penalty)
        self._set_epsilon(epsilon)
        self.version += 1


class LeastViolationProgram(_PenalisedOccupancy):
    """``minimise max_m (g_m(ζ(ρ)) + Σ q_m(s,a) ρ(s,a))`` over the occupancies of a kernel.

    Written as ``maximise -t`` subject to ``g_m(ζ) + z_m - t <= 0`` with a free level ``t``:
    one epigraph variable, the same utilities (wrapped) and the same rows, so every
    backend that takes the model takes this program. ε is 0 and stays 0.

    Parameters
    ----------
    model : CMDP
        A model with at least one constraint.
    kernel, penalty, support
        As for :class:`SafeProgram`.
    """

    kind = "least-violation"

    def __init__(self, model: CMDP, kernel: Any = None, penalty: Any = None, support: Any = None):
        S, A, M = model.n_states, model.n_actions, model.n_constraints
        if M == 0:
            raise ProgramError(f"the least-violation program needs a constraint; model {model.name!r} has none.")
        self._penalty_names = [f"penalty_{m}" for m in range(M)]
        super().__init__(model, self._penalty_names, ["level"], support)
        self.reward_map = self._selector(["level"])
        self.cost_map = sp.vstack([self.cost_map, self._selector(self._penalty_names + ["level"])]).tocsr()
        self._objective = Linear([-1.0])
        self._constraints = tuple(
            AugmentedUtility(g, np.append(np.eye(M)[m], -1.0), name=f"{g!r} + penalty - level")
            for m, g in enumerate(model.constraints)
        )
        self.penalty = np.zeros((M, S, A))
        self.update(kernel=self._uniform_kernel() if kernel is None else kernel,
                    penalty=self.penalty if penalty is None else penalty)

    def update(self, kernel: Any = None, penalty: Any = None) -> None:
        """Set a new kernel and/or penalty weights."""
        if kernel is not None:
            self._set_kernel(kernel)
        if penalty is not None:
            self._set_penalty(penalty)
        self.version += 1

    def level(self, x: np.ndarray) -> float:
        """The optimal level ``t = max_m (g_m + penalty_m)`` from a solution vector."""
        return float(np.asarray(x)[self._column("level")])

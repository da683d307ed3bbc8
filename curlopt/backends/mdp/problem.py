"""What the ``mdp-columns`` backend solves, read from a program: utilities of per-pair signals over occupancies.

Every program this backend takes is, over the occupancies ``ρ`` of one kernel (docs/math.md §2), a problem in a
few aggregates that are *linear in ρ*: ``λ' = Σ_{s,a} ρ(s,a) r'(s,a)`` and ``ζ' = Σ_{s,a} ρ(s,a) c'(s,a)``:

* the occupancy program: ``maximise f(λ)`` s.t. ``g_m(ζ) <= -ε``, with ``r' = r`` and ``c' = c``;
* safe mode's program (docs/safe-mode.md): the bonus ``Σ b ρ`` is one more reward signal (``r' = (r, b)``) and the
  penalties ``Σ q_m ρ`` more cost signals (``c' = (c, q_1..q_M)``), under the program's own wrapped utilities;
* safe mode's least-violation program: ``minimise max_m (g_m(ζ) + Σ q_m ρ)``, the same signals, no objective.

So one problem type, :class:`OccupancyProblem`, serves them all, and :meth:`OccupancyProblem.solution_vector`
writes a mixture of occupancies back in the program's own variable layout (its ``bonus``, ``penalty_m`` and
``level`` variables included), so that results are filled and checked as for every backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...programs.blocks import Program
from ...programs.occupancy import OccupancyProgram
from ...programs.safe import LeastViolationProgram, SafeProgram
from ...utilities.augmented import AugmentedUtility
from ...utilities.library import Utility

__all__ = ["OccupancyProblem", "TAKEN_PROGRAMS", "program_kernel"]

#: the program classes solved by column generation (exactly these: a subclass may add rows the master ignores)
TAKEN_PROGRAMS = (OccupancyProgram, SafeProgram, LeastViolationProgram)


def program_kernel(program: Program) -> Any:
    """The program's current kernel (a dense (S, A, S) array, or a CSR (S·A, S) matrix on a sparse support); a new
    object after every ``update(kernel=...)``, so its identity tells a compiled program that the kernel changed."""
    return program.kernel  # type: ignore[attr-defined]


@dataclass
class OccupancyProblem:
    """A problem over occupancies in aggregates of per-pair signals (module doc).

    Attributes
    ----------
    objective : Utility or None
        ``F`` of the reward aggregates, maximised; None for the least-violation problem (minimise the largest
        constraint value).
    reward_signals : ndarray, shape (K', S, A)
    constraints : tuple of Utility
        ``G_m`` of the cost aggregates; rows ``G_m(ζ') <= -ε``.
    cost_signals : ndarray, shape (d', S, A)
    """

    objective: Utility | None
    reward_signals: np.ndarray
    constraints: tuple[Utility, ...]
    cost_signals: np.ndarray

    @classmethod
    def read(cls, program: Program) -> OccupancyProblem:
        """The problem of ``program`` with its current data (bonus and penalty weights included)."""
        model = program.model
        if type(program) is OccupancyProgram:
            return cls(program.objective, np.asarray(model.rewards), tuple(program.constraints),
                       np.asarray(model.costs))
        penalty = np.asarray(program.penalty)  # type: ignore[attr-defined]
        costs = np.concatenate([np.asarray(model.costs), penalty], axis=0)
        if type(program) is SafeProgram:
            rewards = np.concatenate([np.asarray(model.rewards), np.asarray(program.bonus)[None]], axis=0)
            return cls(program.objective, rewards, tuple(program.constraints), costs)
        if type(program) is LeastViolationProgram:
            # g_m(ζ) + Σ q_m ρ, as the program's own rows state it (without its level variable)
            eye = np.eye(model.n_constraints)
            wrapped = tuple(AugmentedUtility(g, eye[m], name=f"{g!r} + penalty")
                            for m, g in enumerate(model.constraints))
            return cls(None, np.zeros((0,) + costs.shape[1:]), wrapped, costs)
        raise TypeError(f"the {type(program).__name__} is not a program over occupancies of one kernel")

    @property
    def least_violation(self) -> bool:
        """True for the least-violation problem (no objective: the largest constraint value is minimised)."""
        return self.objective is None

    def utilities(self) -> list[tuple[str, Utility]]:
        """``(role, utility)`` of the objective and every constraint, for messages."""
        roles = [] if self.objective is None else [("the objective", self.objective)]
        return roles + [(f"constraint {m}", g) for m, g in enumerate(self.constraints)]

    def constraint_values(self, costs: np.ndarray, epsilon: float) -> np.ndarray:
        """``G_m(ζ') + ε`` for every constraint (the rows hold when all are <= 0)."""
        return np.array([float(g.value(costs)) + epsilon for g in self.constraints], dtype=float)

    def solution_vector(self, program: Program, rho: np.ndarray) -> np.ndarray:
        """``ρ`` written in ``program``'s variable layout: each block filled from its definition."""
        x = np.zeros(program.n_vars)
        penalty: Any = getattr(program, "penalty", None)
        for name, block in program.blocks.items():
            if name == "occupancy":
                x[block.slice] = rho.ravel()
            elif name == "bonus":
                x[block.slice] = float(np.sum(program.bonus * rho))  # type: ignore[attr-defined]
            elif name.startswith("penalty_"):
                x[block.slice] = float(np.sum(penalty[int(name.split("_")[1])] * rho))
            elif name == "level":
                costs = np.einsum("ksa,sa->k", self.cost_signals, rho)
                x[block.slice] = float(self.constraint_values(costs, 0.0).max())
            else:
                raise TypeError(f"the program has a variable block {name!r} this backend does not know")
        return x

"""The occupancy program over ρ(s,a) for a known or sampled kernel (docs/math.md §2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ProgramError
from ..models.cmdp import CMDP
from .blocks import Program, check_kernel

__all__ = ['OccupancyProgram']


class OccupancyProgram(Program):
    """The occupancy program of docs/math.md §2 for a given kernel ``Q`` and tightness ε.

    maximise ``f(λ(ρ))`` over ρ >= 0 with ``Σ ρ = 1``, flow balance
    ``Σ_a ρ(s',a) = Σ_{s,a} Q(s'|s,a) ρ(s,a)`` and ``g_m(ζ(ρ)) <= -ε``.

    Parameters
    ----------
    model : CMDP
    kernel : array_like, shape (S, A, S), optional
        ``Q``; default the model's own kernel (then required).
    epsilon : float, default 0
        Tightness ε >= 0.
    """

    kind = "occupancy"

    def __init__(self, model: CMDP, kernel: Any = None, epsilon: float = 0.0):
        S, A = model.n_states, model.n_actions
        super().__init__(model, [("occupancy", (S, A))])
        if kernel is None and model.kernel is None:
            raise ProgramError(
                f"the occupancy program needs a kernel: model {model.name!r} has none, pass kernel=... (shape (S, A, S))."
            )
        lin = self.linear
        n = S * A
        lin.add("mass", 1, np.zeros(n), np.arange(n), 1.0, 1.0, 1.0)
        # Flow rows s' = 0..S-2: every coefficient Σ_a ρ(s',a) - Σ Q(s'|s,a) ρ(s,a) depends on Q.
        first = lin.add("flow", S - 1, np.zeros(0), np.zeros(0), 0.0, 0.0, 0.0)
        rows, cols = np.meshgrid(np.arange(S - 1), np.arange(n), indexing="ij")
        lin.add_parameters("flow", first, rows, cols)
        lin.finish()
        self._diagonal = (np.arange(S - 1)[:, None] == np.repeat(np.arange(S), A)[None, :]).astype(float)
        self.kernel = None
        self.update(kernel=model.kernel if kernel is None else kernel, epsilon=epsilon)

    def update(self, kernel: Any = None, epsilon: Any = None) -> None:
        """Set a new kernel and/or tightness; the structure is unchanged.

        Raises
        ------
        ProgramError
            If the kernel has the wrong shape or is not a transition kernel.
        """
        S, A = self.model.n_states, self.model.n_actions
        if kernel is not None:
            q = check_kernel(self.model, kernel)
            self.kernel = q.copy()
            # coefficient of ρ(s,a) in row s': δ(s', s) - Q(s'|s,a)
            self.linear.writable_values()[:] = (self._diagonal - q.reshape(S * A, S).T[: S - 1]).ravel()
        if epsilon is not None:
            self._set_epsilon(epsilon)
        self.version += 1

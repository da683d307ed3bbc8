"""The occupancy program over ρ(s,a) for a known or sampled kernel (docs/math.md §2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ProgramError
from ..models.cmdp import CMDP
from .blocks import Program, check_kernel, check_program_size
from .flow import KernelFlowRows
from .support import Support

__all__ = ['OccupancyProgram']


def flow_nonzeros(support: Support) -> int:
    """At most how many parameter entries the flow rows have on ``support`` (its entries and the diagonal)."""
    S = support.n_states
    return (S - 1) * support.n_pairs if support.is_dense else support.nnz + support.n_pairs


def require_kernel(model: CMDP, kernel: Any, kind: str) -> None:
    """Raise when neither ``kernel`` nor the model gives one (without building a sparse model's dense view)."""
    if kernel is None and not model.sparse and model.kernel is None:
        raise ProgramError(
            f"the {kind} program needs a kernel: model {model.name!r} has none, pass kernel=... (shape (S, A, S),"
            " or a scipy sparse (S·A, S) matrix)."
        )


class OccupancyProgram(Program):
    """The occupancy program of docs/math.md §2 for a given kernel ``Q`` and tightness ε.

    maximise ``f(λ(ρ))`` over ρ >= 0 with ``Σ ρ = 1``, flow balance
    ``Σ_a ρ(s',a) = Σ_{s,a} Q(s'|s,a) ρ(s,a)`` and ``g_m(ζ(ρ)) <= -ε``.

    Parameters
    ----------
    model : CMDP
    kernel : array_like (S, A, S) or scipy sparse (S·A, S), optional
        ``Q``; default the model's own kernel (then required).
    epsilon : float, default 0
        Tightness ε >= 0.
    support : scipy sparse matrix (S·A, S), optional
        The successors the program's flow rows can give a kernel entry (its stored entries; see
        :mod:`curlopt.programs.support`). Default: the model's own kernel pattern when the model stores its
        kernel sparse, else every successor. Every kernel given (here or to :meth:`update`) must be zero
        outside it.

    Raises
    ------
    ProgramError
        For a missing or invalid kernel, a kernel with a nonzero outside the support, or a program too large
        to build (see :func:`~curlopt.programs.blocks.check_program_size`).
    """

    kind = "occupancy"
    support: Support

    def __init__(self, model: CMDP, kernel: Any = None, epsilon: float = 0.0, support: Any = None):
        if not isinstance(model, CMDP):
            raise ProgramError(f"a program needs a curlopt CMDP model, got {type(model).__name__}.")
        S, A = model.n_states, model.n_actions
        require_kernel(model, kernel, "occupancy")
        self.support = Support.of_model(model, support)
        check_program_size(self.kind, model, S * A, S * A + flow_nonzeros(self.support))
        super().__init__(model, [("occupancy", (S, A))])
        lin = self.linear
        n = S * A
        lin.add("mass", 1, np.zeros(n), np.arange(n), 1.0, 1.0, 1.0)
        # Flow rows s' = 0..S-2: every coefficient Σ_a ρ(s',a) - Σ Q(s'|s,a) ρ(s,a) on the support depends on Q.
        self._flow = KernelFlowRows(lin, self.support, np.arange(n))
        lin.finish()
        self.kernel: Any = None
        self.update(kernel=(model.transitions if model.sparse else model.kernel) if kernel is None else kernel,
                    epsilon=epsilon)

    def update(self, kernel: Any = None, epsilon: Any = None) -> None:
        """Set a new kernel and/or tightness; the structure is unchanged.

        ``kernel`` is a dense (S, A, S) array or a scipy sparse (S·A, S) matrix. The program keeps it as
        :attr:`kernel`: a dense (S, A, S) array on the dense support, else a CSR (S·A, S) matrix.

        Raises
        ------
        ProgramError
            If the kernel has the wrong shape, is not a transition kernel (naming the row), or has a nonzero
            outside the program's support (naming the row and the successor).
        """
        if kernel is not None:
            values, self.kernel = self._flow.read(check_kernel(self.model, kernel))
            # coefficient of ρ(s,a) in row s': δ(s', s) - Q(s'|s,a)
            self.linear.writable_values()[:] = values
        if epsilon is not None:
            self._set_epsilon(epsilon)
        self.version += 1

    def update_unchecked(self, kernel: Any, epsilon: float) -> None:
        """:meth:`update` with a kernel the caller built valid on the program's support, without its checks.

        For an agent's own estimate or posterior draw, which is a transition kernel on the support by
        construction (the checks cost more than the write): a float (S, A, S) array on the dense support, which
        the program keeps as its :attr:`kernel` without a copy (the caller must not change it afterwards), else
        a CSR (S·A, S) matrix on the support. The program's data are then those :meth:`update` sets, bit for bit.
        """
        self.kernel = self._flow.write(kernel, self.linear.writable_values()[self.linear.param_groups["flow"]])
        self._set_epsilon(epsilon)
        self.version += 1

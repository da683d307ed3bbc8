"""The discounted occupancy program (0 < γ < 1), for the known-model optimum (docs/math.md §10).

Over the normalised discounted occupancy ``d(s,a) = (1 − γ) Σ_t γ^t Pr(s_t = s, a_t = a)`` (``s_0 ~ μ``)::

    maximise     f(λ),    λ_k = Σ_{s,a} r_k(s,a) d(s,a)
    subject to   d(s,a) >= 0
                 Σ_a d(s',a) − γ Σ_{s,a} P(s'|s,a) d(s,a) = (1 − γ) μ(s')      for every s'
                 g_m(ζ) <= −ε,   ζ_i = Σ_{s,a} c_i(s,a) d(s,a)

λ and ζ are the discounted values times ``1 − γ`` (so a constant reward r gives λ = r, as the average criterion
does). The rows sum to ``Σ d = 1``, so no mass row is needed, and all S rows are kept: ``I − γ Pᵀ`` is
nonsingular, none is redundant. The kernel entries are parameters (:meth:`DiscountedOccupancyProgram.update`); γ and
μ sit in row coefficients and bounds fixed at construction (a new γ is a new program).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ..errors import ProgramError
from ..models.cmdp import CMDP
from .blocks import Program, check_kernel, check_program_size
from .occupancy import require_kernel
from .support import Support

__all__ = ["DiscountedOccupancyProgram", "check_discount"]


def check_discount(discount: Any) -> float:
    """``discount`` as a float ``γ`` with ``0 < γ < 1``; raise :class:`ProgramError` for anything else."""
    ok = isinstance(discount, numbers.Real) and not isinstance(discount, bool)
    value = float(discount) if ok else math.nan
    if not (0.0 < value < 1.0):
        raise ProgramError(f"discount must be a number γ with 0 < γ < 1, got {discount!r}.")
    return value


class DiscountedOccupancyProgram(Program):
    """The discounted occupancy program (module docstring) for a given kernel and tightness ε.

    Parameters
    ----------
    model : CMDP
        Gives μ (its ``initial``), the signals and the utilities; a model with a ``discount`` attribute gives γ.
    discount : float, optional
        ``γ`` with ``0 < γ < 1``; default ``model.discount`` (required when the model has none). Given both, they
        must agree.
    kernel : array_like (S, A, S) or scipy sparse (S·A, S), optional
        The kernel; default the model's own.
    epsilon : float, default 0
        Tightness ε >= 0.
    support : scipy sparse matrix (S·A, S), optional
        The successors the rows can give a kernel entry (default: the model's kernel pattern when it is stored
        sparse, else every successor); every kernel given must be zero outside it.

    Raises
    ------
    ProgramError
        For γ outside (0, 1) or missing, a missing or invalid kernel, a nonzero outside the support, or a program
        too large to build.
    """

    kind = "discounted-occupancy"
    support: Support

    def __init__(self, model: CMDP, discount: Any = None, kernel: Any = None, epsilon: float = 0.0,
                 support: Any = None):
        if not isinstance(model, CMDP):
            raise ProgramError(f"a program needs a curlopt CMDP model, got {type(model).__name__}.")
        own = getattr(model, "discount", None)
        if discount is None and own is None:
            raise ProgramError(f"the discounted program needs a discount γ: model {model.name!r} has none, pass"
                               " discount=... (0 < γ < 1).")
        gamma = check_discount(own if discount is None else discount)
        if discount is not None and own is not None and check_discount(own) != gamma:
            raise ProgramError(f"discount={discount!r} differs from the model's own discount {own!r}.")
        self.discount = gamma
        S, A = model.n_states, model.n_actions
        require_kernel(model, kernel, "discounted")
        self.support = Support.of_model(model, support)
        n_pairs = S * A
        # the parameter entries: the support's entries (pair, successor) and, where a pair's own state is not among
        # its successors, the diagonal (the coefficient δ(s', s) − γ P(s'|s,a) is nonzero there whatever P is)
        pairs, successors = self.support.pairs, self.support.successors
        state = np.arange(n_pairs, dtype=np.int64) // A
        keys = np.unique(np.concatenate([successors * n_pairs + pairs, state * n_pairs + np.arange(n_pairs)]))
        check_program_size(self.kind, model, n_pairs, keys.size)
        super().__init__(model, [("occupancy", (S, A))])
        rows, entry_pairs = np.divmod(keys, n_pairs)
        rho = self.blocks["occupancy"].indices().ravel()
        lin = self.linear
        right = (1.0 - gamma) * np.asarray(model.initial, dtype=float)
        first = lin.add("flow", S, np.zeros(0), np.zeros(0), 0.0, right, right)
        lin.add_parameters("flow", first, rows, rho[entry_pairs])
        lin.finish()
        self._diagonal = (rows == state[entry_pairs]).astype(float)
        self._position = np.searchsorted(keys, successors * n_pairs + pairs)  # the parameter of each support entry
        self.kernel: Any = None
        self.update(kernel=(model.transitions if model.sparse else model.kernel) if kernel is None else kernel,
                    epsilon=epsilon)

    def update(self, kernel: Any = None, epsilon: Any = None) -> None:
        """Set a new kernel and/or tightness; the structure (and γ) is unchanged.

        :attr:`kernel` keeps the kernel: a dense (S, A, S) array on the dense support, else a CSR (S·A, S) matrix.

        Raises
        ------
        ProgramError
            If the kernel has the wrong shape, is not a transition kernel (naming the row), or has a nonzero
            outside the program's support.
        """
        if kernel is not None:
            S, A = self.model.n_states, self.model.n_actions
            checked = check_kernel(self.model, kernel)
            at = self.support.gather(checked, "kernel")
            scaled = np.zeros(self._diagonal.size)
            scaled[self._position] = self.discount * at
            self.linear.writable_values()[:] = self._diagonal - scaled
            if self.support.is_dense:
                self.kernel = at.reshape(S, A, S).copy()
            else:
                self.kernel = self.support.matrix(at)
                self.kernel.eliminate_zeros()
        if epsilon is not None:
            self._set_epsilon(epsilon)
        self.version += 1

"""The flow rows of a program over ρ on a given kernel (docs/math.md §2), with the kernel as parameter entries.

Row ``s'`` (for ``s' = 0..S-2``; the last is dropped, see :mod:`curlopt.programs.blocks`) reads
``Σ_a ρ(s',a) - Σ_{s,a} Q(s'|s,a) ρ(s,a) = 0``: the coefficient of ``ρ(s,a)`` is ``δ(s', s) - Q(s'|s,a)``.
It is a parameter entry wherever it can be nonzero on the program's support: where ``(s,a) → s'`` is in
the support, or ``s' = s``. On the dense support that is every position (S-1)·S·A, in the row-major order
(row s', then pair) the program always had; on a sparse support it is the support's entries and the diagonal,
in the same order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .blocks import LinearRows
from .support import Support

__all__ = ["KernelFlowRows"]


class KernelFlowRows:
    """Declares the flow rows in a :class:`~curlopt.programs.blocks.LinearRows` and computes their values.

    Parameters
    ----------
    linear : LinearRows
        The rows being built (the group ``flow`` is added, with its parameter entries).
    support : Support
    rho_columns : ndarray of int, shape (S·A,)
        The column of ``ρ(s,a)`` for each flat pair ``s·A + a``.
    """

    def __init__(self, linear: LinearRows, support: Support, rho_columns: np.ndarray):
        S, A = support.n_states, support.n_actions
        self.support = support
        first = linear.add("flow", S - 1, np.zeros(0), np.zeros(0), 0.0, 0.0, 0.0)
        if support.is_dense:
            rows, cols = np.meshgrid(np.arange(S - 1), rho_columns, indexing="ij")
            linear.add_parameters("flow", first, rows, cols)
            self._diagonal = (np.arange(S - 1)[:, None] == np.repeat(np.arange(S), A)[None, :]).astype(float)
            return
        n_pairs = S * A
        state = np.arange(n_pairs, dtype=np.int64) // A
        successors = support.successors
        kept = successors < S - 1
        # Positions as keys s'·(S·A) + pair: sorted keys are the row-major order (row s', then pair).
        entry_keys = successors[kept] * n_pairs + support.pairs[kept]
        own = np.flatnonzero(state < S - 1)
        keys = np.sort(np.concatenate([entry_keys, state[own] * n_pairs + own]))
        keys = keys[np.concatenate([keys[:1] == keys[:1], keys[1:] != keys[:-1]])]  # a diagonal may be an entry
        rows, pairs = np.divmod(keys, n_pairs)
        linear.add_parameters("flow", first, rows, np.asarray(rho_columns)[pairs])
        self._diagonal = (rows == state[pairs]).astype(float)
        self._kept = kept
        self._position = np.searchsorted(keys, entry_keys)   # the parameter entry of each kept support entry

    def read(self, kernel: Any) -> tuple[np.ndarray, Any]:
        """``(values, stored)`` for a checked ``kernel`` (a dense (S, A, S) array or a CSR (S·A, S) matrix).

        ``values`` are the flow rows' parameter values ``δ(s', s) - Q(s'|s,a)`` in their order; ``stored`` is
        the kernel as the program keeps it: a dense (S, A, S) copy on the dense support, else a CSR (S·A, S)
        matrix on the support's pattern (zeros dropped). On a sparse support a nonzero of ``kernel`` outside
        it is a ProgramError naming the pair and successor (see :meth:`Support.gather`).
        """
        support = self.support
        S, A = support.n_states, support.n_actions
        if support.is_dense:
            kernel = kernel.toarray().reshape(S, A, S) if sp.issparse(kernel) else np.array(kernel, dtype=float)
        values = np.empty(self._diagonal.size)
        return values, self.write(kernel, values)

    def write(self, kernel: Any, values: np.ndarray) -> Any:
        """Write the flow rows' parameter values for ``kernel`` into ``values`` (in their order) and return the
        kernel as the program keeps it (see :meth:`read`).

        ``kernel`` is checked already, and on the dense support a float (S, A, S) array the program may keep as
        it is (not copied: the caller hands it over): an agent's own estimate or posterior draw, written each
        epoch without a copy or a temporary.
        """
        support = self.support
        S, A = support.n_states, support.n_actions
        if support.is_dense:
            np.subtract(self._diagonal, kernel.reshape(S * A, S).T[: S - 1], out=values.reshape(S - 1, S * A))
            return kernel
        at = support.gather(kernel, "kernel")
        kernel_at = np.zeros(self._diagonal.size)
        kernel_at[self._position] = at[self._kept]
        np.subtract(self._diagonal, kernel_at, out=values)
        stored = support.matrix(at)
        stored.eliminate_zeros()
        return stored

"""The multichain occupancy program: the long-run average optimum from the initial law (docs/math.md §2.1).

When some policy's chain has several recurrent classes, the long-run average depends on where the chain starts, and
the occupancy program (one law ρ with ``Σ ρ = 1`` and flow balance) answers for the best start: it may put its mass
on a class the initial law never reaches. The linear program of Hordijk and Kallenberg (Puterman 1994, §9.3;
Kallenberg 1983 for the constrained case) answers from the initial law μ, over the long-run frequencies ``x`` and
auxiliary "transient" visits ``y``::

    maximise     f(λ),    λ_k = Σ_{s,a} r_k(s,a) x(s,a)
    subject to   x, y >= 0
                 Σ_a x(j,a) − Σ_{s,a} P(j|s,a) x(s,a) = 0                               for every j
                 Σ_a x(j,a) + Σ_a y(j,a) − Σ_{s,a} P(j|s,a) y(s,a) = μ(j)              for every j
                 g_m(ζ) <= −ε,   ζ_i = Σ_{s,a} c_i(s,a) x(s,a)

The second rows summed over j give ``Σ x = 1``; the first rows sum to zero, so their last is dropped (as in the
occupancy program). The policy read from a solution is Kallenberg's: ``x(s,·)`` normalised where ``Σ_a x(s,a) > 0``,
else ``y(s,·)`` normalised, else uniform (a state neither x nor y visits is not reached from μ). Without constraints
that stationary policy attains the program's value from μ. With constraints the value is attained by some Markov
policy, but a stationary one may fall short: :func:`curlopt.optimum.solve_optimum` evaluates the policy it returns
from μ and says so when it does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ProgramError
from ..models.cmdp import CMDP
from .blocks import Program, check_kernel, check_program_size
from .flow import KernelFlowRows
from .occupancy import flow_nonzeros, require_kernel
from .policy import VISIT_TOLERANCE, policy_from_occupancy
from .support import Support

__all__ = ["MultichainOccupancyProgram", "multichain_policy"]


def multichain_policy(x: np.ndarray, y: np.ndarray, tolerance: float = VISIT_TOLERANCE) -> np.ndarray:
    """Kallenberg's stationary policy from a solution ``(x, y)``, both (S, A): ``x`` where it visits, else ``y``."""
    x = np.clip(np.nan_to_num(np.asarray(x, dtype=float)), 0.0, None)
    y = np.clip(np.nan_to_num(np.asarray(y, dtype=float)), 0.0, None)
    from_x = x.sum(axis=1) > tolerance * x.shape[1]
    return np.where(from_x[:, None], policy_from_occupancy(x, tolerance), policy_from_occupancy(y, tolerance))


class MultichainOccupancyProgram(Program):
    """The multichain occupancy program (module docstring) for a given kernel and tightness ε.

    Parameters
    ----------
    model : CMDP
        Gives μ (its ``initial``), the signals and the utilities.
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
        For a missing or invalid kernel, a nonzero outside the support, or a program too large to build.
    """

    kind = "multichain-occupancy"
    support: Support

    def __init__(self, model: CMDP, kernel: Any = None, epsilon: float = 0.0, support: Any = None):
        if not isinstance(model, CMDP):
            raise ProgramError(f"a program needs a curlopt CMDP model, got {type(model).__name__}.")
        S, A = model.n_states, model.n_actions
        require_kernel(model, kernel, "multichain occupancy")
        self.support = Support.of_model(model, support)
        n_pairs = S * A
        pairs, successors = self.support.pairs, self.support.successors
        state = np.arange(n_pairs, dtype=np.int64) // A
        # the y rows' parameter entries: every (successor, pair) of the support and each pair's own state
        keys = np.unique(np.concatenate([successors * n_pairs + pairs, state * n_pairs + np.arange(n_pairs)]))
        check_program_size(self.kind, model, 2 * n_pairs, flow_nonzeros(self.support) + keys.size + n_pairs)
        super().__init__(model, [("occupancy", (S, A)), ("transient", (S, A))])
        x = self.blocks["occupancy"].indices().ravel()
        y = self.blocks["transient"].indices().ravel()
        lin = self.linear
        self._flow = KernelFlowRows(lin, self.support, x)
        initial = np.asarray(model.initial, dtype=float)
        first = lin.add("reach", S, state, x, 1.0, initial, initial)
        rows, entry_pairs = np.divmod(keys, n_pairs)
        lin.add_parameters("reach", first, rows, y[entry_pairs])
        lin.finish()
        self._diagonal = (rows == state[entry_pairs]).astype(float)
        self._position = np.searchsorted(keys, successors * n_pairs + pairs)
        self._n_flow = lin.param_groups["flow"].stop
        self.kernel: Any = None
        self.update(kernel=(model.transitions if model.sparse else model.kernel) if kernel is None else kernel,
                    epsilon=epsilon)

    def update(self, kernel: Any = None, epsilon: Any = None) -> None:
        """Set a new kernel and/or tightness; the structure (and μ) is unchanged.

        Raises
        ------
        ProgramError
            If the kernel has the wrong shape, is not a transition kernel, or has a nonzero outside the support.
        """
        if kernel is not None:
            checked = check_kernel(self.model, kernel)
            flow_values, self.kernel = self._flow.read(checked)
            at = self.support.gather(checked, "kernel")
            reach = self._diagonal.copy()
            reach[self._position] -= at
            values = self.linear.writable_values()
            values[: self._n_flow] = flow_values
            values[self._n_flow:] = reach
        if epsilon is not None:
            self._set_epsilon(epsilon)
        self.version += 1

    def transient(self, x: np.ndarray) -> np.ndarray:
        """``y`` (S, A) from a solution vector."""
        block = self.blocks["transient"]
        return np.asarray(x)[block.slice].reshape(block.shape)

    def interpret(self, x: np.ndarray) -> dict[str, Any]:
        """The fields of a solve result: ``occupancy`` is the long-run frequency ``x`` from μ, ``policy``
        Kallenberg's (:func:`multichain_policy`)."""
        fields = super().interpret(x)
        fields["policy"] = multichain_policy(self.occupancy(x), self.transient(x))
        return fields

"""Discounted constrained MDPs: the criterion ``0 < γ < 1`` for the known-model optimum (docs/math.md, the episodic
setting, its discounted paragraph).

A :class:`DiscountedCMDP` is a :class:`~curlopt.models.cmdp.CMDP` with a discount factor. Its values are the averages
of the **normalised discounted occupancy**

    d(s,a) = (1 − γ) Σ_{t ≥ 0} γ^t Pr(s_t = s, a_t = a),     s_0 ~ μ,

a distribution over (s, a) that solves ``Σ_a d(s',a) = (1 − γ) μ(s') + γ Σ_{s,a} P(s'|s,a) d(s,a)``:
``λ_k = Σ d(s,a) r_k(s,a)``, ``ζ_i = Σ d(s,a) c_i(s,a)`` (the discounted totals times ``1 − γ``, so a reward in
[0, 1] gives a value in [0, 1] for every γ). The objective and constraints act on those, as for the average criterion.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from ..utilities.library import Utility
from .cmdp import CMDP, _finite_array, check_distribution, policy_kernel

__all__ = ["DiscountedCMDP", "check_discount", "discounted_occupancy", "discounted_values"]


def check_discount(discount: Any) -> float:
    """``discount`` as a float ``0 < γ < 1``; raise :class:`ModelError` for anything else.

    γ = 1 is refused (the average criterion is the model without a discount; the discounted sums would diverge),
    and γ = 0 too (only the first step would count: a one-step episode, ``horizon=1``)."""
    ok = not isinstance(discount, bool) and isinstance(discount, numbers.Real)
    value = float(discount) if ok else math.nan
    if not (math.isfinite(value) and 0.0 < value < 1.0):
        raise ModelError(
            f"discount must be a number strictly between 0 and 1 (the discount factor γ), got {discount!r}; for the"
            " long-run average criterion build the model without a discount, for one step use horizon=1."
        )
    return value


class DiscountedCMDP(CMDP):
    """A constrained MDP under the discounted criterion.

    Parameters
    ----------
    rewards, costs, objective, constraints, kernel, initial, name, labels, storage
        As for :class:`~curlopt.models.cmdp.CMDP`; the objective and constraints act on the averages of the normalised
        discounted occupancy (module docstring). ``initial`` is ``μ``, the law of the first state (default uniform);
        under this criterion it matters for every value.
    discount : float
        ``γ``, strictly between 0 and 1.

    Raises
    ------
    ModelError
        For a discount outside (0, 1), or anything :class:`~curlopt.models.cmdp.CMDP` refuses.
    """

    criterion = "discounted"

    def __init__(
        self,
        rewards: Any,
        costs: Any = None,
        objective: Utility | None = None,
        constraints: Sequence[Utility] = (),
        kernel: Any = None,
        initial: Any = None,
        discount: Any = None,
        name: str = "discounted",
        labels: dict | None = None,
        storage: str = "auto",
    ):
        gamma = check_discount(discount)
        super().__init__(rewards, costs, objective, constraints, kernel, initial, name=name, labels=labels,
                         storage=storage)
        self.discount: float = gamma

    def __repr__(self) -> str:
        base = super().__repr__()
        return base[:-1] + f", γ={self.discount:g})" if base.endswith(")") else base


def _check(model: Any, policy: Any) -> np.ndarray:
    if not isinstance(model, DiscountedCMDP):
        raise ModelError(f"a discounted evaluation needs a DiscountedCMDP, got {type(model).__name__}.")
    if not model.has_kernel:
        raise ModelError(f"model {model.name!r} has no kernel; exact evaluation needs the transition kernel.")
    pi = _finite_array(policy, "policy")
    if pi.shape != (model.n_states, model.n_actions):
        raise ModelError(f"policy must have shape (S, A) = ({model.n_states}, {model.n_actions}), got {pi.shape}.")
    check_distribution(pi, "policy")
    return pi


def discounted_occupancy(model: DiscountedCMDP, policy: Any) -> np.ndarray:
    """The normalised discounted occupancy ``d(s,a)`` of a stationary ``policy`` (S, A), by one linear solve.

    The state part solves ``(I − γ P_π)ᵀ x = (1 − γ) μ`` (a sparse LU for a model stored sparse, a dense solve
    otherwise); ``d(s,a) = x(s) π(a|s)``. ``I − γ P_π`` is strictly diagonally dominant for γ < 1, so the system is
    never singular.
    """
    pi = _check(model, policy)
    gamma, S = model.discount, model.n_states
    chain = policy_kernel(model.transitions if model.sparse else model.kernel, pi)
    rhs = (1.0 - gamma) * np.asarray(model.initial, dtype=float)
    if sp.issparse(chain):
        import scipy.sparse.linalg as spla  # imported here: only sparse models need it

        system = sp.csc_array(sp.eye_array(S, format="csc") - gamma * sp.csc_array(chain).T)
        x = spla.spsolve(system, rhs)
    else:
        x = np.linalg.solve(np.eye(S) - gamma * np.asarray(chain).T, rhs)
    return np.clip(np.asarray(x, dtype=float), 0.0, None)[:, None] * pi


def discounted_values(model: DiscountedCMDP, policy: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(λ (K,), ζ (d,))`` of a stationary ``policy`` on ``model``: the averages of its normalised discounted
    occupancy (:func:`discounted_occupancy`)."""
    d = discounted_occupancy(model, policy)
    return model.average_rewards(d), model.average_costs(d)

"""A linear CMDP in the form the model-free papers state it: one reward and utilities in [0, 1], thresholds ρ.

Triple-Q (Wei, Liu, Ying, AISTATS 2022) and its infinite-horizon extension (Wei, Liu, Ying, AAAI 2022) maximise a
reward ``r ∈ [0, 1]`` subject to a utility constraint ``E[Σ g] >= ρ`` with ``g ∈ [0, 1]`` (a per-episode total, or a
long-run average). A curlopt model states ``f(λ) = w·λ + const`` and constraints ``g_m(ζ) = w_m·ζ + c_m <= 0`` on
cost totals (or averages). The rewriting here is exact (the same policies are optimal and the same ones feasible):

* the reward per step ``w·r(s,a)`` is mapped affinely to ``(w·r − lo) / span`` (lo and span over every step, state
  and action; span 1 for a constant signal) — an increasing affine map of the per-step reward, which orders policies
  the same way because every policy earns the same number of steps;
* constraint m's utility per step is ``u_m = −w_m·c(s,a)``, so that ``g_m <= 0`` reads ``Σ u_m >= c_m``; it is mapped
  to ``(u_m − lo_m) / span_m ∈ [0, 1]`` and the threshold with it: ``ρ_m = (c_m − n·lo_m) / span_m`` with ``n`` the
  number of steps the constraint sums over (H for a per-episode total, 1 for a long-run average).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AgentError
from ..models.cmdp import CMDP

__all__ = ["UtilityForm", "utility_form"]


@dataclass(frozen=True)
class UtilityForm:
    """The reward and utilities in [0, 1] and the thresholds (module docstring).

    Attributes
    ----------
    reward : ndarray, shape (..., S, A)
        The scaled reward per step (a leading step axis for per-step signals).
    utilities : ndarray, shape (M, ..., S, A)
        The scaled utility of each constraint per step.
    thresholds : ndarray, shape (M,)
        ``ρ_m``, in the scaled units.
    """

    reward: np.ndarray
    utilities: np.ndarray
    thresholds: np.ndarray


def _scale(signal: np.ndarray) -> tuple[np.ndarray, float, float]:
    low, high = float(np.min(signal)), float(np.max(signal))
    span = high - low if high > low else 1.0
    return (signal - low) / span, low, span


def utility_form(model: CMDP, rewards: np.ndarray, costs: np.ndarray, steps: int, agent: str) -> UtilityForm:
    """``model``'s linear objective and constraints as a reward and utilities in [0, 1] (module docstring).

    Parameters
    ----------
    model : CMDP
        Its ``objective`` and ``constraints`` must be affine.
    rewards, costs : ndarray, shape (..., K, S, A) and (..., d, S, A)
        The signals (per step for an episodic model: a leading axis H).
    steps : int
        The number of steps a constraint's total sums over (H, or 1 for an average).
    agent : str
        The agent's name, for messages.

    Raises
    ------
    AgentError
        For a non-linear objective or constraint, a model without constraints, or a constraint that ignores every
        cost.
    """
    pieces = model.objective.affine_pieces()
    if pieces is None or pieces[0].shape[0] != 1:
        raise AgentError(f"{agent} maximises a reward: model {model.name!r} has a non-linear objective"
                         f" ({model.objective!r}); use uc-curl or ps-curl for concave objectives.")
    if not model.constraints:
        raise AgentError(f"{agent} learns under a constraint, and model {model.name!r} has none.")
    weights = pieces[0][0]
    reward, _, _ = _scale(np.einsum("k,...ksa->...sa", weights, rewards))
    utilities, thresholds = [], []
    for m, constraint in enumerate(model.constraints):
        cpieces = constraint.affine_pieces()
        if cpieces is None or cpieces[0].shape[0] != 1:
            raise AgentError(f"{agent} takes linear constraints: constraint {m} of model {model.name!r}"
                             f" ({constraint!r}) is not linear.")
        w, c = cpieces[0][0], float(cpieces[1][0])
        if not np.any(w):
            raise AgentError(f"{agent}: constraint {m} of model {model.name!r} ({constraint!r}) depends on no"
                             " cost, so no policy can change it; remove it from the model.")
        utility, low, span = _scale(-np.einsum("i,...isa->...sa", w, costs))
        utilities.append(utility)
        # g_m = w·ζ + c <= 0  ⟺  Σ u >= c  ⟺  Σ (u − lo)/span >= (c − steps·lo)/span
        thresholds.append((c - steps * low) / span)
    return UtilityForm(reward, np.stack(utilities), np.array(thresholds, dtype=float))

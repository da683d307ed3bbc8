"""OptPess-PrimalDual (Liu, Zhou, Kalathil, Kumar, Tian 2021), in the closest version the readable text supports.

The paper's abstract states the algorithm's shape: "a primal-dual algorithm with an optimistic primal estimate and a
pessimistic dual update", for the case where a strictly safe policy is known to exist but is not known, with
bounded constraint violation and an Õ(√K) regret. The algorithm's statement (its dual step, the dual variable's
bound, the pessimism margin) could not be read from any copy reachable here, so those constants are ours, chosen
by the standard projected-dual argument and stated in docs/math.md, "OptPess-PrimalDual (closest version)"; the
bonuses are the paper's OptPess-LP ones (:class:`~curlopt.agents.episodic.pessimistic.OptPessLp`).

Each episode k, on the empirical kernel ``P̂``:

* primal (optimistic reward, pessimistic cost): the policy maximising the Lagrangian
  ``Σ_h [w·(r_h + α β̄) − Σ_m λ_m a_m·(c_h + α β̄)]`` by backward induction (deterministic, first maximiser);
* its pessimistic cost totals ``ζ̂_k`` on ``P̂``, and after the episode the projected dual step
  ``λ_{k+1} = min(λ_max, max(0, λ_k + η (g(ζ̂_k) + ε)))`` — pessimistic twice: the costs carry the bonus and the
  constraint is tightened by ε.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import AgentError
from ...models.episodic import EpisodicCMDP
from .base import EpisodePlan, EpisodeSource, EpisodicAgent, _check_probability, _check_scale, require_safe_policy
from .estimates import hoeffding_width, policy_totals
from .optimistic import DELTA, _add_per_step

__all__ = ["OptPessPrimalDual", "lagrangian_policy"]


def lagrangian_policy(initial: np.ndarray, kernel: np.ndarray, signal: np.ndarray) -> tuple[np.ndarray, float]:
    """The deterministic policy maximising ``Σ_h signal_h(s_h, a_h)`` on ``kernel`` by backward induction, and its
    value ``μ·V_1``.

    Parameters
    ----------
    initial : ndarray, shape (S,)
    kernel : ndarray, shape (S, A, S) for every step, or (H − 1, S, A, S) per transition step
    signal : ndarray, shape (H, S, A)

    Returns
    -------
    policy : ndarray, shape (H, S, A), one-hot on the first maximiser
    value : float
    """
    H, S, A = signal.shape
    policy = np.zeros((H, S, A))
    value = np.zeros(S)
    for h in reversed(range(H)):
        q = signal[h].copy()
        if h < H - 1:
            P = kernel if kernel.ndim == 3 else kernel[h]
            q += P @ value
        best = q.argmax(axis=1)
        policy[h, np.arange(S), best] = 1.0
        value = q[np.arange(S), best]
    return policy, float(np.asarray(initial, dtype=float) @ value)


class OptPessPrimalDual(EpisodicAgent):
    """OptPess-PrimalDual (closest version): an optimistic Lagrangian policy and a pessimistic projected dual step.

    Liu, Zhou, Kalathil, Kumar, Tian, "Learning Policies with Zero or Bounded Constraint Violation for Constrained
    MDPs" (NeurIPS 2021). The module docstring states the episode; the constants:

    * bonuses ``α_r β̄(s,a)`` on every reward signal and ``α_c β̄(s,a)`` on every cost signal (OptPess-LP's):
      ``β̄ = sqrt(L / max(1, N(s,a)))``, ``L = ln(32 S² H K / δ)``, ``α_c = 1 + S H``,
      ``α_r = α_c (1 + 4 H / Δ)``, times ``bonus_scale``. The Lagrangian's bonus ``(α_r − λ α_c) β̄`` then stays
      ``>= α_c β̄ > 0`` for every ``λ <= λ_max`` when ``R <= 2``: the policy stays optimistic, so a large multiplier
      does not stop it from trying the pairs it has rarely tried;
    * dual bound ``λ_max = 2 H R / Δ`` per constraint (R the span of the per-step scalar reward ``w·r``, Δ Slater's
      gap: twice the bound ``H R / Δ`` on an optimal multiplier, so the projection is inactive there);
    * step ``η = λ_max / (H C sqrt(K))`` times ``step_scale`` (C the largest span of a constraint's per-step scalar
      cost ``a_m·c``: projected gradient ascent on ``[0, λ_max]`` with gradients of size up to ``H C``);
    * margin ``ε = min(Δ/2, λ_max / (η K))`` times ``margin_scale`` (``H C / sqrt(K)`` at ``step_scale = 1``): with
      it, the sum of the pessimistic ``g(ζ̂_k) + ε`` is at most ``λ_max/η`` while λ stays below its bound, so the
      cumulative pessimistic violation ``Σ_k g(ζ̂_k)`` is at most ``λ_max/η − K ε <= 0``.

    The policy is labelled ``update-rule``: no program is solved (the Lagrangian of a linear objective and linear
    constraints is an unconstrained MDP, solved exactly by backward induction).

    Parameters
    ----------
    model : EpisodicCMDP
        A linear objective ``w·λ + const`` and at least one linear constraint ``a_m·ζ + b_m <= 0``.
    seed, episodes, rewards
        As for :class:`~curlopt.agents.episodic.base.EpisodicAgent`.
    delta : float, default 0.01
        δ of the widths.
    bonus_scale : float, default 1
        A factor on both bonuses (1: OptPess-LP's).
    reward_bonus_scale : float, optional
        A factor on the reward bonus alone, instead of ``bonus_scale``.
    slater_gap : float, optional
        Δ > 0, a lower bound on Slater's gap ``max_π −max_m g_m(ζ^π)`` (the paper assumes a strictly feasible
        policy exists). Default: the slack of the model's declared safe policy, which is read for that number only
        and never played.
    step_scale : float, default 1
        A factor on η.
    margin_scale : float, default 1
        A factor on ε.

    Raises
    ------
    AgentError
        For a non-linear objective or constraint, a model without constraints, no Slater gap (neither given nor a
        declared safe policy), or a bad option.
    """

    name = "optpess-primal-dual"

    def __init__(self, model: EpisodicCMDP, seed: Any = None, episodes: int | None = None, rewards: str = "known",
                 delta: float = DELTA, bonus_scale: float = 1.0, slater_gap: float | None = None,
                 step_scale: float = 1.0, margin_scale: float = 1.0, reward_bonus_scale: float | None = None):
        self.delta = _check_probability(delta, "delta")
        self.bonus_scale = _check_scale(bonus_scale, "bonus_scale")
        self.reward_bonus_scale = None if reward_bonus_scale is None else _check_scale(reward_bonus_scale,
                                                                                        "reward_bonus_scale")
        self.step_scale = _check_scale(step_scale, "step_scale")
        if self.step_scale == 0:
            raise AgentError("step_scale must be > 0 (a zero step never moves the multiplier), got 0.")
        self.margin_scale = _check_scale(margin_scale, "margin_scale")
        if not isinstance(model, EpisodicCMDP):
            super().__init__(model, seed, episodes, rewards)  # the base class's clear error
        self.reward_weights, self.constraint_weights, self.constraint_offsets = _linear_parts(model, self.name)
        if slater_gap is None:
            slater_gap = require_safe_policy(model, f"{self.name} without slater_gap").slack
        elif isinstance(slater_gap, bool) or not isinstance(slater_gap, (int, float)) or not math.isfinite(
                slater_gap) or slater_gap <= 0:
            raise AgentError(f"slater_gap (Δ) must be a finite number > 0 or None, got {slater_gap!r}.")
        self.slater_gap = float(slater_gap)
        H = model.horizon
        scalar_rewards = np.einsum("k,hksa->hsa", self.reward_weights, np.asarray(model.step_rewards, dtype=float))
        scalar_costs = np.einsum("md,hdsa->mhsa", self.constraint_weights, np.asarray(model.step_costs, dtype=float))
        #: R and C: the spans of the per-step scalar reward and of the constraints' per-step scalar costs (1 if flat)
        self.reward_span = _span(scalar_rewards)
        self.cost_span = max(_span(c) for c in scalar_costs)
        #: λ_max, the bound of every multiplier
        self.dual_bound = 2.0 * H * self.reward_span / self.slater_gap
        super().__init__(model, seed, episodes, rewards)

    def reset(self, seed: Any = None, episodes: int | None = None) -> None:
        super().reset(seed, episodes)
        #: λ_k, one multiplier per constraint
        self.multipliers = np.zeros(len(self.model.constraints))
        #: g(ζ̂_k) of the episode planned and not yet learned from
        self._pending: np.ndarray | None = None

    # -- constants -------------------------------------------------------------------------------------------------
    def log_term(self) -> float:
        """``L = ln(32 S² H K / δ)``."""
        S = self.model.n_states
        return math.log(32 * S ** 2 * self.horizon * self.planned_episodes / self.delta)

    def bonuses(self) -> tuple[np.ndarray, np.ndarray]:
        """``(α_r β̄, α_c β̄)`` times ``bonus_scale`` (the first times ``reward_bonus_scale`` when given): (S, A)
        pooled, (H − 1, S, A) per step."""
        beta = hoeffding_width(self.counts.visits, self.log_term())
        beta = beta[0] if self.counts.pooled else beta
        alpha_c = 1 + self.model.n_states * self.horizon
        alpha_r = alpha_c + 4 * self.horizon * alpha_c / self.slater_gap
        reward_scale = self.bonus_scale if self.reward_bonus_scale is None else self.reward_bonus_scale
        return reward_scale * alpha_r * beta, self.bonus_scale * alpha_c * beta

    @property
    def step(self) -> float:
        """``η = step_scale λ_max / (H C sqrt(K))``."""
        return self.step_scale * self.dual_bound / (self.horizon * self.cost_span * math.sqrt(self.planned_episodes))

    @property
    def margin(self) -> float:
        """``ε = margin_scale min(Δ/2, λ_max / (η K))``."""
        return self.margin_scale * min(self.slater_gap / 2, self.dual_bound / (self.step * self.planned_episodes))

    # -- the episode -----------------------------------------------------------------------------------------------
    def _plan(self, k: int) -> EpisodePlan:
        reward_bonus, cost_bonus = self.bonuses()
        rewards = _add_per_step(self.step_rewards, reward_bonus)
        costs = _add_per_step(self.step_costs, cost_bonus)
        kernel = self.kernel_estimate()
        scalar_reward = np.einsum("k,hksa->hsa", self.reward_weights, rewards)
        scalar_costs = np.einsum("md,hdsa->mhsa", self.constraint_weights, costs)
        lagrangian = scalar_reward - np.einsum("m,mhsa->hsa", self.multipliers, scalar_costs)
        policy, _ = lagrangian_policy(self.model.initial, kernel, lagrangian)
        pessimistic = policy_totals(self.model.initial, kernel, policy, costs)
        self._pending = self.constraint_weights @ pessimistic + self.constraint_offsets
        optimistic = policy_totals(self.model.initial, kernel, policy, rewards)
        return EpisodePlan(policy, EpisodeSource.RULE,
                           message=f"λ = {np.round(self.multipliers, 6).tolist()}, pessimistic g ="
                                   f" {np.round(self._pending, 6).tolist()}",
                           epsilon=self.margin, planned_value=float(self.model.objective.value(optimistic)))

    def end_episode(self, states: np.ndarray, actions: np.ndarray) -> None:
        """Learn the transitions, then the dual step with the pessimistic constraint values of the episode's plan."""
        super().end_episode(states, actions)
        if self._pending is not None:
            moved = self.multipliers + self.step * (self._pending + self.margin)
            self.multipliers = np.clip(moved, 0.0, self.dual_bound)
            self._pending = None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "delta": self.delta, "bonus_scale": self.bonus_scale,
                "slater_gap": self.slater_gap, "dual_bound": self.dual_bound, "step_scale": self.step_scale,
                "margin_scale": self.margin_scale, "reward_bonus_scale": self.reward_bonus_scale}


def _span(values: np.ndarray) -> float:
    span = float(np.max(values) - np.min(values))
    return span if span > 0 else 1.0


def _linear_parts(model: EpisodicCMDP, agent: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``w`` of the objective ``w·λ + const``, and ``a_m``, ``b_m`` of the constraints ``a_m·ζ + b_m <= 0``."""
    pieces = model.objective.affine_pieces()
    if pieces is None or pieces[0].shape[0] != 1:
        raise AgentError(f"{agent} maximises a Lagrangian by backward induction: model {model.name!r} has a"
                         f" non-linear objective ({model.objective!r}); use uc-curl or ps-curl for concave objectives.")
    if not model.constraints:
        raise AgentError(f"{agent} moves a multiplier per constraint, and model {model.name!r} has none.")
    weights, offsets = [], []
    for m, constraint in enumerate(model.constraints):
        cpieces = constraint.affine_pieces()
        if cpieces is None or cpieces[0].shape[0] != 1:
            raise AgentError(f"{agent} takes linear constraints: constraint {m} of model {model.name!r}"
                             f" ({constraint!r}) is not linear.")
        weights.append(cpieces[0][0])
        offsets.append(float(cpieces[1][0]))
    return np.asarray(pieces[0][0], dtype=float), np.array(weights, dtype=float), np.array(offsets)

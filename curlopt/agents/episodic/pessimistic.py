"""OptPess-LP (Liu, Zhou, Kalathil, Kumar, Tian 2021): the LP on the empirical model with an optimistic reward and
a pessimistic cost, and a known strictly safe policy played until the pessimistic program can be trusted."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...models.episodic import EpisodicCMDP
from .base import (
    EpisodePlan,
    EpisodeSource,
    ProgramEpisodicAgent,
    _check_probability,
    _check_scale,
    learner_support,
    require_safe_policy,
)
from .estimates import hoeffding_width, policy_totals
from .optimistic import DELTA, _add_per_step

__all__ = ["OptPessLp"]


class OptPessLp(ProgramEpisodicAgent):
    """OptPess-LP: each episode, the occupancy program on ``P̂`` with ``r + α_r β̄`` and ``c + α_c β̄``.

    ``β̄(s,a) = sqrt(L / max(1, N(s,a)))``, ``L = ln(32 S² H K / δ)``, ``α_c = 1 + S H`` and
    ``α_r = 1 + S H + 4 H (1 + S H) / Δ`` with ``Δ`` the safe policy's slack (``τ − C_b``). Before solving, the safe
    policy's pessimistic costs on ``P̂`` are evaluated; while ``max_m g_m`` of them is ``>= −Δ/2`` (for one budget:
    the pessimistic cost of π_0 is ``>= (τ + C_b)/2``) the safe policy is played (labelled ``safe-rule``) without
    solving. When the program is infeasible the safe policy is played (``safe-policy``). The constants are those of
    the DOPE authors' public implementation of OptPess-LP (a minimisation there; the signs turned for the reward
    maximised here).

    Parameters
    ----------
    model : EpisodicCMDP
        Must declare a strictly safe policy.
    backend, seed, episodes, replan
        As for :class:`~curlopt.agents.episodic.optimistic.OptCmdp`.
    delta : float, default 0.01
    bonus_scale : float, default 1
        A factor on both bonuses (1: the paper's).
    reward_bonus_scale : float, optional
        A factor on the reward bonus alone, instead of ``bonus_scale`` (default: ``bonus_scale``). The cost bonus
        sets when the safe-policy test passes and how pessimistic the program is; the reward bonus only how much it
        explores (docs/math.md, "Zero violation and sublinear regret: the constants measured").
    """

    name = "optpess-lp"
    uses_safe_policy = True

    def __init__(self, model: EpisodicCMDP, backend: Any = "auto", seed: Any = None, episodes: int | None = None,
                 delta: float = DELTA, bonus_scale: float = 1.0, replan: str = "every-episode",
                 reward_bonus_scale: float | None = None, **backend_options: Any):
        self.safe = require_safe_policy(model, self.name)
        self.delta = _check_probability(delta, "delta")
        self.bonus_scale = _check_scale(bonus_scale, "bonus_scale")
        self.reward_bonus_scale = None if reward_bonus_scale is None else _check_scale(reward_bonus_scale,
                                                                                        "reward_bonus_scale")
        super().__init__(model, backend, seed, episodes, replan, **backend_options)

    def _build_program(self) -> Any:
        from ...programs import EpisodicOccupancyProgram

        S, A = self.model.n_states, self.model.n_actions
        # a uniform placeholder kernel, replaced before every solve (the agent never reads the model's kernel)
        return EpisodicOccupancyProgram(self.model, kernels=np.full((S, A, S), 1.0 / S),
                                        support=learner_support(self.model))

    def log_term(self) -> float:
        """``L = ln(32 S² H K / δ)``."""
        S = self.model.n_states
        return math.log(32 * S ** 2 * self.horizon * self.planned_episodes / self.delta)

    def width(self) -> np.ndarray:
        """β̄(s,a): (S, A) pooled, (H − 1, S, A) per step."""
        beta = hoeffding_width(self.counts.visits, self.log_term())
        return beta[0] if self.counts.pooled else beta

    def bonuses(self) -> tuple[np.ndarray, np.ndarray]:
        """``(α_r β̄, α_c β̄)`` times ``bonus_scale`` (the first times ``reward_bonus_scale`` when given)."""
        S, H = self.model.n_states, self.horizon
        alpha_c = 1 + S * H
        alpha_r = 1 + S * H + 4 * H * (1 + S * H) / self.safe.slack
        beta = self.width()
        reward_scale = self.bonus_scale if self.reward_bonus_scale is None else self.reward_bonus_scale
        return reward_scale * alpha_r * beta, self.bonus_scale * alpha_c * beta

    def _pessimistic_costs(self) -> np.ndarray:
        return _add_per_step(self.step_costs, self.bonuses()[1])

    def safe_policy_test(self) -> float:
        """``max_m g_m`` of the safe policy's pessimistic per-episode costs on ``P̂``; the safe policy is played
        while this is ``>= −Δ/2``."""
        totals = policy_totals(self.model.initial, self.kernel_estimate(), np.asarray(self.safe.policy),
                               self._pessimistic_costs())
        return float(np.max(self.model.constraint_values(totals)))

    def _before_solve(self, k: int) -> EpisodePlan | None:
        level = self.safe_policy_test()
        if level >= -self.safe.slack / 2:
            return EpisodePlan(self.safe.policy, EpisodeSource.SAFE_RULE,
                               message=f"safe policy's pessimistic max_m g_m = {level:.4g} >= −Δ/2 ="
                                       f" {-self.safe.slack / 2:.4g}")
        return None

    def _update_program(self, k: int) -> float:
        reward_bonus, cost_penalty = self.bonuses()
        self.program.update(kernels=self.kernel_estimate(), rewards=_add_per_step(self.step_rewards, reward_bonus),
                            costs=_add_per_step(self.step_costs, cost_penalty), epsilon=0.0)
        return 0.0

    def _on_infeasible(self, result: Any, epsilon: float) -> EpisodePlan | None:
        return EpisodePlan(self.safe.policy, EpisodeSource.SAFE, result.tight_status.value,
                           "the pessimistic program was infeasible; played the declared safe policy", epsilon)

    def describe(self) -> dict[str, Any]:
        out = {**super().describe(), "delta": self.delta, "bonus_scale": self.bonus_scale, "slack": self.safe.slack}
        if self.reward_bonus_scale is not None:  # only when set: the records of the default are unchanged
            out["reward_bonus_scale"] = self.reward_bonus_scale
        return out

"""The episodic agents that solve the extended optimistic program over z_h(s,a,s'): OptCMDP, DOPE, UC-CURL.

Each episode the program chooses, jointly with the occupancy, a kernel inside a confidence set around ``P̂`` (per
entry for OptCMDP and DOPE, L1 per pair for UC-CURL); docs/math.md, "The episodic setting", states each
algorithm's widths, bonuses and constants, the paper's choice and ours.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import AgentError
from ...models.episodic import EpisodicCMDP
from ...programs.tightness import TIGHTNESS_CONSTANT_MAX, tightness
from ..signals import OPTIMISTIC
from .base import (
    EpisodePlan,
    EpisodeSource,
    ProgramEpisodicAgent,
    _check_probability,
    _check_scale,
    learner_support,
    require_safe_policy,
)
from .estimates import bernstein_width, l1_width

__all__ = ["OptCmdp", "Dope", "EpisodicUcCurl", "episode_tightness", "DELTA"]

#: the confidence parameter δ of the agents' widths unless given (the papers leave it to the user)
DELTA = 0.01


def episode_tightness(k: int, constant: float, horizon: int, lower_bound: float | None = None) -> float:
    """``ε_k = K_ε · H · sqrt(ln τ / τ)``, ``τ = max(k, K_l)``: the infinite-horizon schedule in the number of
    episodes, times H because the constraints bound per-episode totals (H steps of per-step costs)."""
    return horizon * tightness(k, constant, lower_bound)


def _extended_program(model: EpisodicCMDP, confidence: str) -> Any:
    """The extended program on a uniform placeholder estimate (replaced before every solve: the agent never reads
    the model's kernel)."""
    from ...programs import EpisodicExtendedProgram

    S, A = model.n_states, model.n_actions
    return EpisodicExtendedProgram(model, kernel=np.full((S, A, S), 1.0 / S), radius=1.0, confidence=confidence,
                                   support=learner_support(model))


class _PerEntryAgent(ProgramEpisodicAgent):
    """The extended program with per-entry empirical Bernstein sets (OptCMDP, DOPE)."""

    def __init__(self, model: EpisodicCMDP, backend: Any = "auto", seed: Any = None, episodes: int | None = None,
                 delta: float = DELTA, width_scale: float = 1.0, replan: str = "every-episode",
                 **backend_options: Any):
        self.delta = _check_probability(delta, "delta")
        self.width_scale = _check_scale(width_scale, "width_scale")
        super().__init__(model, backend, seed, episodes, replan, **backend_options)

    def _build_program(self) -> Any:
        return _extended_program(self.model, "entry")

    def log_term(self) -> float:
        """``L = ln(2 S A H K / δ)`` (the DOPE paper's, for the transition widths)."""
        m = self.model
        return math.log(2 * m.n_states * m.n_actions * self.horizon * self.planned_episodes / self.delta)

    def widths(self) -> np.ndarray:
        """``β(s,a,s')``: (S, A, S) for pooled counts, (H − 1, S, A, S) per step."""
        beta = self.width_scale * bernstein_width(self.counts.transitions, self.log_term())
        beta = np.minimum(beta, 1.0)
        return beta[0] if self.counts.pooled else beta

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "delta": self.delta, "width_scale": self.width_scale}


class OptCmdp(_PerEntryAgent):
    """OptCMDP (Efroni, Mansour, Pirotta 2020): each episode, the optimistic extended LP.

    maximise ``f(λ)`` over occupancies ``z_h(s,a,s')`` whose kernel lies in the per-entry empirical Bernstein set
    around ``P̂``, subject to the constraints on the model's (known) costs. With unknown signals the paper adds
    ``r̂ + b_r`` and ``ĉ − b_c``; with known rewards and costs (the default, as in the DOPE authors'
    implementation of OptCMDP) both bonuses are 0, and with ``rewards="learned"`` it plans on exactly those, with
    Hoeffding's width (:mod:`curlopt.agents.signals`). When the program is infeasible (the set holds no kernel on which
    the budget can be met) the backend's fallback program without the constraint rows is played, labelled
    ``fallback``: OptCMDP has no safe policy.

    Parameters
    ----------
    model : EpisodicCMDP
    backend : str or Backend, default "auto"
    seed : optional
    episodes : int, optional
        K, in ``L = ln(2 S A H K / δ)``; the loop sets it to the run's length.
    delta : float, default 0.01
        δ of the widths.
    width_scale : float, default 1
        A factor on every width β (1: the paper's).
    replan : {"every-episode", "doubling"}, default "every-episode"
        As for :class:`~curlopt.agents.episodic.base.ProgramEpisodicAgent` (the paper solves every episode).
    """

    name = "opt-cmdp"
    #: learned signals: the paper's ``ĉ − b_c``, optimistic in the costs (with our Hoeffding width)
    LEARNED_COSTS = OPTIMISTIC

    def _update_program(self, k: int) -> float:
        self.program.update(kernel=self.kernel_estimate(), radius=self.widths(),
                            rewards=self.step_rewards, costs=self.step_costs, epsilon=0.0)
        return 0.0


class Dope(_PerEntryAgent):
    """DOPE (Bura, HasanzadeZonuzy, Kalathil, Shakkottai, Chamberland 2022): optimistic model and reward,
    pessimistic cost, the safe baseline for the first K_0 episodes.

    Each episode after the warm-up: the extended program over the per-entry Bernstein set, with rewards
    ``r + (H² / Δ) β̄(s,a)`` and costs ``c + H β̄(s,a)``, ``β̄(s,a) = Σ_{s'} β(s,a,s')`` and ``Δ`` the safe
    policy's slack (``τ − C_b``). Its first ``K_0 = ⌈S² A H³ / Δ²⌉`` episodes play the declared safe policy; when
    the program is infeasible afterwards, the safe policy is played (labelled ``safe-policy``, or ``safe-policy-bound``
    when the program's least pessimistic cost over the confidence sets, found by extended backward induction, already
    exceeds the budget, so that no LP is solved). The bonus factors
    and K_0 are those of the DOPE authors' public implementation (their paper's analysis has the same orders).

    Parameters
    ----------
    model : EpisodicCMDP
        Must declare a strictly safe policy (``EpisodicCMDP(..., safe_policy=...)``).
    backend, seed, episodes, delta, width_scale, replan
        As for :class:`OptCmdp`.
    warmup_episodes : int, optional
        K_0; default ``⌈S² A H³ / Δ²⌉``.
    bonus_scale : float, default 1
        A factor on both bonuses (1: the paper's).
    reward_bonus_scale : float, optional
        A factor on the reward bonus alone, instead of ``bonus_scale`` (default: ``bonus_scale``).

    Raises
    ------
    AgentError
        Without a declared safe policy, or with one that is not strictly safe.
    """

    name = "dope"
    uses_safe_policy = True

    def __init__(self, model: EpisodicCMDP, backend: Any = "auto", seed: Any = None, episodes: int | None = None,
                 delta: float = DELTA, width_scale: float = 1.0, warmup_episodes: int | None = None,
                 bonus_scale: float = 1.0, replan: str = "every-episode", reward_bonus_scale: float | None = None,
                 **backend_options: Any):
        self.safe = require_safe_policy(model, self.name)
        self.reward_bonus_scale = None if reward_bonus_scale is None else _check_scale(reward_bonus_scale,
                                                                                        "reward_bonus_scale")
        S, A, H = model.n_states, model.n_actions, model.horizon
        if warmup_episodes is None:
            warmup_episodes = math.ceil(S ** 2 * A * H ** 3 / self.safe.slack ** 2)
        elif isinstance(warmup_episodes, bool) or not isinstance(warmup_episodes, (int, np.integer)) or warmup_episodes < 0:
            raise AgentError(f"warmup_episodes (K_0) must be an integer >= 0 or None, got {warmup_episodes!r}.")
        self.warmup_episodes = int(warmup_episodes)
        self.bonus_scale = _check_scale(bonus_scale, "bonus_scale")
        super().__init__(model, backend, seed, episodes, delta, width_scale, replan, **backend_options)

    def _before_solve(self, k: int) -> EpisodePlan | None:
        if k <= self.warmup_episodes:
            return EpisodePlan(self.safe.policy, EpisodeSource.WARM_UP,
                               message=f"warm-up: episode {k} of K_0 = {self.warmup_episodes}")
        return None

    def bonuses(self) -> tuple[np.ndarray, np.ndarray]:
        """``(reward bonus, cost penalty)`` per pair: ``(H²/Δ) β̄`` and ``H β̄``, shape (S, A) or (H − 1, S, A)."""
        total = self.widths().sum(axis=-1)
        H = self.horizon
        reward_scale = self.bonus_scale if self.reward_bonus_scale is None else self.reward_bonus_scale
        return reward_scale * H ** 2 / self.safe.slack * total, self.bonus_scale * H * total

    def _update_program(self, k: int) -> float:
        reward_bonus, cost_penalty = self.bonuses()
        self.program.update(kernel=self.kernel_estimate(), radius=self.widths(),
                            rewards=_add_per_step(self.step_rewards, reward_bonus),
                            costs=_add_per_step(self.step_costs, cost_penalty), epsilon=0.0)
        return 0.0

    def _on_infeasible(self, result: Any, epsilon: float) -> EpisodePlan | None:
        return EpisodePlan(self.safe.policy, EpisodeSource.SAFE, result.tight_status.value,
                           "the pessimistic program was infeasible; played the declared safe policy", epsilon)

    def _decided_without_solve(self, epsilon: float) -> EpisodePlan | None:
        """The safe policy, without a solve, when the pessimistic program is proved infeasible: its least cost over
        the confidence sets (extended backward induction,
        :meth:`~curlopt.programs.EpisodicExtendedProgram.infeasibility_bound`) is above the budget. The LP would
        say the same, slowly: a hot-started simplex takes long to prove infeasibility."""
        bound = self.program.infeasibility_bound()
        if bound is None:
            return None
        return EpisodePlan(self.safe.policy, EpisodeSource.SAFE_BOUND, "infeasible",
                           f"the pessimistic program is infeasible, {bound.describe()}; played the declared safe"
                           " policy without a solve", epsilon)

    def describe(self) -> dict[str, Any]:
        out = {**super().describe(), "warmup_episodes": self.warmup_episodes, "bonus_scale": self.bonus_scale,
               "slack": self.safe.slack}
        if self.reward_bonus_scale is not None:  # only when set: the records of the default are unchanged
            out["reward_bonus_scale"] = self.reward_bonus_scale
        return out


class EpisodicUcCurl(ProgramEpisodicAgent):
    """UC-CURL per episode: the optimistic ε-tight program over L1 confidence sets.

    Each episode k: the extended program over ``Σ_{s'} |P(s'|s,a) − P̂(s'|s,a)| <= β(s,a)``, UC-CURL's radius
    ``β = sqrt(14 S ln(2 A t) / max(1, N(s,a)))`` with ``t = (k − 1) H + 1`` the episode's first step, and the
    constraints tightened to ``g_m(ζ) <= −ε_k``, ``ε_k = K_ε H sqrt(ln τ / τ)``, ``τ = max(k, K_l)``
    (:func:`episode_tightness`). When the ε-tight program is infeasible the backend's fallback (without the
    constraint rows) is played, labelled ``fallback``.

    Parameters
    ----------
    model : EpisodicCMDP
    backend, seed, episodes, replan
        As for :class:`OptCmdp`.
    tightness_constant : float, default 1
        K_ε.
    episodes_lower_bound : float, optional
        K_l: with it, ``τ = max(k, K_l)``.
    radius_scale : float, default 1
        A factor on β.
    on_infeasible : {"fallback", "safe-policy"}, default "fallback"
        What is played when the ε-tight program is infeasible: the program without its constraint rows (the
        paper's agent has no safe policy), or the model's declared safe policy (labelled ``safe-policy``; an option
        for the zero-violation study, which needs a declared strictly safe policy). With ``"safe-policy"`` a failed
        solve plays the safe policy too, instead of the previous episode's policy (or uniform in the first).
    """

    name = "uc-curl"

    def __init__(self, model: EpisodicCMDP, backend: Any = "auto", seed: Any = None, episodes: int | None = None,
                 tightness_constant: float = 1.0, episodes_lower_bound: float | None = None,
                 radius_scale: float = 1.0, replan: str = "every-episode", on_infeasible: str = "fallback",
                 **backend_options: Any):
        if on_infeasible not in ("fallback", "safe-policy"):
            raise AgentError(f"on_infeasible must be 'fallback' or 'safe-policy', got {on_infeasible!r}.")
        self.on_infeasible = on_infeasible
        #: the declared safe policy, read only with on_infeasible="safe-policy"
        self.safe = require_safe_policy(model, f"{self.name} with on_infeasible='safe-policy'") \
            if on_infeasible == "safe-policy" else None
        value = _check_scale(tightness_constant, "tightness_constant (K_ε)")
        if value > TIGHTNESS_CONSTANT_MAX:
            raise AgentError(f"tightness_constant (K_ε) must be at most {TIGHTNESS_CONSTANT_MAX:.0f}, got {value!r}.")
        if episodes_lower_bound is not None and (isinstance(episodes_lower_bound, bool) or not isinstance(
                episodes_lower_bound, (int, float)) or not math.isfinite(episodes_lower_bound) or episodes_lower_bound < 1):
            raise AgentError(f"episodes_lower_bound (K_l) must be a number >= 1 or None, got {episodes_lower_bound!r}.")
        self.tightness_constant = value
        self.episodes_lower_bound = episodes_lower_bound
        self.radius_scale = _check_scale(radius_scale, "radius_scale")
        super().__init__(model, backend, seed, episodes, replan, **backend_options)

    def _build_program(self) -> Any:
        return _extended_program(self.model, "l1")

    def epsilon(self, k: int) -> float:
        return episode_tightness(k, self.tightness_constant, self.horizon, self.episodes_lower_bound)

    def radius(self, k: int) -> np.ndarray:
        """β(s,a) of episode k: (S, A) for pooled counts, (H − 1, S, A) per step."""
        m = self.model
        beta = self.radius_scale * l1_width(self.counts.visits, m.n_states, m.n_actions, (k - 1) * self.horizon + 1)
        return beta[0] if self.counts.pooled else beta

    def _update_program(self, k: int) -> float:
        eps = self.epsilon(k)
        self.program.update(kernel=self.kernel_estimate(), radius=self.radius(k), rewards=self.step_rewards,
                            costs=self.step_costs, epsilon=eps)
        return eps

    def _on_infeasible(self, result: Any, epsilon: float) -> EpisodePlan | None:
        if self.safe is None:
            return None
        return EpisodePlan(self.safe.policy, EpisodeSource.SAFE, result.tight_status.value,
                           "the ε-tight program was infeasible; played the declared safe policy", epsilon)

    def _plan_from(self, result: Any, epsilon: float, elapsed: float) -> EpisodePlan:
        plan = super()._plan_from(result, epsilon, elapsed)
        if self.safe is not None and plan.source in (EpisodeSource.KEPT, EpisodeSource.UNIFORM):
            # on_infeasible="safe-policy": a failed solve plays the declared safe policy too, not an unchecked one
            return EpisodePlan(self.safe.policy, EpisodeSource.SAFE, plan.status,
                               f"the solver failed ({plan.status}); played the declared safe policy: {plan.message}",
                               epsilon, elapsed)
        return plan

    def describe(self) -> dict[str, Any]:
        out = {**super().describe(), "tightness": self.tightness_constant,
               "episodes_lower_bound": self.episodes_lower_bound, "radius_scale": self.radius_scale}
        if self.safe is not None:  # only when set: the records of the default are unchanged
            out["on_infeasible"] = self.on_infeasible
        return out


def _add_per_step(step_signals: np.ndarray, bonus: np.ndarray) -> np.ndarray:
    """``signal_h(s,a) + bonus`` for every signal: ``step_signals`` (H, n, S, A); ``bonus`` (S, A) for every step,
    or (H − 1, S, A) per transition step (the last step, which has no transition, gets no bonus)."""
    out = np.array(step_signals, dtype=float)
    if bonus.ndim == 2:
        out += bonus[None, None]
    else:
        out[: bonus.shape[0]] += bonus[:, None]
    return out

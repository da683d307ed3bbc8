"""The episodic agents of the concave-utility systems: ConRL and MOMA (two versions).

``conrl``
    Brantley, Dudík, Lykouris, Miryoosefi, Simchowitz, Slivkins, Sun, "Constrained Episodic Reinforcement Learning
    in Concave-Convex and Knapsack Settings" (NeurIPS 2020): each episode, the concave program on the empirical
    kernel with a bonus added to every reward signal and subtracted from every cost signal.
``moma``
    Yu, Tian, Zhang, Sra, "Provably Efficient Algorithms for Multi-Objective Competitive RL" (ICML 2021), its
    single-agent case (a fixed opponent): Blackwell approachability in its online-learning (dual) form. Each episode
    a direction is chosen from the average of the return vectors observed so far, and the optimistic best response
    to the scalarised reward (value iteration on the empirical kernel with a bonus) is played; only the average
    of the episodes approaches the optimum and the constraint set.
``moma-program``
    The closest version in the per-episode setting of the other agents: the concave program on the empirical kernel
    with MOMA's bonus, solved each episode, so every episode's policy is itself optimistic-feasible.

docs/math.md, "The episodic setting", states each program, bonus and constant, the paper's and ours.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import AgentError
from ...models.episodic import EpisodicCMDP
from .base import (
    EpisodePlan,
    EpisodeSource,
    EpisodicAgent,
    ProgramEpisodicAgent,
    _check_probability,
    _check_scale,
    learner_support,
)
from .optimistic import DELTA, _add_per_step

__all__ = ["ConRl", "Moma", "MomaProgram", "optimistic_backward_induction"]


def _occupancy_program(model: EpisodicCMDP) -> Any:
    """The occupancy program on a uniform placeholder kernel (replaced before every solve: the agents never read
    the model's kernel)."""
    from ...programs import EpisodicOccupancyProgram

    S, A = model.n_states, model.n_actions
    return EpisodicOccupancyProgram(model, kernels=np.full((S, A, S), 1.0 / S), support=learner_support(model))


def _shifted(rewards: np.ndarray, costs: np.ndarray, bonus: np.ndarray,
             costs_nonnegative: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(r + b, c − b)`` per step, every signal (``rewards`` (H, K, S, A), ``costs`` (H, d, S, A)): optimistic for
    an f non-decreasing in every λ_k and g_m non-decreasing in every ζ_i (the budget form). When the model's costs
    are all >= 0 (consumptions; ``costs_nonnegative``) the shifted costs stop at 0: no cost total can be negative,
    so ``max(c − b, 0)`` is still optimistic, and a g that is non-decreasing only on the non-negative orthant (a
    norm or a quadratic centred at 0) stays optimistic."""
    shifted_costs = _add_per_step(costs, -bonus)
    if costs_nonnegative:
        shifted_costs = np.maximum(shifted_costs, 0.0)
    return _add_per_step(rewards, bonus), shifted_costs


def estimated_signals(agent: EpisodicAgent) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The signals a ``rewards="learned"`` agent plans on before its bonus: the running means of the observed
    rewards (H, K, S, A) and costs (H, d, S, A) per step, state and action (0 where never observed: the bonus,
    at its cap there, carries the whole uncertainty, as in the papers' empirical estimates), and the visits of
    each cell (H, S, A).

    Every visit of a cell (h, s, a) with h < H is also a transition from (s, a) (pooled counts) or from (s, a) at
    step h (per-step counts), so a cell's visits never exceed the transition count the known-signal bonus uses:
    the bonus on the cell's visits is at least the known one, and it covers the signal's own estimation error too.
    """
    estimates = agent.signal_estimates
    if estimates is None:
        raise AgentError(f"{agent.name}: the estimated signals exist only with rewards=\"learned\".")
    m = agent.model
    H, S, A = agent.horizon, m.n_states, m.n_actions
    tables = estimates.means.reshape(-1, H, S, A).transpose(1, 0, 2, 3)
    return tables[:, : m.n_rewards], tables[:, m.n_rewards:], estimates.visits.reshape(H, S, A)


class ConRl(ProgramEpisodicAgent):
    """ConRL: each episode, ``max f(λ^)`` subject to ``g(ζ^) <= 0`` on ``P̂`` with rewards ``r + b``, costs ``c − b``.

    ``b_k(s,a) = min(2H, 2H sqrt(2 ln(16 S A H k² / δ) / max(1, N(s,a))))`` — the bonus covers the estimation
    error of a per-episode value (of size up to H) through the kernel; ``k`` is the episode. The paper writes the
    optimistic program with boxes ``|ξ − λ^| <= B``, ``|ζ − ζ^| <= B`` (``B`` the bonus's per-episode total) and
    maximises over them; for ``f`` non-decreasing in every reward total and ``g`` non-decreasing in every cost
    total (the budget form, sums of logs, α-fairness) the box optimum sits at ``λ^ + B`` and ``ζ^ − B``, which is
    the program solved here. When the program is infeasible the backend's fallback (without constraint rows) is
    played, labelled ``fallback``: ConRL has no safe policy.

    Parameters
    ----------
    model : EpisodicCMDP
    backend : str or Backend, default "auto"
        ``auto`` takes HiGHS for LP-representable utilities and a conic/NLP backend for a concave f.
    seed, episodes, replan
        As for :class:`~curlopt.agents.episodic.base.ProgramEpisodicAgent`.
    delta : float, default 0.01
    bonus_scale : float, default 1
        A factor on ``b`` (1: the paper's form).
    rewards : {"known", "learned"}, default "known"
        ``learned``: the paper's estimates — the running means ``r^``, ``c^`` of the observed signals per step, state
        and action (0 before any observation) — with the same bonus ``b`` added to ``r^`` and subtracted from
        ``c^``, ``N`` the visits of the cell (h, s, a), at every step (the last one's signal is estimated too).
    """

    name = "conrl"

    def __init__(self, model: EpisodicCMDP, backend: Any = "auto", seed: Any = None, episodes: int | None = None,
                 delta: float = DELTA, bonus_scale: float = 1.0, replan: str = "every-episode",
                 rewards: str = "known", **backend_options: Any):
        self.delta = _check_probability(delta, "delta")
        self.bonus_scale = _check_scale(bonus_scale, "bonus_scale")
        super().__init__(model, backend, seed, episodes, replan, rewards, **backend_options)

    def _build_program(self) -> Any:
        return _occupancy_program(self.model)

    def log_term(self, k: int) -> float:
        """``ln(16 S A H k² / δ)``."""
        m = self.model
        return math.log(16 * m.n_states * m.n_actions * self.horizon * k ** 2 / self.delta)

    def bonus(self, k: int) -> np.ndarray:
        """``b_k(s,a)``: (S, A) pooled, (H − 1, S, A) per step; with learned signals (H, S, A), on the visits of
        each cell (h, s, a)."""
        H = self.horizon
        if self.signal_estimates is not None:
            visits = estimated_signals(self)[2]
        else:
            visits = self.counts.visits
        b = self.bonus_scale * np.minimum(2 * H, 2 * H * np.sqrt(2 * self.log_term(k) / np.maximum(visits, 1.0)))
        return b[0] if self.signal_estimates is None and self.counts.pooled else b

    def planning_signals(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The rewards (H, K, S, A) and costs (H, d, S, A) of episode k's program: ``r + b_k``, ``c − b_k``, on
        the model's signals or (learned) on the running means."""
        return _planning_signals(self, self.bonus(k))

    def _update_program(self, k: int) -> float:
        rewards, costs = self.planning_signals(k)
        self.program.update(kernels=self.kernel_estimate(), rewards=rewards, costs=costs, epsilon=0.0)
        return 0.0

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "delta": self.delta, "bonus_scale": self.bonus_scale}


def _planning_signals(agent: EpisodicAgent, bonus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(r + b, c − b)`` on the model's signals, or on the running means for ``rewards="learned"``; the costs stop
    at 0 when the model's are all >= 0 (the signal's range, which a learning agent is told as the others are)."""
    m = agent.model
    nonnegative = bool(np.all(m.step_costs >= 0))
    if agent.signal_estimates is None:
        return _shifted(m.step_rewards, m.step_costs, bonus, nonnegative)
    rewards, costs, _ = estimated_signals(agent)
    return _shifted(rewards, costs, bonus, nonnegative)


def moma_bonus(visits: np.ndarray, horizon: int, log_term: float) -> np.ndarray:
    """MOMA's Hoeffding bonus per unit of signal, ``min(H, H sqrt(2 L / max(1, N)))``, any shape."""
    return np.minimum(horizon, horizon * np.sqrt(2 * log_term / np.maximum(visits, 1.0)))


def optimistic_backward_induction(initial: np.ndarray, kernel: np.ndarray, signal: np.ndarray,
                                  cap: float) -> tuple[np.ndarray, float]:
    """Value iteration ``Q_h = x_h + P̂ V_{h+1}``, ``V_h = min((H − h) cap, max_a Q_h)`` (steps h = 0..H−1): the
    greedy deterministic policy (H, S, A) (argmax of the unclipped ``Q_h``, the first maximiser on ties) and its
    optimistic value ``μ·V_1``.

    ``signal`` (H, S, A) is the optimistic per-step signal (the bonus already added), ``kernel`` (S, A, S) or
    (H − 1, S, A, S), and ``cap`` the largest true per-step value: no true value from step h exceeds
    ``(H − h) cap``, so the values passed back are clipped there (UCBVI's clip). The action is chosen before the
    clip: clipped, every action of a state ties while the bonus is large, and the first one would always win.
    """
    H, S, A = signal.shape
    values = np.zeros(S)
    policy = np.zeros((H, S, A))
    for h in range(H - 1, -1, -1):
        q = np.array(signal[h], dtype=float)
        if h < H - 1:
            q += (kernel if kernel.ndim == 3 else kernel[h]) @ values
        best = np.argmax(q, axis=1)
        values = np.minimum(q[np.arange(S), best], (H - h) * cap)
        policy[h, np.arange(S), best] = 1.0
    return policy, float(np.asarray(initial, dtype=float) @ values)


class Moma(EpisodicAgent):
    """MOMA (Yu, Tian, Zhang, Sra 2021), single-agent case: approachability in its dual form.

    The paper approaches a target set with the average of the episodes' return vectors; the direction of each
    episode is chosen by an online learner on the dual, and the policy is the optimistic best response to the
    scalarised reward. Here the vector is ``(λ, ζ)`` (observed per-episode totals), the target is the optimum of
    ``f`` over ``{g <= 0}``, and the dual learner is:

    - for the objective, follow-the-leader on the concave conjugate of ``f``, whose leader is ``∇f(λ̄)`` at the
      average ``λ̄`` of the observed reward totals, normalised to ``θ = ∇f(λ̄) / ‖∇f(λ̄)‖_1`` (a direction);
    - for the constraints, projected online gradient ascent on multipliers ``μ_{k+1} = (μ_k + η g(ζ_k))_+`` with
      ``η = 1 / (H sqrt(K))`` and ``ζ_k`` the observed cost totals of episode k.

    The policy of episode k is greedy for ``x_h = θ·r_h − Σ_m μ_m ∇g_m(ζ̄)·c_h`` plus the bonus
    ``‖x‖ · min(H, H sqrt(2 L / N))``, ``‖x‖ = ‖θ‖_1 + ‖Σ μ ∇g‖_1``, ``L = ln(2 S A H K / δ)`` (added as the
    other agents add theirs: at every step for pooled counts, at the H − 1 transition steps per step), by value
    iteration on ``P̂`` with the values clipped at ``(H − h) max x``. The paper bounds the distance of the *average* to the target
    (here: the weaker regret ``K f(λ*) − K f(λ̄)`` and the constraints of the average); every episode's policy is
    deterministic and unconstrained, so the per-episode regret and the strong violation are not what it controls.
    The dual learner, η and the bonus constant are our choices (docs/math.md says where the paper is silent).

    Parameters
    ----------
    model : EpisodicCMDP
        Every ``g_m`` must be differentiable where it is evaluated (its ``gradient``); f too, on its domain.
    seed, episodes
        As for :class:`~curlopt.agents.episodic.base.EpisodicAgent`.
    delta : float, default 0.01
    bonus_scale : float, default 1
        A factor on the bonus.
    step_scale : float, default 1
        A factor on the multipliers' step η.
    rewards : {"known", "learned"}, default "known"
        ``learned``: ``x_h`` is built from the running means ``r^``, ``c^`` of the observed signals per step, state
        and action (0 before any observation), the bonus counts the visits of each cell (h, s, a) and is added at
        every step (the last one's signal is estimated too), the values are clipped at ``(H − h)`` times the
        largest ``x`` the signals' ranges allow, and the averages ``λ̄``, ``ζ̄`` and the multipliers' steps use the
        observed (possibly noisy) per-episode totals.
    """

    name = "moma"

    def __init__(self, model: EpisodicCMDP, seed: Any = None, episodes: int | None = None, delta: float = DELTA,
                 bonus_scale: float = 1.0, step_scale: float = 1.0, rewards: str = "known"):
        self.delta = _check_probability(delta, "delta")
        self.bonus_scale = _check_scale(bonus_scale, "bonus_scale")
        self.step_scale = _check_scale(step_scale, "step_scale")
        super().__init__(model, seed, episodes, rewards)

    def reset(self, seed: Any = None, episodes: int | None = None) -> None:
        super().reset(seed, episodes)
        m = self.model
        #: sums of the observed per-episode reward and cost totals
        self.reward_sum = np.zeros(m.n_rewards)
        self.cost_sum = np.zeros(m.n_costs)
        #: the constraint multipliers μ (M,)
        self.multipliers = np.zeros(m.n_constraints)
        #: the observed totals (λ, ζ) of the episode under way (learned signals), read by :meth:`end_episode`
        self._observed_totals: tuple[np.ndarray, np.ndarray] | None = None

    def log_term(self) -> float:
        """``L = ln(2 S A H K / δ)``."""
        m = self.model
        return math.log(2 * m.n_states * m.n_actions * self.horizon * self.planned_episodes / self.delta)

    def step_size(self) -> float:
        """``η = step_scale / (H sqrt(K))``."""
        return self.step_scale / (self.horizon * math.sqrt(self.planned_episodes))

    def direction(self) -> np.ndarray:
        """``θ = ∇f(λ̄) / ‖∇f(λ̄)‖_1`` at the average observed reward totals (the origin before any episode),
        moved inside f's domain by ``1e-9 H`` where it lies on the boundary (a log at 0)."""
        m = self.model
        mean = self.reward_sum / max(self.episode, 1)
        lower = np.asarray(m.objective.domain_lower(), dtype=float)
        point = np.maximum(mean, lower + 1e-9 * self.horizon)
        grad = np.asarray(m.objective.gradient(point), dtype=float).reshape(-1)
        if not np.all(np.isfinite(grad)):
            raise AgentError(f"moma: the gradient of f at {point.tolist()} is not finite ({grad.tolist()}).")
        norm = np.abs(grad).sum()
        return grad / norm if norm > 0 else grad

    def cost_weights(self) -> np.ndarray:
        """``Σ_m μ_m ∇g_m(ζ̄)`` (d,), at the average observed cost totals."""
        m = self.model
        if not m.constraints:
            return np.zeros(m.n_costs)
        mean = self.cost_sum / max(self.episode, 1)
        grads = np.array([np.asarray(g.gradient(mean), dtype=float).reshape(-1) for g in m.constraints])
        return self.multipliers @ grads

    def scalarised(self) -> tuple[np.ndarray, float]:
        """The per-step signal ``x_h(s,a)`` (H, S, A) and its scale ``‖θ‖_1 + ‖Σ μ ∇g‖_1`` (on the running means of
        the observed signals with ``rewards="learned"``)."""
        theta, weights = self.direction(), self.cost_weights()
        m = self.model
        if self.signal_estimates is None:
            rewards, costs = m.step_rewards, m.step_costs
        else:
            rewards, costs, _ = estimated_signals(self)
        signal = np.einsum("k,hksa->hsa", theta, rewards) - np.einsum("i,hisa->hsa", weights, costs)
        return signal, float(np.abs(theta).sum() + np.abs(weights).sum())

    def signal_cap(self, signal: np.ndarray) -> float:
        """The largest true per-step ``x``: its largest value on the model's signals, or (learned) the largest the
        signals' ranges ``[lo, hi]`` allow, ``Σ_k max(θ_k lo_k, θ_k hi_k) + Σ_i max(−w_i lo_i, −w_i hi_i)``."""
        if self.signal_estimates is None:
            return float(np.max(signal))
        estimates = self.signal_estimates
        weights = np.concatenate([self.direction(), -self.cost_weights()])
        return float(np.maximum(weights * estimates.low, weights * estimates.high).sum())

    def _plan(self, k: int) -> EpisodePlan:
        signal, scale = self.scalarised()
        if self.signal_estimates is None:
            bonus = self.bonus_scale * scale * moma_bonus(self.counts.visits, self.horizon, self.log_term())
            bonus = bonus[0] if self.counts.pooled else bonus
        else:
            bonus = self.bonus_scale * scale * moma_bonus(estimated_signals(self)[2], self.horizon, self.log_term())
        optimistic = _add_per_step(signal[:, None], bonus)[:, 0]
        policy, value = optimistic_backward_induction(self.model.initial, self.kernel_estimate(), optimistic,
                                                      self.signal_cap(signal))
        return EpisodePlan(policy, EpisodeSource.PROGRAM, "optimal",
                           f"best response to θ = {np.round(self.direction(), 4).tolist()},"
                           f" μ = {np.round(self.multipliers, 4).tolist()}", planned_value=value)

    def observe_signals(self, states: np.ndarray, actions: np.ndarray, rewards: np.ndarray, costs: np.ndarray) -> None:
        """Learn the episode's observed signals (learned signals only) and keep their totals for the averages."""
        super().observe_signals(states, actions, rewards, costs)
        if self.signal_estimates is not None:
            self._observed_totals = (np.asarray(rewards, dtype=float).sum(axis=0),
                                     np.asarray(costs, dtype=float).sum(axis=0))

    def end_episode(self, states: np.ndarray, actions: np.ndarray) -> None:
        """Count the transitions and add the episode's totals (the model's means at the visited pairs; the
        observed signals with ``rewards="learned"``); step the multipliers."""
        m = self.model
        states, actions = np.asarray(states, dtype=np.int64), np.asarray(actions, dtype=np.int64)
        super().end_episode(states, actions)
        if self.signal_estimates is not None:
            if self._observed_totals is None:
                raise AgentError("moma with rewards=\"learned\" reads each episode's totals from its observed signals:"
                                 " call observe_signals(states, actions, rewards, costs) before end_episode (the"
                                 " episode loop does).")
            rewards, costs = self._observed_totals
            self._observed_totals = None
        else:
            steps = np.arange(self.horizon)
            rewards = m.step_rewards[steps, :, states, actions].sum(axis=0)
            costs = m.step_costs[steps, :, states, actions].sum(axis=0)
        self.reward_sum += rewards
        self.cost_sum += costs
        if m.constraints:
            self.multipliers = np.maximum(self.multipliers + self.step_size() * m.constraint_values(costs), 0.0)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "delta": self.delta, "bonus_scale": self.bonus_scale,
                "step_scale": self.step_scale}


class MomaProgram(ProgramEpisodicAgent):
    """MOMA's optimism in the per-episode setting: ``max f(λ^)`` s.t. ``g(ζ^) <= 0`` on ``P̂`` with rewards
    ``r + b`` and costs ``c − b``, ``b = min(H, H sqrt(2 L / max(1, N)))``, ``L = ln(2 S A H K / δ)`` (the bonus
    of :class:`Moma`, per unit of signal), solved every episode; infeasible: the fallback, labelled.

    Parameters
    ----------
    model, backend, seed, episodes, delta, bonus_scale, replan
        As for :class:`ConRl`.
    rewards : {"known", "learned"}, default "known"
        ``learned``: the running means ``r^``, ``c^`` of the observed signals (0 before any observation) with ``b``
        added and subtracted, ``N`` the visits of the cell (h, s, a), at every step (as for :class:`ConRl`).
    """

    name = "moma-program"

    def __init__(self, model: EpisodicCMDP, backend: Any = "auto", seed: Any = None, episodes: int | None = None,
                 delta: float = DELTA, bonus_scale: float = 1.0, replan: str = "every-episode",
                 rewards: str = "known", **backend_options: Any):
        self.delta = _check_probability(delta, "delta")
        self.bonus_scale = _check_scale(bonus_scale, "bonus_scale")
        super().__init__(model, backend, seed, episodes, replan, rewards, **backend_options)

    def _build_program(self) -> Any:
        return _occupancy_program(self.model)

    def log_term(self) -> float:
        """``L = ln(2 S A H K / δ)``."""
        m = self.model
        return math.log(2 * m.n_states * m.n_actions * self.horizon * self.planned_episodes / self.delta)

    def bonus(self) -> np.ndarray:
        """``b(s,a)``: (S, A) pooled, (H − 1, S, A) per step; with learned signals (H, S, A), on the visits of
        each cell (h, s, a)."""
        if self.signal_estimates is not None:
            return self.bonus_scale * moma_bonus(estimated_signals(self)[2], self.horizon, self.log_term())
        b = self.bonus_scale * moma_bonus(self.counts.visits, self.horizon, self.log_term())
        return b[0] if self.counts.pooled else b

    def planning_signals(self) -> tuple[np.ndarray, np.ndarray]:
        """The rewards (H, K, S, A) and costs (H, d, S, A) of the episode's program: ``r + b``, ``c − b``, on the
        model's signals or (learned) on the running means."""
        return _planning_signals(self, self.bonus())

    def _update_program(self, k: int) -> float:
        rewards, costs = self.planning_signals()
        self.program.update(kernels=self.kernel_estimate(), rewards=rewards, costs=costs, epsilon=0.0)
        return 0.0

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "delta": self.delta, "bonus_scale": self.bonus_scale}

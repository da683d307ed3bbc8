"""Triple-Q (Wei, Liu, Ying, AISTATS 2022): model-free, episodic, a virtual queue per frame of episodes.

Three "Q"s: a reward Q-table ``Q_h(s,a)``, a utility Q-table ``C_h(s,a)`` per constraint, both learned by SARSA-type
updates with UCB bonuses, and a virtual queue ``Z`` per constraint that over-estimates the constraint's cumulative
violation. Each step plays ``argmax_a Q_h(s,a) + Σ_m (Z_m/η) C_{m,h}(s,a)``. The paper's statement, its constants and
ours are in docs/math.md, "Triple-Q", and in :class:`TripleQ`.

The agent solves no program. Its per-step updates only touch the tables of the step they happen at, which no later
step of the same episode reads, and ``Z`` changes only between frames: so the policy of an episode is fixed when the
episode starts, and replaying the per-step updates in order at the episode's end gives exactly the tables the
per-step algorithm has. That is why the agent fits the episode loop's plan/learn cycle unchanged.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import AgentError
from ...models.episodic import EpisodicCMDP
from ..utility_form import utility_form
from .base import EpisodePlan, EpisodeSource, EpisodicAgent

__all__ = ["TripleQ", "triple_q_constants", "greedy_policy", "FRAME_RESETS", "INITIAL_VALUES"]

#: what a new frame does to the tables: the algorithm's reset to H, or the authors' practical variant
FRAME_RESETS = ("reset", "bonus")
#: the tables' initial (and reset) value at step h: the paper's H at every step, or the steps left, H − h + 1
INITIAL_VALUES = ("horizon", "remaining")


def triple_q_constants(S: int, A: int, H: int, K: int) -> dict[str, float]:
    """The paper's constants for K episodes: ``χ = K^0.2``, ``η = K^0.2``, ``ι = 128 ln(√(2SAH) K)``,
    ``ε = 8 √(S A H^6 ι^3) / K^0.2``, frames of ``K^0.6`` episodes (rounded down, at least 1)."""
    iota = 128.0 * math.log(math.sqrt(2.0 * S * A * H) * K)
    return {"chi": K ** 0.2, "eta": K ** 0.2, "iota": iota,
            "epsilon": 8.0 * math.sqrt(S * A * H ** 6 * iota ** 3) / K ** 0.2,
            "frame": float(max(1, math.floor(K ** 0.6)))}


def greedy_policy(values: np.ndarray) -> np.ndarray:
    """The policy uniform over the maximisers of ``values`` along the last axis (exact ties)."""
    best = values == values.max(axis=-1, keepdims=True)
    return best / best.sum(axis=-1, keepdims=True)


def _option(value: Any, name: str, positive: bool = True) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or (value <= 0 if positive else value < 0):
        raise AgentError(f"{name} must be a finite number {'> 0' if positive else '>= 0'} or None, got {value!r}.")
    return float(value)


class TripleQ(EpisodicAgent):
    """Triple-Q (Wei, Liu, Ying, "Triple-Q: A Model-Free Algorithm for Constrained Reinforcement Learning with
    Sublinear Regret and Zero Constraint Violation", AISTATS 2022).

    The model is read in the paper's form (:mod:`curlopt.agents.utility_form`): reward and utilities in [0, 1] per
    step, a constraint ``Σ_h g_{m,h} >= ρ_m`` per episode. With ``t`` the visits of ``(h, s, a)`` in the current frame,
    ``α_t = (χ+1)/(χ+t)`` and ``b_t = bonus · √(H² ι (χ+1)/(χ+t))``, step h of an episode updates

    * ``Q_h(s,a) ← (1−α_t) Q_h(s,a) + α_t (r_h(s,a) + V_{h+1}(s') + b_t)``,
    * ``C_{m,h}(s,a) ← (1−α_t) C_{m,h}(s,a) + α_t (g_{m,h}(s,a) + W_{m,h+1}(s') + b_t)``,
    * ``V_h(s) ← Q_h(s,a*)``, ``W_{m,h}(s) ← C_{m,h}(s,a*)`` with ``a*`` the first maximiser of
      ``Q_h(s,·) + Σ_m (Z_m/η) C_{m,h}(s,·)`` (``V_{H+1} = W_{H+1} = 0``),

    and the episode adds ``C_{m,1}(s_1, a_1)`` (its value when the episode started) to ``C̄_m``. After every frame of
    ``K^α`` episodes: ``Z_m ← (Z_m + ρ_m + ε − C̄_m / K^α)^+``, then ``C̄ ← 0``, the visits to 0 and
    ``Q = C = V = W = H``. The action of step h is drawn uniformly among the maximisers of the pseudo-Q value.

    Several constraints get one queue each (the paper states one).

    Parameters
    ----------
    model : EpisodicCMDP
        A linear objective and linear constraints (the paper's form); its kernel is never read.
    seed : optional
        The agent's own seed (it draws nothing itself: the loop draws the actions).
    episodes : int, optional
        K; the episode loop sets it to the run's length. The constants depend on it.
    frame_exponent : float, default 0.6
        α, frames of ``floor(K^α)`` episodes (the paper's 0.6).
    chi, eta, iota, epsilon : float, optional
        χ, η, ι and the pessimism ε; default the paper's (:func:`triple_q_constants`).
    bonus : float, default 0.25
        The bonus constant (the paper's 1/4).
    frame_reset : {"reset", "bonus"}, default "reset"
        ``reset``: the algorithm's reset of every table to H at each new frame. ``bonus``: the practical variant the
        authors describe (their AAAI 2022 follow-up, Algorithm 2, for this algorithm and its extension): keep the
        tables, add ``4H/η`` to the reward table, and reset to H only the cells where the reward or a utility table
        exceeds H; V and W are then recomputed from the tables under the new queue.
    initial_value : {"horizon", "remaining"}, default "horizon"
        The tables' value at the start and at every reset (and the cap of ``frame_reset="bonus"``): ``horizon``, the
        paper's H at every step; ``remaining``, ``H − h + 1`` at step h, the most any policy can still collect
        (ours). With H at every step an estimate ``C_1`` is about H until the later steps are learnt, so the
        queue update sees a utility near H whatever the policy does (docs/math.md, "Triple-Q").

    Raises
    ------
    AgentError
        For a non-linear objective or constraint, a model without constraints, or an option out of range.
    """

    name = "triple-q"

    def __init__(self, model: EpisodicCMDP, seed: Any = None, episodes: int | None = None,
                 frame_exponent: float = 0.6, chi: float | None = None, eta: float | None = None,
                 iota: float | None = None, epsilon: float | None = None, bonus: float = 0.25,
                 frame_reset: str = "reset", initial_value: str = "horizon"):
        if not isinstance(frame_reset, str) or frame_reset not in FRAME_RESETS:
            raise AgentError(f"frame_reset must be one of {', '.join(map(repr, FRAME_RESETS))}, got {frame_reset!r}.")
        self.frame_reset = frame_reset
        if not isinstance(initial_value, str) or initial_value not in INITIAL_VALUES:
            raise AgentError(f"initial_value must be one of {', '.join(map(repr, INITIAL_VALUES))},"
                             f" got {initial_value!r}.")
        self.initial_value = initial_value
        if isinstance(frame_exponent, bool) or not isinstance(frame_exponent, (int, float)) \
                or not 0 <= frame_exponent <= 1:
            raise AgentError(f"frame_exponent (α) must be a number in [0, 1], got {frame_exponent!r}.")
        self.frame_exponent = float(frame_exponent)
        self.given = {"chi": _option(chi, "chi (χ)"), "eta": _option(eta, "eta (η)"),
                      "iota": _option(iota, "iota (ι)"), "epsilon": _option(epsilon, "epsilon (ε)", positive=False)}
        bonus_value = _option(bonus, "bonus", positive=False)
        assert bonus_value is not None
        self.bonus = bonus_value
        if not isinstance(model, EpisodicCMDP):
            raise AgentError(f"{self.name} needs an episodic model (EpisodicCMDP), got {type(model).__name__}.")
        form = utility_form(model, np.asarray(model.step_rewards), np.asarray(model.step_costs), model.horizon,
                            self.name)
        #: the scaled reward (H, S, A) and utilities (M, H, S, A), and the thresholds ρ (M,)
        self.reward, self.utilities, self.thresholds = form.reward, form.utilities, form.thresholds
        H = model.horizon
        #: the value of the step-h tables at a reset, shape (H,): H, or the steps left H − h + 1
        self.top = np.full(H, float(H)) if initial_value == "horizon" else np.arange(H, 0, -1, dtype=float)
        super().__init__(model, seed, episodes)

    # -- constants ---------------------------------------------------------------------------------------------------
    def constants(self) -> dict[str, float]:
        """χ, η, ι, ε and the frame length for the agent's K (the paper's, unless given)."""
        S, A, H, K = self.model.n_states, self.model.n_actions, self.horizon, self.planned_episodes
        paper = triple_q_constants(S, A, H, K)
        chosen = {name: paper[name] if value is None else value for name, value in self.given.items()}
        chosen["frame"] = float(max(1, math.floor(K ** self.frame_exponent)))
        return chosen

    def reset(self, seed: Any = None, episodes: int | None = None) -> None:
        super().reset(seed, episodes)
        c = self.constants()
        self.chi, self.eta, self.iota, self.epsilon = c["chi"], c["eta"], c["iota"], c["epsilon"]
        self.frame = int(c["frame"])
        M = self.utilities.shape[0]
        self.queues = np.zeros(M)
        #: Z after each frame (the history, one row per frame ended)
        self.queue_history: list[np.ndarray] = []
        self._new_frame()

    def _new_frame(self) -> None:
        H, S, A = self.horizon, self.model.n_states, self.model.n_actions
        M = self.utilities.shape[0]
        top = self.top[:, None, None]
        self.q = np.broadcast_to(top, (H, S, A)).copy()
        self.c = np.broadcast_to(top, (M, H, S, A)).copy()
        self.v = np.zeros((H + 1, S))
        self.w = np.zeros((M, H + 1, S))
        self.v[:H] = self.top[:, None]
        self.w[:, :H] = self.top[:, None]
        self.frame_visits = np.zeros((H, S, A), dtype=np.int64)
        self.utility_sum = np.zeros(M)   # C̄

    def _carry_over(self) -> None:
        """The ``bonus`` frame change: ``Q += 4H/η``, cells above their reset value back to it (H, or H − h + 1 with
        ``initial_value="remaining"``), V and W from the tables, visits and ``C̄`` to 0."""
        H = float(self.horizon)
        self.q += 4.0 * H / self.eta
        top = np.broadcast_to(self.top[:, None, None], self.q.shape)
        above = (self.q > top) | np.any(self.c > top, axis=0)
        self.q[above] = top[above]
        self.c[:, above] = top[above]
        best = np.argmax(self.pseudo_q(), axis=2)[..., None]          # (H, S, 1): the first maximisers
        self.v[:-1] = np.take_along_axis(self.q, best, axis=2)[..., 0]
        self.w[:, :-1] = np.take_along_axis(self.c, best[None], axis=3)[..., 0]
        self.frame_visits[:] = 0
        self.utility_sum = np.zeros_like(self.utility_sum)

    def pseudo_q(self) -> np.ndarray:
        """``Q_h(s,a) + Σ_m (Z_m/η) C_{m,h}(s,a)``, shape (H, S, A)."""
        return self.q + np.einsum("m,mhsa->hsa", self.queues / self.eta, self.c)

    def _plan(self, k: int) -> EpisodePlan:
        policy = greedy_policy(self.pseudo_q())
        if self.policy is not None and np.array_equal(policy, self.policy):
            # the same object again: the episode loop evaluates a policy once per distinct object
            policy = self.policy
        return EpisodePlan(policy, EpisodeSource.RULE, message=f"Z={np.round(self.queues, 6).tolist()}")

    def end_episode(self, states: np.ndarray, actions: np.ndarray) -> None:
        super().end_episode(states, actions)
        H = self.horizon
        chi, weights = self.chi, self.queues / self.eta
        steps = np.arange(H)
        s, a = np.asarray(states, dtype=np.int64), np.asarray(actions, dtype=np.int64)
        self.utility_sum += self.c[:, 0, s[0], a[0]]
        # Step h reads V_{h+1}(s_{h+1}) before step h + 1 of this episode updates it (the per-step order), and the
        # steps touch distinct cells: all H updates at once are the per-step updates. V_{H+1} = W_{H+1} = 0.
        nxt = np.append(s[1:], 0)
        v_next, w_next = self.v[steps + 1, nxt], self.w[:, steps + 1, nxt]
        t = self.frame_visits[steps, s, a] + 1
        self.frame_visits[steps, s, a] = t
        alpha = (chi + 1.0) / (chi + t)
        b = self.bonus * np.sqrt(H * H * self.iota * (chi + 1.0) / (chi + t))
        self.q[steps, s, a] = (1 - alpha) * self.q[steps, s, a] + alpha * (self.reward[steps, s, a] + v_next + b)
        self.c[:, steps, s, a] = (1 - alpha) * self.c[:, steps, s, a] + alpha * (
            self.utilities[:, steps, s, a] + w_next + b)
        best = np.argmax(self.q[steps, s] + np.einsum("m,mha->ha", weights, self.c[:, steps, s]), axis=1)
        self.v[steps, s] = self.q[steps, s, best]
        self.w[:, steps, s] = self.c[:, steps, s, best]
        if self.episode % self.frame == 0:
            self.queues = np.maximum(self.queues + self.thresholds + self.epsilon - self.utility_sum / self.frame, 0.0)
            self.queue_history.append(self.queues.copy())
            if self.frame_reset == "reset":
                self._new_frame()
            else:
                self._carry_over()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "frame_exponent": self.frame_exponent, "frame": self.frame, "chi": self.chi,
                "eta": self.eta, "iota": self.iota, "epsilon": self.epsilon, "bonus": self.bonus,
                "frame_reset": self.frame_reset, "initial_value": self.initial_value}

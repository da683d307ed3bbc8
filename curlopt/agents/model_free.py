"""Triple-QA (Wei, Liu, Ying, AAAI 2022): model-free learning of an infinite-horizon average-reward CMDP.

The paper reduces the average-reward problem to a discounted one with ``γ = 1 − 1/H`` close to 1 (the reduction of
Wei et al. 2020's optimistic Q-learning) and runs Triple-Q's three "Q"s on it step by step: a reward Q-table, a
utility Q-table per constraint, both updated after every step by SARSA-type rules with UCB bonuses and kept
monotone (``Q̂``, ``Ĉ`` take a new value only when both decrease), and a virtual queue per constraint updated once
per frame of ``K^β`` steps. The statement, the paper's constants and ours are in :class:`TripleQA` and in
docs/math.md, "Triple-QA".

The policy changes at every step, so the agent steps the chain itself: the learning loop hands it the frame's
uniforms (and, on the fast path, the kernel's cumulative rows), and :meth:`TripleQA.play_steps` runs a tight loop
over Python lists. A frame is one epoch of the loop.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import Any, ClassVar

import numpy as np

from ..models.cmdp import CMDP
from .base import Agent, EpochPlan, PlanSource
from .baselines import _NO_RADIUS, _NOT_TAKEN, _horizon
from .options import HORIZON, SEED, AgentOption, check_value, number, refuse_keywords, with_doc
from .triggers import FixedLengthTrigger
from .utility_form import utility_form

__all__ = ["TripleQA", "triple_qa_constants"]


def triple_qa_constants(S: int, A: int, K: int, kappa: float) -> dict[str, float]:
    """The paper's constants for K steps (its Algorithm 1 and Theorem 1): ``H = K^{1/6}`` (``γ = 1 − 1/H``),
    ``χ = K^{1/3}``, ``η = K^{1/6}``, frames of ``K^{2/3}`` steps (rounded down, at least 1),
    ``ι = 8 ln(√2 K)`` and ``ε = 9 κ √(S A ι) / K^{1/6}``."""
    iota = 8.0 * math.log(math.sqrt(2.0) * K)
    return {"discount_horizon": K ** (1 / 6), "chi": K ** (1 / 3), "eta": K ** (1 / 6), "iota": iota,
            "epsilon": 9.0 * kappa * math.sqrt(S * A * iota) / K ** (1 / 6),
            "frame": float(max(1, math.floor(K ** (2 / 3))))}


def _optional(name: str, doc: str, label: str, low: float = 0.0) -> AgentOption:
    return number(name, doc + " None: the paper's value for the horizon T.", low=low, strict=low == 0.0, none=True,
                  label=label)


class TripleQA(Agent):
    """Triple-QA (Wei, Liu, Ying, "A Provably-Efficient Model-Free Algorithm for Infinite-Horizon Average-Reward
    Constrained Markov Decision Processes", AAAI 2022).

    The model is read in the paper's form (:mod:`curlopt.agents.utility_form`): reward and utilities in [0, 1], a
    constraint ``lim (1/T) Σ_t g_m(s_t, a_t) >= ρ_m`` per constraint. With ``τ`` the visits of ``(s, a)`` in the
    current frame, ``α_τ = (χ+1)/(χ+τ)`` and ``b_τ = κ √((χ+1) ι/(χ+τ))``, the step from ``s`` by ``a`` to ``s'``:

    1. ``Q(s,a) ← (1−α_τ) Q(s,a) + α_τ (r(s,a) + γ V̂(s') + b_τ)`` and, per constraint,
       ``C_m(s,a) ← (1−α_τ) C_m(s,a) + α_τ (g_m(s,a) + γ Ŵ_m(s') + b_τ)``;
    2. if ``Q(s,a) <= Q̂(s,a)`` and every ``C_m(s,a) <= Ĉ_m(s,a)``: ``Q̂(s,a) ← Q(s,a)``, ``Ĉ_m(s,a) ← C_m(s,a)``;
    3. ``C̄_m ← C̄_m + (1−γ) Ĉ_m(s,a)`` (the value before step 2);
    4. ``V̂(s) ← Q̂(s,a')``, ``Ŵ_m(s) ← Ĉ_m(s,a')`` with ``a'`` the first maximiser of
       ``Q̂(s,·) + Σ_m (Z_m/η) Ĉ_m(s,·)``.

    The action at ``s`` is drawn uniformly among the maximisers of that pseudo-Q value (the step's action uniform
    picks one). After every frame of ``K^β`` steps: ``Z_m ← (Z_m + ρ_m + ε − C̄_m/K^β)^+``, ``C̄ ← 0``, the visits to
    0 and ``Q = Q̂ = C = Ĉ = V̂ = Ŵ = H`` (the paper's reset). Several constraints get one queue each (the paper states
    one).

    Parameters
    ----------
    model : CMDP
        A linear objective and linear constraints; its kernel is never read.
    horizon : float
        T, the paper's K (number of steps), required: every constant depends on it.
    kappa : float, default 1
        κ >= 1, the paper's bound on the spans of the optimal bias functions, which it assumes known; 1 is the
        smallest value its definition allows (our default: the agent does not read the kernel to compute it).
    discount_horizon, chi, eta, iota, epsilon : float, optional
        H (``γ = 1 − 1/H``), χ, η, ι and the pessimism ε; default the paper's (:func:`triple_qa_constants`).
    frame_exponent : float, default 2/3
        β, frames of ``floor(T^β)`` steps.
    seed : optional
        The agent's own seed (it draws nothing itself: the loop's action uniforms pick among ties).

    Raises
    ------
    AgentError
        For a non-linear objective or constraint, a model without constraints, an option out of range, or an
        option of the program-solving agents.
    """

    name = "triple-qa"
    needs_horizon = True
    #: the loop hands it the steps of a frame (:meth:`play_steps`) instead of stepping a fixed policy
    learns_per_step: ClassVar[bool] = True
    OPTIONS: ClassVar[tuple[AgentOption, ...]] = (
        HORIZON,
        number("kappa", "κ >= 1, the bound on the spans of the optimal bias functions the paper assumes known.",
               low=1.0, label="kappa (κ)"),
        _optional("discount_horizon", "H >= 1 of the discount γ = 1 − 1/H.", "discount_horizon (H)", low=1.0),
        _optional("chi", "χ > 0 of the learning rate (χ+1)/(χ+τ).", "chi (χ)"),
        _optional("eta", "η > 0, the scale of the virtual queue in the pseudo-Q value.", "eta (η)"),
        _optional("iota", "ι > 0 of the bonus κ √((χ+1) ι/(χ+τ)).", "iota (ι)"),
        number("epsilon", "The pessimism ε >= 0 added to each threshold in the queue update. None: the paper's.",
               none=True, label="epsilon (ε)"),
        number("frame_exponent", "β in (0, 1]: frames of floor(T^β) steps.", strict=True, high=1.0,
               label="frame_exponent (β)"),
        with_doc(SEED, "The agent's own seed (triple-qa draws nothing itself)."),
    )
    REFUSED: ClassVar[dict[str, str]] = {
        **_NOT_TAKEN, **_NO_RADIUS, "backend": "it solves no optimisation program (no --backend)",
        "unreached": "it extracts no policy from an occupancy (its policy is greedy in its Q-tables)",
    }

    def __init__(self, model: CMDP, horizon: float | None = None, kappa: float = 1.0,
                 discount_horizon: float | None = None, chi: float | None = None, eta: float | None = None,
                 iota: float | None = None, epsilon: float | None = None, frame_exponent: float = 2 / 3,
                 seed: Any = None, **options: Any):
        declared = self.declared_options()
        refuse_keywords(self.name, options, self.REFUSED, declared=list(declared))
        self.horizon = _horizon(horizon, self.name)
        self.kappa: float = check_value(declared["kappa"], kappa)
        self.frame_exponent: float = check_value(declared["frame_exponent"], frame_exponent)
        given = {name: check_value(declared[name], value) for name, value in (
            ("discount_horizon", discount_horizon), ("chi", chi), ("eta", eta), ("iota", iota),
            ("epsilon", epsilon))}
        form = utility_form(model, np.asarray(model.rewards), np.asarray(model.costs), 1, self.name)
        K = max(1, int(self.horizon))
        paper = triple_qa_constants(model.n_states, model.n_actions, K, self.kappa)
        chosen = {name: paper[name] if value is None else float(value) for name, value in given.items()}
        self.discount_horizon = chosen["discount_horizon"]
        self.gamma = 1.0 - 1.0 / self.discount_horizon
        self.chi, self.eta, self.iota, self.epsilon = chosen["chi"], chosen["eta"], chosen["iota"], chosen["epsilon"]
        self.frame = max(1, math.floor(K ** self.frame_exponent))
        S, A = model.n_states, model.n_actions
        #: the scaled reward (S·A,) and utilities (M, S·A) as lists for the step loop, and the thresholds ρ (M,)
        self._reward = form.reward.reshape(S * A).tolist()
        self._utilities = [u.reshape(S * A).tolist() for u in form.utilities]
        self.thresholds = form.thresholds
        longest = self.frame + 1
        chi_, iota_, kappa_ = self.chi, self.iota, self.kappa
        #: α_τ and b_τ for τ = 0 .. frame (index τ), computed once
        self._alpha = [(chi_ + 1.0) / (chi_ + t) for t in range(longest)]
        self._bonus = [kappa_ * math.sqrt((chi_ + 1.0) * iota_ / (chi_ + t)) for t in range(longest)]
        # its counts are never read: kept on the model's declared transitions, the cheapest support
        super().__init__(model, FixedLengthTrigger(self.frame), seed, support="auto")

    # -- state --------------------------------------------------------------------------------------------------------
    def reset(self, seed: Any = None) -> None:
        super().reset(seed)
        self.queues = [0.0] * len(self.model.constraints)
        #: Z after each frame, one entry per frame ended
        self.queue_history: list[list[float]] = []
        self.steps_played = 0
        #: the realised average costs ζ of each epoch (frame) played, in the model's units
        self.frame_costs: list[np.ndarray] = []
        self._new_frame()

    def _new_frame(self) -> None:
        S, A, M = self.model.n_states, self.model.n_actions, len(self.model.constraints)
        H = self.discount_horizon
        self.q, self.q_hat = [H] * (S * A), [H] * (S * A)
        self.c = [[H] * (S * A) for _ in range(M)]
        self.c_hat = [[H] * (S * A) for _ in range(M)]
        self.v_hat, self.w_hat = [H] * S, [[H] * S for _ in range(M)]
        self.frame_visits = [0] * (S * A)
        self.utility_sums = [0.0] * M
        self._weights = [z / self.eta for z in self.queues]
        # every pseudo-Q value equal after the reset: every action is a maximiser
        self._greedy = [tuple(range(A))] * S

    def _maximisers(self, s: int) -> tuple[int, ...]:
        A, base = self.model.n_actions, s * self.model.n_actions
        values = [self.q_hat[base + a] + sum(w * c[base + a] for w, c in zip(self._weights, self.c_hat, strict=True))
                  for a in range(A)]
        top = max(values)
        return tuple(a for a in range(A) if values[a] == top)

    def pseudo_q(self) -> np.ndarray:
        """``Q̂(s,a) + Σ_m (Z_m/η) Ĉ_m(s,a)``, shape (S, A)."""
        S, A = self.model.n_states, self.model.n_actions
        values = np.asarray(self.q_hat) + sum((w * np.asarray(c) for w, c in zip(self._weights, self.c_hat,
                                                                                   strict=True)), np.zeros(S * A))
        return values.reshape(S, A)

    def current_policy(self) -> np.ndarray:
        """The policy the next step plays: uniform over the maximisers of the pseudo-Q value, shape (S, A)."""
        S, A = self.model.n_states, self.model.n_actions
        policy = np.zeros((S, A))
        for s, best in enumerate(self._greedy):
            policy[s, list(best)] = 1.0 / len(best)
        return policy

    # -- the loop's interface -----------------------------------------------------------------------------------------
    def _plan(self, time: int) -> EpochPlan:
        return EpochPlan(self.current_policy(), PlanSource.RULE, epsilon=None,
                         message=f"frame of {self.frame} steps; Z={[round(z, 6) for z in self.queues]}; the policy"
                                 " changes at every step (the record's is the frame's first)")

    def act(self, s: int, u: float) -> int:
        """The action at ``s`` with the step's action uniform ``u`` (picks among tied maximisers)."""
        best = self._greedy[s]
        return best[0] if len(best) == 1 else best[int(u * len(best))]

    def observe(self, s: int, a: int, nxt: int) -> None:
        """Learn from one step (the update of the class docstring)."""
        A = self.model.n_actions
        sa = s * A + a
        tau = self.frame_visits[sa] + 1
        self.frame_visits[sa] = tau
        alpha, b, gamma = self._alpha[tau], self._bonus[tau], self.gamma
        q = (1 - alpha) * self.q[sa] + alpha * (self._reward[sa] + gamma * self.v_hat[nxt] + b)
        self.q[sa] = q
        lower = q <= self.q_hat[sa]
        for m, (c, c_hat, u, w_hat) in enumerate(zip(self.c, self.c_hat, self._utilities, self.w_hat, strict=True)):
            value = (1 - alpha) * c[sa] + alpha * (u[sa] + gamma * w_hat[nxt] + b)
            c[sa] = value
            lower = lower and value <= c_hat[sa]
            self.utility_sums[m] += (1 - gamma) * c_hat[sa]
        if lower:
            self.q_hat[sa] = q
            for c, c_hat in zip(self.c, self.c_hat, strict=True):
                c_hat[sa] = c[sa]
            self._refresh(s)
        self._count_step()

    def _refresh(self, s: int) -> None:
        best = self._maximisers(s)
        self._greedy[s] = best
        sa = s * self.model.n_actions + best[0]
        self.v_hat[s] = self.q_hat[sa]
        for c_hat, w_hat in zip(self.c_hat, self.w_hat, strict=True):
            w_hat[s] = c_hat[sa]

    def _count_step(self) -> None:
        self.steps_played += 1
        if self.steps_played % self.frame == 0:
            self._end_frame()

    def _end_frame(self) -> None:
        self.queues = [max(z + rho + self.epsilon - total / self.frame, 0.0)
                       for z, rho, total in zip(self.queues, self.thresholds.tolist(), self.utility_sums, strict=True)]
        self.queue_history.append(list(self.queues))
        self._new_frame()

    def play_steps(self, state: int, action_uniforms: list[float], transition_uniforms: list[float],
                   kernel_rows: list[list[float]], successors: list[list[int]] | None) -> tuple[list[int], int]:
        """Play and learn one step per pair of uniforms from ``state``; return the visited pairs and the last state.

        The fast path's loop: the same arithmetic as :meth:`act` then :meth:`observe` per step (the generic path
        calls those), on Python lists, with the next state ``bisect_right(kernel_rows[s·A + a], u)`` (through
        ``successors`` for a sparse kernel).
        """
        A = self.model.n_actions
        pairs: list[int] = []
        add = pairs.append
        greedy, q, q_hat, v_hat, visits = self._greedy, self.q, self.q_hat, self.v_hat, self.frame_visits
        rewards, alphas, bonuses, gamma = self._reward, self._alpha, self._bonus, self.gamma
        constraints = list(zip(self.c, self.c_hat, self._utilities, self.w_hat, strict=True))
        sums = self.utility_sums
        one_minus_gamma = 1 - gamma
        s = state
        left = self.frame - self.steps_played % self.frame
        for ua, us in zip(action_uniforms, transition_uniforms, strict=True):
            best = greedy[s]
            sa = s * A + (best[0] if len(best) == 1 else best[int(ua * len(best))])
            nxt = bisect_right(kernel_rows[sa], us) if successors is None else \
                successors[sa][bisect_right(kernel_rows[sa], us)]
            tau = visits[sa] + 1
            visits[sa] = tau
            alpha, b = alphas[tau], bonuses[tau]
            value = (1 - alpha) * q[sa] + alpha * (rewards[sa] + gamma * v_hat[nxt] + b)
            q[sa] = value
            lower = value <= q_hat[sa]
            m = 0
            for c, c_hat, u, w_hat in constraints:
                value = (1 - alpha) * c[sa] + alpha * (u[sa] + gamma * w_hat[nxt] + b)
                c[sa] = value
                lower = lower and value <= c_hat[sa]
                sums[m] += one_minus_gamma * c_hat[sa]
                m += 1
            if lower:
                q_hat[sa] = q[sa]
                for c, c_hat, _, _ in constraints:
                    c_hat[sa] = c[sa]
                self._refresh(s)
            add(sa)
            s = nxt
            left -= 1
            if left == 0:
                self._end_frame()
                # the loop's epochs are the frames, so a frame ends only at an epoch's last step
                greedy, q, q_hat, v_hat, visits = self._greedy, self.q, self.q_hat, self.v_hat, self.frame_visits
                constraints = list(zip(self.c, self.c_hat, self._utilities, self.w_hat, strict=True))
                sums = self.utility_sums
                left = self.frame
        self.steps_played += len(pairs)
        return pairs, s

    def end_epoch(self, transitions: Any, reward_sum: np.ndarray, cost_sum: np.ndarray, steps: int) -> None:
        super().end_epoch(transitions, reward_sum, cost_sum, steps)
        if steps > 0:
            self.frame_costs.append(np.asarray(cost_sum, dtype=float) / steps)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "horizon": self.horizon, "kappa": self.kappa,
                "discount_horizon": self.discount_horizon, "chi": self.chi, "eta": self.eta, "iota": self.iota,
                "epsilon": self.epsilon, "frame": self.frame}
